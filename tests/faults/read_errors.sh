#!/usr/bin/env bash
# Inputs that end early: a named pipe whose writer stops in the middle of a line, a gzip stream
# cut short (from a file, a pipe and standard input), a sketch file cut short (from a file and
# standard input), an edge list and a query file through a pipe ending in half a line, an
# experiment config cut short and a data set whose file ends in half a row. Each must give exit
# status 1, a message naming the input (and the row, where the cut leaves a short one), nothing
# on standard output, and no output file (an earlier one byte-identical).
# usage: read_errors.sh PRIVRACE PRIVRACE_EXPERIMENT
source "$(dirname "$0")/common.sh"
P="$1"
E="$2"

gen 20000 3 12345 > d.csv
gzip -c d.csv > d.csv.gz
head -c $(( $(stat -c %s d.csv.gz) / 2 )) d.csv.gz > cut.csv.gz
sk() { "$P" sketch -q -t 2 --rows 50 --width 100 --bandwidth 1 --epsilon 1 --seed 5 "$@"; }
sk --input d.csv -o good.rsk

# expect_failure NAME LOG TEXT...: status 1 (in $rc) and every TEXT in the message
expect_failure() {
  local name="$1" log="$2" t; shift 2
  check "$name: exit status 1 (got $rc)" [ "$rc" -eq 1 ]
  for t in "$@"; do check "$name: message names '$t'" contains "$log" "$t"; done
  [ "$rc" -eq 1 ] || cat "$log"
}
# feed FIFO COMMAND...: a writer that sends COMMAND's output into the named pipe and closes it
feed() { local f="$1"; shift; rm -f "$f"; mkfifo "$f"; ( "$@" > "$f" ) & }

echo "== a table through a pipe, cut in the middle of a row"
cut_at=5000   # inside row 239 of d.csv, leaving it one field
row=$(( $(head -c "$cut_at" d.csv | wc -l) + 1 ))
cp good.rsk out.rsk
feed pipe.csv head -c "$cut_at" d.csv
rc=0; sk --input pipe.csv -o out.rsk 2> err || rc=$?
wait
expect_failure "cut pipe" err "pipe.csv:$row:" "expected 3"
check "cut pipe: earlier out.rsk byte-identical" same out.rsk good.rsk
check "cut pipe: no temporary" no_temps .
head -c "$cut_at" d.csv > cut.csv
rc=0; sk --input - -o new.rsk < cut.csv 2> err || rc=$?
expect_failure "cut standard input" err "<stdin>:$row:"
check "cut standard input: no file" absent new.rsk

echo "== a gzip stream cut short"
rc=0; sk --input cut.csv.gz -o new.rsk 2> err || rc=$?
expect_failure "cut gzip file" err "cut.csv.gz" "unexpected end of file"
feed pipe.gz cat cut.csv.gz
rc=0; sk --input pipe.gz -o new.rsk 2> err || rc=$?
wait
expect_failure "cut gzip pipe" err "pipe.gz" "unexpected end of file"
rc=0; sk --input - -o new.rsk < cut.csv.gz 2> err || rc=$?
expect_failure "cut gzip standard input" err "<stdin>" "unexpected end of file"
check "cut gzip: no file" absent new.rsk

echo "== a sketch file cut short"
head -c $(( $(stat -c %s good.rsk) - 100 )) good.rsk > cut.rsk
rc=0; "$P" info cut.rsk > out.txt 2> err || rc=$?
expect_failure "cut sketch file" err "cut.rsk" "truncated"
check "cut sketch file: nothing on standard output" [ ! -s out.txt ]
rc=0; "$P" info - < cut.rsk > out.txt 2> err || rc=$?
expect_failure "cut sketch on standard input" err "truncated"
check "cut sketch on standard input: nothing on standard output" [ ! -s out.txt ]
cp good.rsk merged.rsk && cp merged.rsk merged.before
rc=0; "$P" merge good.rsk - -o merged.rsk < cut.rsk 2> err || rc=$?
expect_failure "merge of a cut sketch" err "truncated"
check "merge of a cut sketch: earlier output byte-identical" same merged.rsk merged.before
rc=0; "$P" query cut.rsk --queries d.csv > out.txt 2> err || rc=$?
expect_failure "query of a cut sketch" err "cut.rsk" "truncated"
check "query of a cut sketch: nothing on standard output" [ ! -s out.txt ]

echo "== queries and an edge list through a pipe, ending in half a line"
feed q.pipe sh -c 'head -n 10 d.csv; printf "0.5,0.25"'
rc=0; "$P" query good.rsk --queries q.pipe > out.txt 2> err || rc=$?
wait
expect_failure "cut query pipe" err "q.pipe:11:"
check "cut query pipe: nothing on standard output" [ ! -s out.txt ]
feed edges.pipe printf '1 2\n2 3\n3 1\n4'
rc=0; "$P" sketch -q --input edges.pipe --format edgelist --kernel jaccard --rows 8 --width 16 --epsilon 1 --seed 1 \
  -o graph.rsk 2> err || rc=$?
wait
expect_failure "cut edge-list pipe" err "edges.pipe:4:"
check "cut edge-list pipe: no file" absent graph.rsk

echo "== an experiment config cut short, a data file ending in half a row"
make_repo repo
kde_config "20" "1" 1 > cfg.json
feed cfg.pipe head -c 100 cfg.json
rc=0; "$E" cfg.pipe --repo repo --out out > /dev/null 2> err || rc=$?
wait
expect_failure "cut config" err "cfg.pipe"
check "cut config: no results" absent out/t_kde.jsonl
mkdir -p repo/datasets/tiny
gen 3000 2 99 > full.csv
head -c $(( 2222 * 18 + 8 )) full.csv > repo/datasets/tiny/tiny.csv   # 18 bytes a row: row 2223 keeps one field
rc=0; "$E" cfg.json --repo repo --out out > /dev/null 2> err || rc=$?
expect_failure "data file cut in a row" err "tiny.csv:2223:" "expected 2"
check "data file cut in a row: no results" absent out/t_kde.jsonl
finish

#!/usr/bin/env bash
# Commands whose memory grows with their parameters must refuse, before allocating, what the
# machine cannot hold, with the estimate in the message: an R x W sketch, M2M's m x m system
# (m = R x W for a RACE sketch), the Bernstein grid of LDP ERM ((k+1)^p points) and PrivBayes'
# bins^(degree+1) marginals. Every command runs under an address-space limit (ulimit -v), so one
# that tried to allocate would fail with an allocation error instead of the refusal checked here
# (and could not take the machine's memory).
# usage: memory.sh PRIVRACE PRIVRACE_EXPERIMENT
source "$(dirname "$0")/common.sh"
P="$1"
E="$2"
vlimit=$(( 6 * 1024 * 1024 ))   # KiB: 6 GiB of address space (the experiment maps libtorch)

# expect_refusal NAME LOG TEXT...: status 1 (in $rc), every TEXT in the message, no bad_alloc
expect_refusal() {
  local name="$1" log="$2" t; shift 2
  check "$name: exit status 1 (got $rc)" [ "$rc" -eq 1 ]
  for t in "$@"; do check "$name: message has '$t'" contains "$log" "$t"; done
  check "$name: refused, not an allocation failure" eval "! grep -q 'bad_alloc' '$log'"
  [ "$rc" -eq 1 ] || cat "$log"
}

gen 2000 3 12345 > d.csv
rc=0; (ulimit -v "$vlimit"; "$P" sketch -q --input d.csv --rows 1000000 --width 4294967296 --bandwidth 1 --epsilon 1 \
  -o huge.rsk) 2> err || rc=$?
expect_refusal "R x W sketch" err "1000000 x 4294967296" "MiB" "memory"
check "R x W sketch: no file" absent huge.rsk

# A KDE-sized RACE sketch is a valid M2M input whose m x m system is terabytes.
"$P" sketch -q --input d.csv --rows 200 --width 2000 --bandwidth 1 --epsilon 1 --seed 1 -o wide.rsk
rc=0; (ulimit -v "$vlimit"; "$P" m2m wide.rsk --task mean --domain 0:1) > out.txt 2> err || rc=$?
expect_refusal "m2m m x m" err "m = 400000" "MiB" "refused before allocating"
check "m2m m x m: nothing on standard output" [ ! -s out.txt ]

# Experiments: a labelled stand-in data set for LDP ERM, the unlabelled one for KDE.
mkdir -p repo/datasets
cat > repo/datasets/registry.json <<'JSON'
{"schema": 1, "datasets": {
 "tiny": {"kind": "table", "source_url": "test", "format": "csv", "rows": 2000, "columns": 2,
  "files": [{"path": "tiny/tiny.csv", "sha256": null, "sha256_note": "test"}], "features": [1, 2], "label": null,
  "bounds": [[0, 1], [0, 1]], "preprocessing": {"scale": "none"}},
 "lab": {"kind": "table", "source_url": "test", "format": "csv", "rows": 2000, "columns": 3,
  "files": [{"path": "lab/lab.csv", "sha256": null, "sha256_note": "test"}], "features": [1, 2], "label": 3,
  "bounds": [[0, 1], [0, 1]], "preprocessing": {"scale": "none"}}}}
JSON
cat > ldp.json <<'JSON'
{"name": "t_ldp", "task": {"type": "ldp_erm", "loss": "squared", "lo": -2, "hi": 2}, "dataset": {"name": "lab"},
 "metric": "excess_risk", "selection": "all",
 "methods": [{"name": "ldp_bernstein", "label": "B", "grid": {"players": [1000], "p": [8], "k": [100]}}],
 "epsilons": [1], "repetitions": 1, "seed": 1, "threads": 1}
JSON
rc=0; (ulimit -v "$vlimit"; "$E" ldp.json --repo repo --out out) > /dev/null 2> err || rc=$?
expect_refusal "Bernstein grid" err "101^8" "GiB" "lower k or p"
check "Bernstein grid: no records" absent out/t_ldp.jsonl

# PrivBayes refuses the cell (recorded as refused; the sweep goes on).
cat > pb.json <<'JSON'
{"name": "t_pb", "task": {"type": "kde", "kernel": "l2", "bandwidth": 0.3, "queries": 50}, "dataset": {"name": "tiny"},
 "metric": "mre", "methods": [{"name": "privbayes", "label": "PB", "fixed": {"bins": 5000, "degree": 1}}],
 "epsilons": [1], "repetitions": 1, "seed": 3, "threads": 1}
JSON
rc=0; (ulimit -v "$vlimit"; "$E" pb.json --repo repo --out out) > /dev/null 2> err || rc=$?
check "PrivBayes marginals: the sweep finishes (got $rc)" [ "$rc" -eq 0 ]
check "PrivBayes marginals: the cell is recorded as refused with its cell count" \
  contains out/t_pb.jsonl '"refused":"privbayes: bins^(k+1) = 25000000'
finish

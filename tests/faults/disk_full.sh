#!/usr/bin/env bash
# Writes that fail because the machine runs out of room: the file-size limit (ulimit -f: the
# write fails with EFBIG, SIGXFSZ being ignored) and a full file system (a small tmpfs; that
# part is skipped with a message where mount is not permitted). For a sketch, a merge, an
# experiment's records and its derived tables (the plots' inputs), and standard output, each
# failure must give exit status 1 and a message naming the file and the cause, leave no partial
# file and no temporary, and leave an earlier output under the same name byte-identical.
# usage: disk_full.sh PRIVRACE PRIVRACE_EXPERIMENT
source "$(dirname "$0")/common.sh"
P="$1"
E="$2"

gen 20000 3 12345 > d.csv
head -n 10000 d.csv > a.csv
tail -n 10000 d.csv > b.csv
sk() { "$P" sketch -q -t 2 --rows 200 --width 1000 --bandwidth 1 --epsilon 1 "$@"; }
sk --input d.csv --seed 5 -o good.rsk
sk --input a.csv --seed 5 --hash-seed 55 -o a.rsk   # two owners' halves: one hash seed, their own noise
sk --input b.csv --seed 6 --hash-seed 55 -o b.rsk
"$P" merge a.rsk b.rsk -o good_merge.rsk 2>/dev/null
make_repo repo
kde_config "20, 50" "0.1, 10" 2 > cfg.json
kde_config "20, 50, 100" "0.1, 10" 2 > cfg_more.json
"$E" cfg.json --repo repo --out ref >/dev/null 2>&1            # the finished smaller sweep
"$E" cfg_more.json --repo repo --out ref_more >/dev/null 2>&1  # the larger one, never interrupted
size_kib() { echo $(( ($(stat -c %s "$1") + 1023) / 1024 )); }

# expect_failure NAME TARGET CAUSE LOG: status 1 (in $rc), message naming TARGET and CAUSE
expect_failure() {
  check "$1: exit status 1 (got $rc)" [ "$rc" -eq 1 ]
  check "$1: message names '$2' and '$3'" contains_both "$4" "$2" "$3"
  [ "$rc" -eq 1 ] || cat "$4"
}

echo "== file-size limit (ulimit -f)"
limit=$(( $(size_kib good.rsk) / 2 ))
cp good.rsk t.rsk
rc=0; (ulimit -f "$limit"; sk --input d.csv --seed 6 -o t.rsk) 2> err || rc=$?
expect_failure "sketch over the limit" "t.rsk" "File too large" err
check "sketch over the limit: earlier t.rsk byte-identical" same t.rsk good.rsk
check "sketch over the limit: no temporary" no_temps .
rc=0; (ulimit -f "$limit"; sk --input d.csv --seed 6 -o new.rsk) 2> err || rc=$?
expect_failure "new sketch over the limit" "new.rsk" "File too large" err
check "new sketch over the limit: no file" absent new.rsk

cp good_merge.rsk m.rsk
rc=0; (ulimit -f "$limit"; "$P" merge a.rsk b.rsk -o m.rsk) 2> err || rc=$?
expect_failure "merge over the limit" "m.rsk" "File too large" err
check "merge over the limit: earlier m.rsk byte-identical" same m.rsk good_merge.rsk
check "merge over the limit: no temporary" no_temps .

# Records: the larger sweep appends to the smaller one's jsonl until the limit stops it.
cp -r ref out
jsonl_limit=$(( $(size_kib out/t_kde.jsonl) + 2 ))
rc=0; (ulimit -f "$jsonl_limit"; "$E" cfg_more.json --repo repo --out out) > /dev/null 2> err || rc=$?
expect_failure "records over the limit" "out/t_kde.jsonl" "File too large" err
check "records over the limit: every line a complete record" jsonl_complete out/t_kde.jsonl
check "records over the limit: earlier records kept as they were" prefix_of ref/t_kde.jsonl out/t_kde.jsonl
for f in t_kde.csv t_kde.summary.json t_kde.timing.csv; do
  check "records over the limit: $f byte-identical" same out/$f ref/$f
done
check "records over the limit: no temporary" no_temps out

# Derived tables: a rerun with nothing left to run still rewrites them from the records.
rm -rf out && cp -r ref out
rc=0; (ulimit -f 1; "$E" cfg.json --repo repo --out out) > /dev/null 2> err || rc=$?
expect_failure "tables over the limit" "out/t_kde.csv" "File too large" err
for f in t_kde.jsonl t_kde.csv t_kde.summary.json t_kde.timing.csv; do
  check "tables over the limit: $f byte-identical" same out/$f ref/$f
done
check "tables over the limit: no temporary" no_temps out

# After the limit is lifted the interrupted sweep resumes to the records of an unbroken run.
rm -rf out && cp -r ref out
(ulimit -f "$jsonl_limit"; "$E" cfg_more.json --repo repo --out out) > /dev/null 2>&1 || true
"$E" cfg_more.json --repo repo --out out > /dev/null 2>&1
check "resumed after the limit: same records as an unbroken run" same_records out/t_kde.jsonl ref_more/t_kde.jsonl

# 4 KiB: the counts (800 KB) overflow standard output; the header and the warning on stderr fit.
rc=0; (ulimit -f 4; "$P" info good.rsk --counts > counts.csv) 2> err || rc=$?
expect_failure "standard output over the limit" "standard output" "" err

echo "== full file system (tmpfs)"
mkdir mnt
if ! mount -t tmpfs -o size=1m tmpfs mnt 2> mount.err; then
  echo "SKIP: full file system part: cannot mount a tmpfs here ($(cat mount.err))"
  finish
  exit 0
fi
cleanup_hooks+=("umount '$work/mnt'")
cp good.rsk mnt/t.rsk
cp good_merge.rsk mnt/m.rsk
cp -r ref mnt/out
# Fill what is left: the writes below find no free block.
dd if=/dev/zero of=mnt/filler bs=4k 2> /dev/null || true
rc=0; sk --input d.csv --seed 6 -o mnt/t.rsk 2> err || rc=$?
expect_failure "sketch on a full disk" "mnt/t.rsk" "No space left on device" err
check "sketch on a full disk: earlier t.rsk byte-identical" same mnt/t.rsk good.rsk
rc=0; sk --input d.csv --seed 6 -o mnt/new.rsk 2> err || rc=$?
expect_failure "new sketch on a full disk" "mnt/new.rsk" "No space left on device" err
check "new sketch on a full disk: no file" absent mnt/new.rsk
rc=0; "$P" merge a.rsk b.rsk -o mnt/m.rsk 2> err || rc=$?
expect_failure "merge on a full disk" "mnt/m.rsk" "No space left on device" err
check "merge on a full disk: earlier m.rsk byte-identical" same mnt/m.rsk good_merge.rsk
rc=0; "$E" cfg_more.json --repo repo --out mnt/out > /dev/null 2> err || rc=$?
expect_failure "records on a full disk" "mnt/out/t_kde.jsonl" "No space left on device" err
rc=0; "$E" cfg.json --repo repo --out mnt/out > /dev/null 2> err || rc=$?
expect_failure "tables on a full disk" "mnt/out/t_kde.csv" "No space left on device" err
# The file system is full, but tmpfs keeps a file's last page whole: a record that fits in
# t_kde.jsonl's unused tail is written (complete), the next one is refused. So the records are
# checked as over the size limit: the earlier ones as they were, every line complete.
check "full disk: every line a complete record" jsonl_complete mnt/out/t_kde.jsonl
check "full disk: earlier records kept as they were" prefix_of ref/t_kde.jsonl mnt/out/t_kde.jsonl
for f in t_kde.csv t_kde.summary.json t_kde.timing.csv; do
  check "full disk: $f byte-identical" same mnt/out/$f ref/$f
done
rc=0; "$P" info good.rsk --counts > mnt/counts.csv 2> err || rc=$?
expect_failure "standard output on a full disk" "standard output" "" err
check "full disk: no temporary" no_temps mnt
rm mnt/filler mnt/counts.csv
sk --input d.csv --seed 6 -o mnt/t.rsk
"$E" cfg_more.json --repo repo --out mnt/out > /dev/null 2>&1
check "room again: sketch readable" readable mnt/t.rsk
check "room again: sweep resumes to the records of an unbroken run" same_records mnt/out/t_kde.jsonl ref_more/t_kde.jsonl
check "room again: no temporary" no_temps mnt
finish

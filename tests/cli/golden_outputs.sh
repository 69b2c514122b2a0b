#!/usr/bin/env bash
# Pins the seeded outputs of the `privrace` command: for each case, the SHA-256 of the sketch
# header (without the software commit), of its counts, and of the query / m2m answers must equal
# tests/cli/golden_outputs.sha256, recorded from the binary before the library was split into
# layers. A change of a seeded output is then a deliberate, reviewed update (--update).
# usage: golden_outputs.sh PRIVRACE_BINARY [--update]
set -euo pipefail
bin="$1"
expected="$(cd "$(dirname "$0")" && pwd)/golden_outputs.sha256"
work=$(mktemp -d)
[[ -n "${GOLDEN_KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT
cd "$work"

# Inputs from a Park-Miller generator in awk (exact in doubles: every awk gives the same digits).
gen() {  # gen ROWS COLS SEED KIND(normal|uniform)
  awk -v n="$1" -v d="$2" -v x="$3" -v kind="$4" 'function u() { x = (16807 * x) % 2147483647; return x / 2147483647 }
    BEGIN { for (i = 0; i < n; i++) { line = ""; for (j = 0; j < d; j++) {
      v = (kind == "normal") ? (u() + u() + u() + u() - 2) * 1.7 : u();
      line = line (j ? "," : "") sprintf("%.6f", v) } print line } }'
}
gen_sets() {  # gen_sets LINES SEED
  awk -v n="$1" -v x="$2" 'function u() { x = (16807 * x) % 2147483647; return x / 2147483647 }
    BEGIN { for (i = 0; i < n; i++) { k = 1 + int(u() * 15); line = ""; delete seen
      for (j = 0; j < k; j++) { id = int(u() * 300); if (!(id in seen)) { seen[id] = 1; line = line (line == "" ? "" : " ") id } }
      print line } }'
}
gen 3000 3 12345 normal > normal.csv
gen 60 3 777 normal > normal_q.csv
gen 3000 3 4242 uniform > uniform.csv
gen_sets 800 99 > sets.txt
gen_sets 40 5 > sets_q.txt
awk -v x=31 'function u() { x = (16807 * x) % 2147483647; return x / 2147483647 }
  BEGIN { for (i = 0; i < 4000; i++) print int(u() * 400), int(u() * 400) }' > edges.txt
printf '0 <= 0.5; 1 >= 0.25; 2 <= 0.75\n1 <= 0.3; 0 >= 0.1; 2 >= 0.2\n' > counting.txt

results=()
record() {  # record NAME FILE...: digest of the named outputs
  local name="$1"; shift
  results+=("$(cat "$@" | sha256sum | cut -d' ' -f1)  $name")
}
sketch() {  # sketch NAME ARGS...: a seeded sketch, its header without the commit, and its counts
  local name="$1"; shift
  "$bin" sketch -t 2 -q --seed 7 -o "$name.rsk" "$@"
  "$bin" info "$name.rsk" 2>/dev/null | grep -v '"commit"' > "$name.header"
  # `info --counts` prints the counts alone (the header on stderr): the header then the counts, as
  # the digests were recorded when both went to stdout, so that they stay byte-identical.
  { cat "$name.header"; "$bin" info "$name.rsk" --counts 2>/dev/null; } > "$name.counts"
  record "header:$name" "$name.header"
  record "counts:$name" "$name.counts"
}
sketch l2 --input normal.csv --rows 50 --width 64 --bandwidth 2 --epsilon 1
sketch l2_p2_replace --input normal.csv --rows 40 --width 32 --bandwidth 1.5 --power 2 --epsilon 0.5 --neighbors replace
sketch l2_floored --input normal.csv --rows 30 --width 50 --bandwidth 2 --epsilon 2 --mechanism floored_laplace
sketch l2_gaussian --input normal.csv --rows 30 --width 50 --bandwidth 2 --epsilon 1 --delta 1e-6 --mechanism gaussian
sketch l2_exact --input normal.csv --rows 20 --width 40 --bandwidth 2 --no-privacy
sketch angular --input normal.csv --rows 40 --width 16 --kernel angular --power 3 --epsilon 1
sketch angular_pair --input normal.csv --rows 40 --width 64 --kernel angular_pair --pair-mode insert --epsilon 1
sketch jaccard --input sets.txt --rows 64 --width 100 --kernel jaccard --epsilon 1
sketch jaccard_classic --input sets.txt --rows 32 --width 100 --kernel jaccard_classic --epsilon 1
sketch graph --input edges.txt --format edgelist --undirected --rows 32 --width 64 --kernel jaccard --epsilon 1
sketch rff --input normal.csv --kernel rff --features 40 --sigma 1.5 --epsilon 1
sketch hist --input uniform.csv --kernel hist --bins 8 --domain 0:1 --epsilon 1

"$bin" query l2.rsk --queries normal_q.csv -t 2 > q_mean.txt
"$bin" query l2.rsk --queries normal_q.csv -t 2 --estimator mom --mom-groups 5 --debias > q_mom.txt
"$bin" query l2.rsk --queries normal_q.csv -t 2 --kernel-sum > q_sum.txt
"$bin" query jaccard.rsk --queries sets_q.txt -t 2 > q_sets.txt
record query:l2_mean q_mean.txt
record query:l2_mom_debias q_mom.txt
record query:l2_kernel_sum q_sum.txt
record query:jaccard q_sets.txt

"$bin" m2m rff.rsk --task mean --domain -4:4 --samples 20000 > m_rff_mean.txt
"$bin" m2m rff.rsk --task cov --domain -4:4 --samples 20000 > m_rff_cov.txt
"$bin" m2m hist.rsk --task cdf --domain 0:1 --samples 20000 > m_hist_cdf.txt
# counting.txt's queries involve 3 attributes: hist answers them only with --allow-unsupported.
"$bin" m2m hist.rsk --task count --domain 0:1 --samples 20000 --queries counting.txt --allow-unsupported > m_hist_count.txt
"$bin" m2m hist.rsk --task moment2 --domain 0:1 --samples 20000 > m_hist_moment2.txt
record m2m:rff_mean m_rff_mean.txt
record m2m:rff_cov m_rff_cov.txt
record m2m:hist_cdf m_hist_cdf.txt
record m2m:hist_count m_hist_count.txt
record m2m:hist_moment2 m_hist_moment2.txt

head -n 1500 normal.csv > part1.csv
tail -n +1501 normal.csv > part2.csv
# Two owners' halves: one public hash seed, each its own (here seeded) noise.
"$bin" sketch -t 2 -q --seed 9 --hash-seed 99 -o p1.rsk --input part1.csv --rows 20 --width 32 --bandwidth 2 --epsilon 1
"$bin" sketch -t 2 -q --seed 10 --hash-seed 99 -o p2.rsk --input part2.csv --rows 20 --width 32 --bandwidth 2 --epsilon 1
"$bin" merge p1.rsk p2.rsk -o merged.rsk 2>/dev/null
"$bin" info merged.rsk 2>/dev/null | grep -v '"commit"' > merged.header
{ cat merged.header; "$bin" info merged.rsk --counts 2>/dev/null; } > merged.counts
record header:merge merged.header
record counts:merge merged.counts

printf '%s\n' "${results[@]}" > actual.sha256
if [[ "${2:-}" == --update ]]; then
  cp actual.sha256 "$expected"
  echo "golden_outputs: recorded ${#results[@]} digests in $expected"
  exit 0
fi
if ! diff -u "$expected" actual.sha256; then
  echo "golden_outputs: seeded outputs differ from $expected (lines marked -/+ above)" >&2
  exit 1
fi
echo "golden_outputs: ${#results[@]} seeded outputs identical"

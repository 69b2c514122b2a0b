#!/usr/bin/env bash
# Download data sets from their public homes and check them against datasets/registry.json.
#   datasets/fetch.sh NAME [NAME...]   one or more registry entries
#   datasets/fetch.sh all              every entry with a download URL
#   --dest DIR                         where to put them (default: datasets/, beside this script)
# Each file is downloaded to a temporary name, transformed as the registry's "steps" say
# (the shared copies were normalised: a header line dropped, CR -> LF, gzip -9 -n), checked
# against its sha256, and only then moved into place. A checksum mismatch is an error
# (exit 1) and leaves any existing file untouched. Needs curl or wget, sha256sum, python3.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REGISTRY="$HERE/registry.json"
DEST="$HERE"
names=()
while (( $# )); do
  case "$1" in
    --dest) DEST=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) names+=("$1"); shift ;;
  esac
done
(( ${#names[@]} )) || { echo "usage: datasets/fetch.sh NAME|all [--dest DIR]" >&2; exit 2; }
PY=$(command -v python3 || command -v /usr/bin/python3 || true)
[[ -n "$PY" ]] || { echo "fetch.sh: python3 is needed to read the registry" >&2; exit 2; }

# One line per file: name<TAB>path<TAB>url<TAB>sha256<TAB>source_sha256<TAB>steps (comma-joined)
plan=$("$PY" - "$REGISTRY" "${names[@]}" <<'PYEOF'
import json, sys
reg = json.load(open(sys.argv[1]))["datasets"]
want = sys.argv[2:]
if want == ["all"]:
    want = list(reg)
for n in want:
    if n not in reg:
        sys.exit(f"fetch.sh: unknown data set '{n}' (known: {', '.join(reg)})")
    for f in reg[n]["files"]:
        fe = f.get("fetch") or {}
        print("\t".join([n, f["path"], fe.get("url") or "-", f.get("sha256") or "-",
                         fe.get("source_sha256") or "-", ",".join(fe.get("steps") or []) or "-"]))
PYEOF
)

download() {  # url out
  if command -v curl >/dev/null; then curl -fL --retry 3 -o "$2" "$1"
  elif command -v wget >/dev/null; then wget -q -O "$2" "$1"
  else echo "fetch.sh: need curl or wget" >&2; exit 2; fi
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

status=0
while IFS=$'\t' read -r name path url want_sha src_sha steps; do
  out="$DEST/$path"
  if [[ "$url" == "-" ]]; then
    echo "$name: $path has no public download (see the registry notes); skipped"
    continue
  fi
  if [[ -f "$out" && "$want_sha" != "-" && "$(sha "$out")" == "$want_sha" ]]; then
    echo "$name: $path already present and verified"
    continue
  fi
  mkdir -p "$(dirname "$out")"
  tmp=$(mktemp "$out.part.XXXXXX")
  trap 'rm -f "$tmp" "$tmp".*' EXIT
  echo "$name: downloading $url"
  if ! download "$url" "$tmp"; then
    echo "$name: download failed: $url" >&2; rm -f "$tmp"; status=1; continue
  fi
  IFS=',' read -r -a step_list <<< "$steps"
  ok=1
  for step in "${step_list[@]}"; do
    case "$step" in
      -) ;;
      unzip:*) member=${step#unzip:}
               unzip -p "$tmp" "$member" > "$tmp.x" && mv "$tmp.x" "$tmp" || ok=0 ;;
      drop_first_line) tail -n +2 "$tmp" > "$tmp.x" && mv "$tmp.x" "$tmp" ;;
      cr_to_lf) tr '\r' '\n' < "$tmp" > "$tmp.x" && mv "$tmp.x" "$tmp" ;;
      final_newline) [[ -z "$(tail -c1 "$tmp")" ]] || echo >> "$tmp" ;;
      gzip)
        if [[ "$src_sha" != "-" && "$(sha "$tmp")" != "$src_sha" ]]; then
          echo "$name: $path: CHECKSUM MISMATCH of the downloaded source: got $(sha "$tmp"), expected $src_sha" >&2
          ok=0; break
        fi
        gzip -9 -n -c "$tmp" > "$tmp.x" && mv "$tmp.x" "$tmp" ;;
      *) echo "$name: unknown step '$step' in the registry" >&2; ok=0 ;;
    esac
  done
  if (( ! ok )); then rm -f "$tmp"; status=1; continue; fi
  got=$(sha "$tmp")
  if [[ "$want_sha" == "-" ]]; then
    echo "$name: $path: no reference checksum in the registry; downloaded sha256 $got"
  elif [[ "$got" != "$want_sha" ]]; then
    if [[ "$src_sha" != "-" && " ${step_list[*]} " == *" gzip "* ]]; then
      # The source matched; only this gzip's output bytes differ from the shared copy's.
      echo "$name: $path: source verified ($src_sha); the recompressed file's sha256 differs ($got), kept"
    else
      echo "$name: $path: CHECKSUM MISMATCH: got $got, expected $want_sha (file not installed)" >&2
      rm -f "$tmp"; status=1; continue
    fi
  fi
  mv "$tmp" "$out"
  echo "$name: $path ok"
done <<< "$plan"
exit $status

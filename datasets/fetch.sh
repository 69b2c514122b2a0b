#!/usr/bin/env bash
# Download data sets from their public homes and check them against datasets/registry.json.
#   datasets/fetch.sh NAME [NAME...]   one or more registry entries
#   datasets/fetch.sh all              every entry with a download URL
#   --dest DIR        where to put them (default: datasets/, beside this script)
#   --registry FILE   read this registry instead of datasets/registry.json
#   --force           download again even when a verified copy is already in place
#   --status          download nothing; print NAME<TAB>STATE<TAB>DETAIL per entry, where the
#                     experiment loader would look (--dest, $PRIVRACE_DATA, datasets/,
#                     ../shared/datasets): ok | unverified (no reference checksum) | mismatch
#                     (DETAIL: the file and both checksums) | missing | no_url | synthetic
# PRIVRACE_DATA_MIRROR=URL fetches each file from URL/NAME/BASENAME instead of its registry URL
# (BASENAME: the last path segment of the registry URL; the mirror serves the same bytes, and
# the steps and checksums apply as usual). PRIVRACE_FETCH_TOOL=curl|wget|python picks the
# downloader (default: the first of them present).
# Each file is downloaded to a temporary name beside its destination, transformed as the
# registry's "steps" say (the shared copies were normalised: a header line dropped, CR -> LF,
# gzip -9 -n), checked against its sha256, and only then renamed into place. On any failure
# the temporary files are removed and an existing file is left untouched.
# Exit status: 0 every file in place; 1 a file was refused (checksum mismatch, a failed step);
# 2 bad usage or a missing tool; 3 a download was impossible (network, no URL), none refused.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REGISTRY="$HERE/registry.json"
DEST="$HERE"
DEST_GIVEN=0
FORCE=0
STATUS=0
names=()
usage="usage: datasets/fetch.sh NAME...|all [--dest DIR] [--registry FILE] [--force] [--status]"
while (( $# )); do
  case "$1" in
    --dest|--registry)
      (( $# >= 2 )) || { echo "fetch.sh: $1 needs a value; $usage" >&2; exit 2; }
      if [[ $1 == --dest ]]; then DEST=$2; DEST_GIVEN=1; else REGISTRY=$2; fi
      shift 2 ;;
    --force) FORCE=1; shift ;;
    --status) STATUS=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "fetch.sh: unknown option '$1'; $usage" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
(( ${#names[@]} )) || { echo "$usage" >&2; exit 2; }
PY=$(command -v python3 || command -v /usr/bin/python3 || true)
[[ -n "$PY" ]] || { echo "fetch.sh: python3 is needed to read the registry" >&2; exit 2; }
[[ -r "$REGISTRY" ]] || { echo "fetch.sh: cannot read the registry '$REGISTRY'" >&2; exit 2; }

# Verification shared by --status and the download loop. A file recompressed by the "gzip"
# step may differ in bytes from the registry's copy when another gzip build made it; its
# decompressed bytes are then checked against source_sha256 instead.
IFS= read -r -d '' PYLIB <<'PYEOF' || true
import gzip, hashlib, json, os, sys

def sha256(path, unzip=False):
    h = hashlib.sha256()
    with (gzip.open(path, "rb") if unzip else open(path, "rb")) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

def verify(path, f):
    """(state, sha256 of the file, message): state is ok | unverified | mismatch."""
    want = f.get("sha256")
    got = sha256(path)
    if not want:
        return "unverified", got, ""
    if got == want:
        return "ok", got, ""
    fe = f.get("fetch") or {}
    if fe.get("steps") == ["gzip"] and fe.get("source_sha256"):
        try:
            if sha256(path, unzip=True) == fe["source_sha256"]:
                return "ok", got, ""
        except (OSError, EOFError, gzip.BadGzipFile):
            pass
    return "mismatch", got, f"{path}: sha256 {got}, the registry expects {want}"

def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)

def load_registry(path):
    try:
        with open(path) as fh:
            reg = json.load(fh)["datasets"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        die(f"fetch.sh: {path}: not a readable registry ({e})")
    return reg

def wanted(reg, names, unknown_ok=False):
    if names == ["all"]:
        return list(reg)
    for n in names:
        if n not in reg and not unknown_ok:
            die(f"fetch.sh: unknown data set '{n}' (known: {', '.join(reg)})")
    return names
PYEOF

IFS= read -r -d '' PY_STATUS <<'PYEOF' || true
reg = load_registry(sys.argv[1])
dirs = sys.argv[2].split("\n")
for n in wanted(reg, sys.argv[3:], unknown_ok=True):
    if n not in reg:
        print(f"{n}\tunknown\tnot in {sys.argv[1]}")
        continue
    files = reg[n].get("files") or []
    if not files:
        print(f"{n}\tsynthetic\t-")
        continue
    # As the loader does: the first directory holding every file is the one used.
    found = next((d for d in dirs if all(os.path.isfile(os.path.join(d, f["path"])) for f in files)), None)
    if found is None:
        downloadable = all((f.get("fetch") or {}).get("url") for f in files)
        print(f"{n}\t{'missing' if downloadable else 'no_url'}\t-")
        continue
    state, detail = "ok", found
    for f in files:
        s, _, message = verify(os.path.join(found, f["path"]), f)
        if s == "mismatch":
            state, detail = "mismatch", message
            break
        if s == "unverified":
            state = "unverified"
    print(f"{n}\t{state}\t{detail}")
PYEOF

# One line per file: name, path, url, sha256, source_sha256, steps (comma-joined), and what
# is at the destination now (ok | unverified | mismatch | absent) with its sha256.
IFS= read -r -d '' PY_PLAN <<'PYEOF' || true
import urllib.parse
reg = load_registry(sys.argv[1])
dest, mirror = sys.argv[2], os.environ.get("PRIVRACE_DATA_MIRROR", "").rstrip("/")
for n in wanted(reg, sys.argv[3:]):
    for f in reg[n].get("files") or []:
        fe = f.get("fetch") or {}
        url = fe.get("url") or "-"
        if mirror and url != "-":
            base = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]
            url = f"{mirror}/{n}/{base}"
        out = os.path.join(dest, f["path"])
        have, got = "absent", "-"
        if os.path.isfile(out):
            have, got, _ = verify(out, f)
        print("\t".join([n, f["path"], url, f.get("sha256") or "-", fe.get("source_sha256") or "-",
                         ",".join(fe.get("steps") or []) or "-", have, got]))
PYEOF

if (( STATUS )); then
  dirs=()
  (( DEST_GIVEN )) && dirs+=("$DEST")
  [[ -n "${PRIVRACE_DATA:-}" ]] && dirs+=("$PRIVRACE_DATA")
  dirs+=("$HERE" "$(dirname "$(dirname "$HERE")")/shared/datasets")
  exec "$PY" -c "$PYLIB"$'\n'"$PY_STATUS" "$REGISTRY" "$(printf '%s\n' "${dirs[@]}")" "${names[@]}"
fi

plan=$("$PY" -c "$PYLIB"$'\n'"$PY_PLAN" "$REGISTRY" "$DEST" "${names[@]}")

TOOL=${PRIVRACE_FETCH_TOOL:-}
if [[ -z "$TOOL" ]]; then
  if command -v curl >/dev/null; then TOOL=curl
  elif command -v wget >/dev/null; then TOOL=wget
  else TOOL=python; fi
fi
case "$TOOL" in
  curl|wget) command -v "$TOOL" >/dev/null || { echo "fetch.sh: PRIVRACE_FETCH_TOOL=$TOOL but $TOOL is not installed" >&2; exit 2; } ;;
  python) ;;
  *) echo "fetch.sh: PRIVRACE_FETCH_TOOL must be curl, wget or python, not '$TOOL'" >&2; exit 2 ;;
esac

# A short body (the server closed early) is an error for all three: curl and wget compare
# with Content-Length, the python reader checks it itself.
TRIES=${PRIVRACE_FETCH_TRIES:-3}  # attempts a file (curl and wget retry transient failures)
[[ "$TRIES" =~ ^[1-9][0-9]*$ ]] || { echo "fetch.sh: PRIVRACE_FETCH_TRIES must be a positive integer, not '$TRIES'" >&2; exit 2; }
download() {  # url out
  case "$TOOL" in
    curl) local quiet=()
          [[ -t 2 ]] || quiet=(-sS)  # the progress meter only on a terminal
          curl -fL "${quiet[@]}" --connect-timeout 20 --retry $((TRIES - 1)) -o "$2" "$1" ;;
    wget) wget -q --tries="$TRIES" --timeout=30 -O "$2" "$1" ;;
    python) "$PY" - "$1" "$2" <<'PYEOF'
import sys, urllib.request
url, out = sys.argv[1], sys.argv[2]
try:
    with urllib.request.urlopen(url, timeout=30) as r, open(out, "wb") as f:
        size, want = 0, r.headers.get("Content-Length")
        for block in iter(lambda: r.read(1 << 16), b""):
            f.write(block)
            size += len(block)
    if want is not None and size != int(want):
        sys.exit(f"fetch.sh: {url}: got {size} of {want} bytes")
except Exception as e:
    sys.exit(f"fetch.sh: {url}: {e}")
PYEOF
    ;;
  esac
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

# Temporary files and directories made for the file in progress; removed on any exit.
tmp="" made_dir=""
cleanup() {
  [[ -z "$tmp" ]] || rm -f "$tmp" "$tmp.x"
  [[ -z "$made_dir" ]] || rmdir "$made_dir" 2>/dev/null || true
  tmp="" made_dir=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

refused=0 impossible=0
skip_entry=""
while IFS=$'\t' read -r name path url want_sha src_sha steps have have_sha; do
  [[ -n "$name" ]] || continue
  [[ "$name" != "$skip_entry" ]] || continue
  out="$DEST/$path"
  if [[ "$url" == "-" ]]; then
    echo "$name: $path has no public download (see the registry notes); skipped"
    [[ "${names[*]}" == all ]] || impossible=1
    continue
  fi
  if (( ! FORCE )); then
    case "$have" in
      ok) echo "$name: $path already present and verified"; continue ;;
      unverified) echo "$name: $path already present (no reference checksum in the registry; sha256 $have_sha)"; continue ;;
      mismatch) echo "$name: $path is present but its sha256 $have_sha differs from the registry's $want_sha; downloading again" ;;
    esac
  fi
  dir=$(dirname "$out")
  [[ -d "$dir" ]] || made_dir=$dir
  mkdir -p "$dir"
  tmp=$(mktemp "$out.part.XXXXXX")
  echo "$name: downloading $url"
  if ! download "$url" "$tmp"; then
    echo "$name: $path: download failed: $url (nothing installed)" >&2
    cleanup; impossible=1; skip_entry=$name; continue
  fi
  IFS=',' read -r -a step_list <<< "$steps"
  ok=1
  for step in "${step_list[@]}"; do
    case "$step" in
      -) ;;
      unzip:*) member=${step#unzip:}
               { unzip -p "$tmp" "$member" > "$tmp.x" && [[ -s "$tmp.x" ]] && mv "$tmp.x" "$tmp"; } ||
                 { echo "$name: $path: no member '$member' could be extracted from $url" >&2; ok=0; } ;;
      drop_first_line) tail -n +2 "$tmp" > "$tmp.x" && mv "$tmp.x" "$tmp" || ok=0 ;;
      cr_to_lf) tr '\r' '\n' < "$tmp" > "$tmp.x" && mv "$tmp.x" "$tmp" || ok=0 ;;
      final_newline) [[ -z "$(tail -c1 "$tmp")" ]] || echo >> "$tmp" ;;
      gzip)
        if [[ "$src_sha" != "-" && "$(sha "$tmp")" != "$src_sha" ]]; then
          echo "$name: $path: CHECKSUM MISMATCH of the source downloaded from $url: sha256 $(sha "$tmp"), the registry expects $src_sha (not installed)" >&2
          ok=0; break
        fi
        gzip -9 -n -c "$tmp" > "$tmp.x" && mv "$tmp.x" "$tmp" || ok=0 ;;
      *) echo "$name: unknown step '$step' in the registry" >&2; ok=0 ;;
    esac
    (( ok )) || break
  done
  if (( ! ok )); then cleanup; refused=1; skip_entry=$name; continue; fi
  got=$(sha "$tmp")
  if [[ "$want_sha" == "-" ]]; then
    echo "$name: $path: no reference checksum in the registry; downloaded sha256 $got"
  elif [[ "$got" != "$want_sha" ]]; then
    if [[ "$src_sha" != "-" && " ${step_list[*]} " == *" gzip "* ]]; then
      # The source matched; only this gzip's output bytes differ from the shared copy's.
      echo "$name: $path: source verified ($src_sha); the recompressed file's sha256 differs ($got), kept"
    else
      echo "$name: $path: CHECKSUM MISMATCH: downloaded from $url, sha256 $got, the registry expects $want_sha (not installed)" >&2
      cleanup; refused=1; skip_entry=$name; continue
    fi
  fi
  mv -f "$tmp" "$out"
  tmp="" made_dir=""
  echo "$name: $path ok"
done <<< "$plan"
(( refused )) && exit 1
(( impossible )) && exit 3
exit 0

#!/usr/bin/env bash
# datasets/fetch.sh against a loopback HTTP server (127.0.0.1 only; no network): a good
# download is installed with the registry's sha256; a corrupted or cut-short download is
# refused and leaves no file, temporary file or directory behind, and an existing file
# untouched; a verified file is not downloaded again; PRIVRACE_DATA_MIRROR and --status.
# Each downloader fetch.sh can use (curl, wget, python) is tried when present.
# usage: test_fetch.sh [REPO]   (exit 77 = skipped: no python3)
set -euo pipefail
REPO=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
FETCH="$REPO/datasets/fetch.sh"
PY=$(command -v /usr/bin/python3 || command -v python3 || true)
if [[ -z "$PY" ]]; then
  echo "SKIP: python3 not found; the loopback HTTP server and fetch.sh both need it"
  exit 77
fi

# The loopback server is reached directly, whatever proxy the environment names.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost

WORK=$(mktemp -d)
server_pid=""
finish() {
  [[ -z "$server_pid" ]] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$WORK"
}
trap finish EXIT

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# Served files: www/<path>. /good/<path> sends the file; /short/<path> announces its full
# Content-Length, sends half of it and closes. Every request path is logged.
mkdir -p "$WORK/www/tiny" "$WORK/www/corrupt" "$WORK/www/m/tiny" "$WORK/www/gz"
"$PY" - "$WORK/www/tiny/tiny.csv" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(6000):
        f.write(f"{i},{(i * 7919) % 1000 / 10:.1f},{i % 2}\n")
PYEOF
good=$WORK/www/tiny/tiny.csv
cp "$good" "$WORK/www/m/tiny/tiny.csv"
cp "$good" "$WORK/www/gz/tiny.csv"
# The corrupted copy: the same size, one byte changed in the middle.
"$PY" - "$good" "$WORK/www/corrupt/tiny.csv" <<'PYEOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x01
open(sys.argv[2], "wb").write(data)
PYEOF
sha() { sha256sum "$1" | cut -d' ' -f1; }
good_sha=$(sha "$good")
bad_sha=$(sha "$WORK/www/corrupt/tiny.csv")
gz_sha=$(gzip -9 -n -c "$good" | sha256sum | cut -d' ' -f1)

cat > "$WORK/server.py" <<'PYEOF'
import http.server, os, sys, threading
root, port_file, log = sys.argv[1], sys.argv[2], sys.argv[3]

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        mode, _, rest = self.path.lstrip("/").partition("/")
        path = os.path.join(root, rest)
        if mode not in ("good", "short") or ".." in rest or not os.path.isfile(path):
            self.send_error(404)
            return
        body = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body if mode == "good" else body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True

threading.Timer(600, os._exit, (0,)).start()  # never outlives a killed test
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
PYEOF
"$PY" "$WORK/server.py" "$WORK/www" "$WORK/port" "$WORK/requests.log" &
server_pid=$!
for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
[[ -s "$WORK/port" ]] || { echo "FAIL: the loopback HTTP server did not start" >&2; exit 1; }
BASE="http://127.0.0.1:$(cat "$WORK/port")"
DEAD="http://127.0.0.1:1"  # nothing listens on port 1: a download that cannot happen

# A registry with one entry "tiny" (URL $1, no steps) and one "tinygz" (the plain file,
# recompressed by the gzip step and checked against source_sha256 first).
registry() {
  "$PY" - "$WORK/registry.json" "$1" "$good_sha" "$gz_sha" "$BASE/good/gz/tiny.csv" <<'PYEOF'
import json, sys
out, url, sha, gz_sha, gz_url = sys.argv[1:]
json.dump({"schema": 1, "datasets": {
    "tiny": {"kind": "table", "files": [{"path": "tiny/tiny.csv", "role": "data", "sha256": sha,
                                           "fetch": {"url": url, "steps": []}}]},
    "tinygz": {"kind": "table", "files": [{"path": "tinygz/tiny.csv.gz", "role": "data", "sha256": gz_sha,
                                             "fetch": {"url": gz_url, "steps": ["gzip"], "source_sha256": sha}}]},
}}, open(out, "w"))
PYEOF
}

# Runs fetch.sh; its exit status in $rc, its stdout + stderr in $WORK/out.
fetch() {
  rc=0
  bash "$FETCH" --registry "$WORK/registry.json" "$@" >"$WORK/out" 2>&1 || rc=$?
}
requests() { [[ -f "$WORK/requests.log" ]] && wc -l <"$WORK/requests.log" || echo 0; }
# Nothing but the listed files under a destination (no *.part.*, no empty directories).
only() {  # dest [relative paths...]
  local dest=$1; shift
  local want got
  want=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
  got=$(cd "$dest" && find . -mindepth 1 ! -type d -printf '%P\n' | sort)
  local dirs
  dirs=$(cd "$dest" && find . -mindepth 1 -type d -empty -printf '%P\n')
  [[ "$got" == "$want" && -z "$dirs" ]] || { echo "  expected files: [${want//$'\n'/ }], found: [${got//$'\n'/ }], empty directories: [${dirs//$'\n'/ }]"; return 1; }
}

tools=(python)
command -v curl >/dev/null && tools+=(curl)
command -v wget >/dev/null && tools+=(wget)
echo "downloaders: ${tools[*]}; server $BASE"

export PRIVRACE_FETCH_TRIES=1  # a refused or cut-short download fails at once, without retry waits
for tool in "${tools[@]}"; do
  export PRIVRACE_FETCH_TOOL=$tool
  unset PRIVRACE_DATA_MIRROR
  t=$WORK/dest-$tool
  mkdir -p "$t"

  # (a) a good download lands with the registry's sha256, nothing else beside it.
  registry "$BASE/good/tiny/tiny.csv"
  fetch tiny --dest "$t/a"
  if [[ $rc -eq 0 && -f "$t/a/tiny/tiny.csv" && "$(sha "$t/a/tiny/tiny.csv")" == "$good_sha" ]] && only "$t/a" tiny/tiny.csv; then
    pass "$tool: good download installed with sha256 $good_sha"
  else
    fail "$tool: good download (exit $rc): $(cat "$WORK/out")"
  fi

  # A verified file is not downloaded again.
  before=$(requests)
  fetch tiny --dest "$t/a"
  if [[ $rc -eq 0 && $(requests) -eq $before ]] && grep -q "already present and verified" "$WORK/out"; then
    pass "$tool: verified file not fetched again"
  else
    fail "$tool: second fetch of a verified file (exit $rc, requests $before -> $(requests)): $(cat "$WORK/out")"
  fi

  # --status finds it where the loader would.
  status=$(bash "$FETCH" --registry "$WORK/registry.json" --status tiny --dest "$t/a" 2>&1) || true
  if [[ "$status" == "tiny"$'\t'"ok"$'\t'"$t/a" ]]; then pass "$tool: --status ok"; else fail "$tool: --status said '$status'"; fi

  # (b) a corrupted file is refused: non-zero exit, a message naming the file and both
  # checksums, nothing installed, and the existing good file (--force) untouched.
  registry "$BASE/good/corrupt/tiny.csv"
  cp -p "$t/a/tiny/tiny.csv" "$t/before.csv"
  fetch tiny --dest "$t/a" --force
  if [[ $rc -eq 1 ]] && grep -q "tiny/tiny.csv" "$WORK/out" && grep -q "$bad_sha" "$WORK/out" &&
     grep -q "$good_sha" "$WORK/out" && cmp -s "$t/before.csv" "$t/a/tiny/tiny.csv" && only "$t/a" tiny/tiny.csv; then
    pass "$tool: corrupted download refused; existing file untouched"
  else
    fail "$tool: corrupted download over an existing file (exit $rc): $(cat "$WORK/out")"
  fi
  fetch tiny --dest "$t/b"
  if [[ $rc -eq 1 ]] && grep -q "CHECKSUM MISMATCH" "$WORK/out" && only "$t/b"; then
    pass "$tool: corrupted download refused; nothing left behind"
  else
    fail "$tool: corrupted download into an empty destination (exit $rc): $(cat "$WORK/out")"
  fi

  # (c) a download cut short (half of Content-Length, then the connection closes).
  registry "$BASE/short/tiny/tiny.csv"
  fetch tiny --dest "$t/c"
  if [[ $rc -ne 0 ]] && grep -q "download failed" "$WORK/out" && only "$t/c"; then
    pass "$tool: cut-short download refused (exit $rc); nothing left behind"
  else
    fail "$tool: cut-short download (exit $rc): $(cat "$WORK/out")"
  fi
  fetch tiny --dest "$t/a" --force
  if [[ $rc -ne 0 ]] && cmp -s "$t/before.csv" "$t/a/tiny/tiny.csv" && only "$t/a" tiny/tiny.csv; then
    pass "$tool: cut-short download leaves an existing file untouched"
  else
    fail "$tool: cut-short download over an existing file (exit $rc): $(cat "$WORK/out")"
  fi

  # A download that cannot happen (nothing listening) is exit 3, nothing left behind.
  registry "$DEAD/some/where/tiny.csv"
  fetch tiny --dest "$t/d"
  if [[ $rc -eq 3 ]] && only "$t/d"; then
    pass "$tool: unreachable server: exit 3, nothing left behind"
  else
    fail "$tool: unreachable server (exit $rc): $(cat "$WORK/out")"
  fi

  # The mirror replaces the registry URL: MIRROR/<name>/<basename of the registry URL>.
  PRIVRACE_DATA_MIRROR="$BASE/good/m/" fetch tiny --dest "$t/e"
  if [[ $rc -eq 0 && "$(sha "$t/e/tiny/tiny.csv")" == "$good_sha" ]] && grep -q "$BASE/good/m/tiny/tiny.csv" "$WORK/out" &&
     only "$t/e" tiny/tiny.csv; then
    pass "$tool: PRIVRACE_DATA_MIRROR"
  else
    fail "$tool: mirror (exit $rc): $(cat "$WORK/out")"
  fi

  # The gzip step: the source is checked, then recompressed to the registry's bytes.
  fetch tinygz --dest "$t/f"
  if [[ $rc -eq 0 && "$(sha "$t/f/tinygz/tiny.csv.gz")" == "$gz_sha" ]] && only "$t/f" tinygz/tiny.csv.gz; then
    pass "$tool: gzip step"
  else
    fail "$tool: gzip step (exit $rc): $(cat "$WORK/out")"
  fi
done

# Usage errors: an unknown entry, an unreadable registry.
fetch nosuch
if [[ $rc -eq 2 ]] && grep -q "unknown data set 'nosuch'" "$WORK/out"; then pass "unknown entry: exit 2"; else fail "unknown entry (exit $rc): $(cat "$WORK/out")"; fi
rc=0; bash "$FETCH" --registry "$WORK/absent.json" tiny >"$WORK/out" 2>&1 || rc=$?
if [[ $rc -eq 2 ]] && grep -q "absent.json" "$WORK/out"; then pass "unreadable registry: exit 2"; else fail "unreadable registry (exit $rc): $(cat "$WORK/out")"; fi

if (( failures )); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all fetch.sh checks passed"

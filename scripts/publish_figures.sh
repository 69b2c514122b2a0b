#!/usr/bin/env bash
# Remakes docs/figures/ from the full runs in results/ (or --results DIR, e.g. the worktree of a
# frozen whole-suite run): runs every plots/plot_*.py on them, then copies
# the PNGs of each config that has a full-profile results file (results/NAME.jsonl, not
# -quick) into docs/figures/, at most 300 KB each (a 256-colour palette first; scaled down only
# if still too large), never one drawn from quick records, and writes docs/figures/README.md
# naming the commit of this checkout, the machine, and per figure the paper figure it is
# (plots/figures.py), the configs, their record counts and the commits their records were made with.
#   scripts/publish_figures.sh [--results DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=results
while (( $# )); do
  case "$1" in
    --results) RESULTS=${2:?--results needs a directory}; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "publish_figures.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -d $RESULTS ]] || { echo "publish_figures.sh: no results directory '$RESULTS'" >&2; exit 1; }
PY=""
for cand in "${PRIVRACE_PYTHON:-}" /usr/bin/python3 python3; do
  [[ -n "$cand" ]] || continue
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import matplotlib, numpy, PIL' >/dev/null 2>&1; then
    PY=$cand
    break
  fi
done
[[ -n $PY ]] || { echo "publish_figures.sh: needs python3 with matplotlib, numpy and PIL (scripts/setup.sh)" >&2; exit 1; }
# A script with no full results yet says so and fails: its figures are simply not published.
for script in plots/plot_*.py; do
  "$PY" "$script" --results "$RESULTS" >/dev/null 2>"${TMPDIR:-/tmp}/publish_figures.err" ||
    echo "publish_figures.sh: $script drew nothing: $(tail -1 "${TMPDIR:-/tmp}/publish_figures.err")" >&2
done
# Configs whose full run is not finished (cells still pending, by the runner's own count) are
# not published: a figure of part of a grid would read as the result.
EXP=${PRIVRACE_BUILD_DIR:-build}/privrace-experiment
[[ -x $EXP ]] || { echo "publish_figures.sh: $EXP not built (it counts each config's pending cells)" >&2; exit 1; }
PENDING=$(mktemp)
trap 'rm -f "$PENDING"' EXIT
for f in "$RESULTS"/*.jsonl; do
  name=$(basename "$f" .jsonl)
  [[ $name == *-quick || ! -f configs/$name.json ]] && continue
  "$EXP" "configs/$name.json" --plan --out "$RESULTS" 2>/dev/null | awk -F'\t' '{ print $1, $4 }' >>"$PENDING" || true
done
"$PY" - "$RESULTS" "$PENDING" <<'PY'
import glob, io, json, os, platform, subprocess, sys, datetime
from PIL import Image

sys.path.insert(0, "plots")
from figures import paper_figure  # noqa: E402  (which PNG is which paper figure)

results = sys.argv[1]
pending = {}
with open(sys.argv[2]) as f:
    for line in f:
        name, left = line.split()
        pending[name] = int(left)
out_dir = "docs/figures"
os.makedirs(out_dir, exist_ok=True)
limit = 300 * 1024


def shrink_copy(src, dst):
    """The PNG at most `limit` bytes, its pixels kept (150 dpi, the style's panel sizes): re-encoded,
    then reduced to a 256-colour palette (line plots lose nothing visible); scaled down in steps
    of 0.85 only if that is still too large."""
    img = Image.open(src)
    img.load()
    if img.mode not in ("RGB", "L", "P"):
        img = img.convert("RGB")
    scale = 1.0
    while True:
        im = img if scale == 1.0 else img.resize((int(img.width * scale), int(img.height * scale)), Image.LANCZOS)
        candidates = [im]
        if im.mode == "RGB":
            candidates.append(im.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE))
        for cand in candidates:
            buf = io.BytesIO()
            cand.save(buf, format="PNG", optimize=True)
            if buf.tell() <= limit:
                break
        if buf.tell() <= limit or scale < 0.3:
            break
        scale *= 0.85
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(buf.getvalue())
    os.replace(tmp, dst)
    return buf.tell(), im.size


def profile(png):
    """'quick' for a PNG drawn from --quick records (plots/style.py writes it into the PNG)."""
    try:
        return "quick" if "quick" in Image.open(png).info.get("Description", "") else "full"
    except OSError:
        return "full"


def records(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a partial last line of a killed run
    return out


figures = {}  # figure stem -> [(config, records, commits)]
for path in sorted(glob.glob(os.path.join(results, "*.jsonl"))):
    name = os.path.basename(path)[:-6]
    if name.endswith("-quick"):
        continue
    cfg_path = os.path.join("configs", name + ".json")
    if not os.path.exists(cfg_path):
        continue
    if pending.get(name, 1) != 0:
        print(f"publish_figures.sh: {name}: full run not finished ({pending.get(name, '?')} cells pending), not published")
        continue
    with open(cfg_path) as f:
        cfg = json.load(f)
    recs = records(path)
    if not recs:
        continue
    commits = sorted({r.get("git_commit", "?") for r in recs})
    figures.setdefault(cfg.get("figure", name), []).append((name, len(recs), commits))

commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
model = "unknown CPU"
try:
    with open("/proc/cpuinfo") as f:
        model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
except (OSError, StopIteration):
    pass
lines = [
    "# Figures of the full runs",
    "",
    f"Made by `scripts/publish_figures.sh` on {datetime.date.today().isoformat()} from checkout {commit}, "
    f"on a {os.cpu_count()}-core {platform.machine()} ({model}). Every PNG below is drawn by the plot "
    "scripts from the full-profile records in `results/` (quick profiles are never published here); "
    "the table names the configs behind each figure, their record counts and the commits the "
    "records were made with. [../reproduction.md](../reproduction.md) reads them against the papers.",
    "",
    "| figure | paper figure | configs (records) | record commits | size |",
    "|---|---|---|---|---|",
]


def paper(png):
    row = paper_figure(png)
    return row[2] if row else "(no longer drawn by the plot scripts)"


# Results do not outlive a checkout: a figure published earlier whose configs have no full run
# here keeps its file and its row (with its own record commits), so publishing is cumulative.
earlier = {}
readme = os.path.join(out_dir, "README.md")
if os.path.exists(readme):
    with open(readme) as f:
        for row in f:
            if row.startswith("| [") and "](" in row:
                png = row[3:row.index("]")]
                if os.path.exists(os.path.join(out_dir, png)):
                    cells = row.rstrip("\n").split(" | ")
                    if len(cells) == 4:  # a row of before the paper-figure column
                        cells.insert(1, paper(png))
                    earlier[png] = " | ".join(cells)
rows = {}
published = 0
# Every config's figure name: "m2m_*.png" must not take m2m_logistic.png, another config's figure.
all_stems = set()
for cfg_path in glob.glob(os.path.join("configs", "*.json")):
    try:
        with open(cfg_path) as f:
            all_stems.add(json.load(f).get("figure", os.path.basename(cfg_path)[:-5]))
    except (OSError, ValueError):
        pass
for stem in sorted(figures):
    pngs = sorted(glob.glob(os.path.join("plots", stem + ".png")) + glob.glob(os.path.join("plots", stem + "_*.png")))
    pngs = [p for p in pngs if os.path.basename(p)[:-4] == stem or os.path.basename(p)[:-4] not in all_stems]
    for png in pngs:
        name = os.path.basename(png)
        if profile(png) == "quick":  # a figure of quick records (a config of the stem without a full run)
            print(f"publish_figures.sh: {name} was drawn from quick records, not published")
            continue
        size, dims = shrink_copy(png, os.path.join(out_dir, name))
        cfgs = ", ".join(f"`{n}` ({k})" for n, k, _ in figures[stem])
        commits = ", ".join(sorted({c for _, _, cs in figures[stem] for c in cs}))
        rows[name] = f"| [{name}]({name}) | {paper(name)} | {cfgs} | {commits} | {size // 1024} KB, {dims[0]}x{dims[1]} |"
        published += 1
kept = {png: row for png, row in earlier.items() if png not in rows}
lines += [row for _, row in sorted({**kept, **rows}.items())]
if kept:
    lines += ["", f"{len(kept)} figure(s) above were not remade by this run (no full-profile records of their configs in "
              "this checkout's results/): their rows are those of the run that made them."]
lines += ["", "## Every figure the plot scripts draw", "",
          "One PNG per paper figure, all drawn through one style module (`plots/style.py`: at most four panels a "
          "row, each panel at least 2.5 x 2 inches at 150 dpi, no text under 8 pt, one legend per figure outside the "
          "panels, a fixed colour and marker per method). `python3 plots/figures.py` prints this table.", ""]
import figures as _catalogue  # noqa: E402
lines += _catalogue.markdown().rstrip("\n").split("\n")
with open(readme + ".tmp", "w") as f:
    f.write("\n".join(lines) + "\n")
os.replace(readme + ".tmp", readme)
print(f"publish_figures.sh: {published} figures in {out_dir}/ (README.md lists them)")
PY

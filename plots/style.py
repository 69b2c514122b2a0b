"""The one figure style of every plot script: fonts, panel sizes, the grid of panels, one legend
per figure outside the panels, and a fixed colour / marker / line style per method.

Rules (checked by check() on every figure save() writes; PRIVRACE_PLOT_STRICT=1 turns a broken
rule into an error, as the tests run it):
  - at most MAX_COLS panels a row; every panel's data area at least MIN_AXES inches at DPI;
  - no text under MIN_FONT points (ticks, labels, titles, legend, notes);
  - one legend per figure, outside every panel's data area (below the panels, or to their right);
  - a method is drawn in the same colour, marker and line style in every figure (METHODS);
    two different entries of one legend never look the same.

Typical use:
    fig, axes = style.panels(len(items))           # a grid of at most 4 panels a row
    for ax, item in zip(axes, items):
        style.line(ax, eps, err, "RACE")             # colour, marker and line style of "RACE"
        style.hline(ax, value, "Non-private")        # a reference without epsilon
        style.log_eps(ax)                            # epsilon on a log x axis
    style.finish(fig, axes, title="...", note="...")  # one legend below, room reserved
    style.save(fig, out_dir, "figure_name")
"""
import hashlib
import math
import os
import warnings

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

DPI = 150
MAX_COLS = 4
PANEL = (3.4, 2.9)        # inches of one panel cell (data area + its ticks, labels and title)
MIN_AXES = (2.5, 2.0)     # inches of a panel's data area, at least
MIN_FONT = 8.0            # points, at least, for every text
EPS_LABEL = "privacy budget ε"

RC = {
    "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "xtick.labelsize": 8, "ytick.labelsize": 8,
    "legend.fontsize": 8, "legend.title_fontsize": 8, "figure.titlesize": 10,
    "lines.linewidth": 1.5, "lines.markersize": 4.5, "axes.grid": True, "grid.alpha": 0.3,
    "figure.dpi": DPI, "savefig.dpi": DPI, "savefig.bbox": "tight", "savefig.pad_inches": 0.08,
    "legend.frameon": False, "axes.titlepad": 4.0,
}


def apply():
    """Set the shared rcParams (every script calls it once before drawing)."""
    plt.rcParams.update(RC)


# ---- one style per method ------------------------------------------------------------------
# label -> (colour, marker, line style). marker None: a reference drawn as a horizontal line
# (a method without epsilon). The order is the legend order. Two labels share a style only when
# they name the same method (ALIASES); the tests check that no two entries of one figure's legend
# look the same.
METHODS = {
    "Ground truth": ("black", None, "-"),
    # RACE and its variants (blues)
    "RACE": ("tab:blue", "o", "-"),
    "RACE (best R over grid)": ("tab:blue", "o", "-"),
    "RACE (R by Corollary 1)": ("tab:cyan", "s", "--"),
    "RACE (median of means)": ("navy", "D", "-."),
    "RACE (insert)": ("tab:cyan", "D", "--"),
    "RACE-MAP": ("tab:cyan", "^", "--"),
    "RACE (eps=inf)": ("navy", None, ":"),
    # central-DP function release and synthetic data (KDE figures, regression, M2M)
    "Spectral": ("tab:purple", "D", "-"),
    "KME": ("tab:red", "v", "-"),
    "KME (uniform points)": ("tab:red", "v", "-"),
    "KME (private data-informed points)": ("darkred", "<", "--"),
    "PFDA": ("tab:brown", "P", "-"),
    "Bernstein": ("tab:green", "^", "-"),
    "Synthetic": ("tab:orange", ">", "-"),
    "Histogram": ("tab:green", "s", "-"),
    "PrivBayes": ("tab:olive", "X", "-."),
    "MST": ("tab:pink", "h", "-"),
    "AIM": ("darkgoldenrod", "*", "-"),
    # classification and regression
    "ObjPert": ("tab:red", "^", "-"),
    "ObjPert (wider lambda)": ("salmon", "v", "-."),
    "ObjPert (one-vs-rest)": ("firebrick", "<", "-"),
    "SSP": ("tab:orange", "v", "-"),
    "AdaSSP": ("tab:pink", "s", "-"),
    "OPS": ("tab:brown", "<", "-"),
    "AdaOPS": ("tab:green", ">", "-"),
    # M2M (Houssiau et al.)
    "M2M RFF": ("tab:purple", "o", "-"),
    "M2M RACE": ("tab:blue", "s", "-"),
    "M2M HIST": ("tab:green", "d", "-"),
    "M2M RFF + intercept": ("indigo", "o", "--"),
    "M2M HIST + intercept": ("darkgreen", "d", "--"),
    "M2M RFF eps=inf": ("tab:purple", None, ":"),
    "M2M RACE eps=inf": ("tab:blue", None, ":"),
    "M2M HIST eps=inf": ("tab:green", None, ":"),
    "DP-ERM": ("tab:red", "P", "-"),
    "DP-Copula": ("tab:orange", "D", "-"),
    "DP-WGAN ((eps, 1e-5)-DP)": ("tab:brown", "X", "-"),
    "MST ((eps, 1e-9)-DP)": ("tab:pink", "h", "-"),
    "AIM ((eps, 1e-9)-DP)": ("darkgoldenrod", "*", "-"),
    # local DP (Wang, Gaboardi & Xu)
    "Bernstein (Alg. 2)": ("tab:green", "o", "-"),
    "Bernstein 1-bit (Alg. 3)": ("tab:olive", "s", "-"),
    "Input perturbation": ("tab:orange", "^", "-."),
    "LDP-SGD (DJW, interactive)": ("tab:red", "v", ":"),
    "LDP-SGD (PM, interactive)": ("tab:purple", "D", ":"),
    "LDP-SGD (HM, interactive)": ("tab:brown", "P", ":"),
    "LDP-SGD (PrivUnit, interactive)": ("tab:pink", "X", ":"),
    "Theorem 3 bound (constant 1)": ("gray", None, "--"),
    "Chebyshev (Alg. 4, t = k)": ("tab:blue", "o", "-"),
    "Chebyshev (Alg. 4, t = 2)": ("tab:cyan", "s", "--"),
    "Per-query RR": ("tab:red", "v", ":"),
    "Central histogram": ("black", "D", "-."),
    "Trigonometric (Alg. 5, 1 bit)": ("tab:blue", "o", "-"),
    "Trigonometric (Alg. 5, PM)": ("tab:purple", "D", "-"),
    "Trigonometric (Alg. 5, HM)": ("tab:brown", "P", "-"),
    "Trigonometric (Alg. 5, Laplace)": ("tab:green", "^", "-."),
    "Per-query LDP average": ("tab:red", "v", ":"),
    "LDP-SGD, full d": ("tab:red", "v", "-"),
    # RACE applications
    "Exact KDE": ("black", None, "-."),
    "Uniform": ("tab:red", None, ":"),
    # references without epsilon
    "Non-private": ("black", None, "--"),
    "Trivial": ("gray", None, ":"),
    "Majority": ("gray", None, ":"),
}
# Labels that name the same method as another (they may share its look).
ALIASES = {"RACE (best R over grid)": "RACE", "KME (uniform points)": "KME", "Majority": "Trivial",
           "MST ((eps, 1e-9)-DP)": "MST", "AIM ((eps, 1e-9)-DP)": "AIM"}
_FALLBACK_COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                     "tab:olive", "tab:cyan", "navy", "darkgreen", "darkred", "darkgoldenrod", "indigo"]
_FALLBACK_MARKERS = ["o", "s", "^", "v", "D", "P", "X", "h", "<", ">", "*", "d"]


def method_style(label):
    """{'color', 'marker', 'linestyle'} of a method label: METHODS, else a colour and marker
    derived from the label's hash (the same in every figure and every run)."""
    if label in METHODS:
        c, m, ls = METHODS[label]
    else:
        h = int(hashlib.sha1(label.encode()).hexdigest(), 16)
        c = _FALLBACK_COLOURS[h % len(_FALLBACK_COLOURS)]
        m = _FALLBACK_MARKERS[(h // 97) % len(_FALLBACK_MARKERS)]
        ls = "-"
    return {"color": c, "marker": m, "linestyle": ls}


def sequence_style(i):
    """The i-th style of a figure whose curves are not methods (data sets, graph sizes)."""
    return {"color": _FALLBACK_COLOURS[i % len(_FALLBACK_COLOURS)],
            "marker": _FALLBACK_MARKERS[i % len(_FALLBACK_MARKERS)], "linestyle": "-"}


def legend_rank(label):
    keys = list(METHODS)
    return (keys.index(label), "") if label in METHODS else (len(keys), label)


def line(ax, x, y, label, legend=None, band=None, hollow=False, **kw):
    """One method's curve in its fixed style; band = (lo, hi) shades its spread. legend: the
    legend text when it differs from the style key."""
    st = method_style(label)
    st.update(kw)
    if hollow:
        st.setdefault("markerfacecolor", "none")
    (ln,) = ax.plot(x, y, label=legend or label, **st)
    if band is not None:
        ax.fill_between(x, band[0], band[1], color=st["color"], alpha=0.15, linewidth=0)
    return ln


def hline(ax, y, label, legend=None, **kw):
    """A reference without epsilon (non-private, trivial, majority) as a horizontal line."""
    st = method_style(label)
    st.pop("marker")
    if st["linestyle"] == "-":
        st["linestyle"] = "--"
    st.update(kw)
    return ax.axhline(y, label=legend or label, linewidth=1.2, **st)


def log_eps(ax, label=EPS_LABEL, logy=True):
    """The papers' axes: epsilon on a log x axis, the error on a log y axis (logy)."""
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(label)


def plain_ticks(axis, values):
    """Ticks at the given values, written as plain numbers (a log axis over less than a decade
    would otherwise print overlapping 2x10^-1, 3x10^-1 labels)."""
    axis.set_major_locator(FixedLocator(list(values)))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


# ---- the panel grid ------------------------------------------------------------------------
def ncols_for(n):
    """Columns of a grid of n panels: at most MAX_COLS, rows balanced (5 and 6 panels: 3 a row)."""
    if n <= MAX_COLS:
        return max(n, 1)
    if n <= 6:
        return 3
    return MAX_COLS


def panels(n, ncols=None, panel=PANEL, sharex=False, sharey=False):
    """A figure of n panels, at most MAX_COLS a row, each cell `panel` inches. Returns
    (fig, [axes] of length n); the unused cells of the last row are removed."""
    ncols = min(ncols or ncols_for(n), MAX_COLS)
    nrows = max(1, math.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows), squeeze=False,
                             sharex=sharex, sharey=sharey)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        fig.delaxes(ax)
    return fig, flat[:n]


def _dedupe_handles(axes, order=None):
    seen = {}
    for ax in axes:
        hs, ls = ax.get_legend_handles_labels()
        for h, l in zip(hs, ls):
            if l and not l.startswith("_") and l not in seen:
                seen[l] = h
    labels = list(seen)
    if order == "style":
        labels.sort(key=legend_rank)
    elif callable(order):
        labels.sort(key=order)
    return [seen[l] for l in labels], labels


def offscale_handle():
    return Line2D([], [], color="dimgray", marker="^", linestyle="none", markersize=6,
                  label="off scale (value beyond the panel's edge)")


def mark_offscale(ax):
    """Points of a curve beyond the panel's y range are drawn as triangles on its edge (in the
    curve's colour), so a clipped range hides no method. Returns True if any was drawn."""
    lo, hi = ax.get_ylim()
    log = ax.get_yscale() == "log"
    any_off = False
    for ln in list(ax.get_lines()):
        if ln.get_label().startswith("_"):
            continue
        x = np.asarray(ln.get_xdata(), float)
        y = np.asarray(ln.get_ydata(), float)
        if len(x) < 1 or len(x) != len(y):
            continue
        above = np.isfinite(y) & (y > hi)
        below = np.isfinite(y) & (y < lo) if not log else np.zeros_like(above)
        for mask, edge, marker in ((above, hi, "^"), (below, lo, "v")):
            if mask.any():
                ax.plot(x[mask], np.full(mask.sum(), edge), marker=marker, linestyle="none", color=ln.get_color(),
                        markersize=7, clip_on=False, zorder=5, label="_offscale")
                any_off = True
    return any_off


def informative_ylim(ax, values, references=(), log=True, cap=None, spread=10.0, pad=1.6):
    """Set the y range from the informative methods only. values = {label: [y...]} (means and
    band edges); references: y values that must stay visible (trivial, non-private).
    cap: an upper limit of the range (e.g. 3x the trivial predictor's error: a method beyond it
    says nothing the trivial one does not); without one, a method whose median lies more than
    `spread` times above the median of the methods' medians is left out of the range. Points
    beyond the range are marked on the panel's edge by finish(). Returns the labels whose
    points are (partly) off the range."""
    ok = lambda v: np.isfinite(v) and (v > 0 or not log)  # noqa: E731
    vals = {l: [v for v in vs if ok(v)] for l, vs in values.items()}
    vals = {l: vs for l, vs in vals.items() if vs}
    refs = [v for v in references if ok(v)]
    if not vals:
        return []
    if cap is None:
        med = {l: float(np.median(vs)) for l, vs in vals.items()}
        centre = float(np.median(list(med.values())))
        far = {l for l, m in med.items() if log and m > centre * spread}
        keep = [v for l, vs in vals.items() if l not in far for v in vs] + refs
        hi = max(keep) if keep else max(refs or [1.0])
    else:
        keep = [v for vs in vals.values() for v in vs if v <= cap] + refs
        hi = min(max(keep), cap) if keep else cap
    keep = [v for v in keep if v <= hi] or [hi]
    lo = min(keep + refs)
    if log:
        ax.set_ylim(lo / pad, hi * pad)
    else:
        d = (hi - lo) * 0.08 or 1.0
        ax.set_ylim(lo - d, hi + d)
    ax._privrace_clipped = True
    top = ax.get_ylim()[1]
    return [l for l, vs in vals.items() if max(vs) > top]


def _text_height_in(fig, artist):
    bb = artist.get_window_extent(renderer=fig.canvas.get_renderer())
    return bb.height / fig.dpi, bb.width / fig.dpi


def finish(fig, axes, title=None, note=None, legend=True, handles=None, labels=None, where="auto",
           order="style", ncol=None, legend_title=None):
    """Lay the figure out: suptitle, one legend for the whole figure outside the panels (below;
    to the right for a single panel with many entries), an optional note under it, and every
    panel's data area at least MIN_AXES. Axes-level legends are removed."""
    axes = [ax for ax in axes if ax is not None]
    for ax in axes:
        if ax.get_legend():
            ax.get_legend().remove()
        _wrap_title(fig, ax)
    any_off = False
    for ax in axes:
        if getattr(ax, "_privrace_clipped", False):
            any_off |= mark_offscale(ax)
    if handles is None:
        handles, labels = _dedupe_handles(axes, order)
    else:
        handles, labels = list(handles), list(labels)
    if any_off:
        h = offscale_handle()
        handles.append(h)
        labels.append(h.get_label())
    W, H = fig.get_size_inches()
    if where == "auto":
        where = "right" if len(axes) == 1 and len(labels) > 3 else "below"
    sup = fig.suptitle(title) if title else None
    title_h = (_text_height_in(fig, sup)[0] + 0.15) if sup else 0.0
    note_art = None
    leg = None
    leg_h = leg_w = 0.0
    if legend and labels:
        if where == "right":
            leg = fig.legend(handles, labels, loc="center left", ncol=ncol or 1, title=legend_title,
                             bbox_to_anchor=(1.0, 0.5), borderaxespad=0.2)
            leg_h, leg_w = _text_height_in(fig, leg)
        else:
            n = ncol or min(len(labels), max(1, int(W // 2.2)))
            while True:
                leg = fig.legend(handles, labels, loc="lower center", ncol=n, title=legend_title,
                                 bbox_to_anchor=(0.5, 0.0), borderaxespad=0.2)
                leg_h, leg_w = _text_height_in(fig, leg)
                if leg_w <= W - 0.1 or n == 1:
                    break
                leg.remove()
                n -= 1
    note_h = 0.0
    if note:
        wrap_w = W if where != "right" else W + leg_w
        note_art = fig.text(0.01, 0.0, _wrap(note, wrap_w), ha="left", va="bottom", fontsize=MIN_FONT)
        note_h = _text_height_in(fig, note_art)[0] + 0.05
    for _ in range(4):
        if where == "right":
            newW, newH = W + leg_w + 0.15, H + title_h + note_h
            rect = (0, note_h / newH, W / newW, 1)
        else:
            newW, newH = W, H + title_h + leg_h + note_h + 0.1
            rect = (0, (leg_h + note_h + 0.1) / newH, 1, 1)
        fig.set_size_inches(newW, newH)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig.tight_layout(rect=rect)
        if leg is not None:
            if where == "right":
                leg.set_bbox_to_anchor((rect[2], 0.5 * (rect[1] + rect[3])), transform=fig.transFigure)
            else:
                leg.set_bbox_to_anchor((0.5, note_h / newH), transform=fig.transFigure)
        # tight_layout leaves room for the suptitle (at the top, its default place) itself.
        # Every data area at least MIN_AXES: grow the panel part of the figure if not.
        w_min = min(ax.get_position().width * newW for ax in axes)
        h_min = min(ax.get_position().height * newH for ax in axes)
        if w_min >= MIN_AXES[0] and h_min >= MIN_AXES[1]:
            break
        if w_min < MIN_AXES[0]:
            W += (MIN_AXES[0] - w_min + 0.05) * len(_columns(axes))
        if h_min < MIN_AXES[1]:
            H += (MIN_AXES[1] - h_min + 0.05) * len(_rows(axes))
    return fig


def _wrap_title(fig, ax):
    """Wrap a panel title wider than its panel: each line kept; a long line broken first before
    its parenthesised parts, then at spaces, until it fits."""
    import re
    import textwrap
    t = ax.title
    text = t.get_text()
    if not text:
        return
    r = fig.canvas.get_renderer()
    width = ax.get_window_extent(renderer=r).width * 1.02

    def fits(candidate):
        t.set_text(candidate)
        return t.get_window_extent(renderer=r).width <= width

    if fits(text):
        return
    lines = []
    for line in text.split("\n"):
        if fits(line):
            lines.append(line)
            continue
        chunks = re.split(r" (?=\()", line)  # "name (d = 8, N = 9.5k) (note)" -> name | (d ...) | (note)
        packed, cur = [], ""
        for c in chunks:
            if cur and not fits(cur + " " + c):
                packed.append(cur)
                cur = c
            else:
                cur = (cur + " " + c) if cur else c
        packed.append(cur)
        for piece in packed:
            n = len(piece)
            while n > 12 and not fits(textwrap.fill(piece, n)):
                n -= 2
            lines.append(textwrap.fill(piece, n))
    t.set_text("\n".join(lines))


def _columns(axes):
    return sorted({round(ax.get_position().x0, 3) for ax in axes})


def _rows(axes):
    return sorted({round(ax.get_position().y0, 3) for ax in axes})


def _wrap(text, width_in):
    import textwrap
    chars = max(40, int(width_in * 72 / (MIN_FONT * 0.5)))  # ~0.5 em per character
    return "\n".join(textwrap.fill(p, chars) for p in text.split("\n"))


# ---- the rules, checked on save ------------------------------------------------------------
def check(fig):
    """Problems of a laid-out figure against the rules at the top of this module ([] if none)."""
    problems = []
    r = fig.canvas.get_renderer()
    W, H = fig.get_size_inches()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_navigate()]
    for ax in axes:
        w, h = ax.get_position().width * W, ax.get_position().height * H
        if w < MIN_AXES[0] - 1e-3 or h < MIN_AXES[1] - 1e-3:
            problems.append(f"panel '{ax.get_title()}' is {w:.2f} x {h:.2f} in (< {MIN_AXES[0]} x {MIN_AXES[1]})")
    rows = {}
    for ax in axes:
        rows.setdefault(round(ax.get_position().y0, 2), []).append(ax)
    if rows and max(len(v) for v in rows.values()) > MAX_COLS:
        problems.append(f"{max(len(v) for v in rows.values())} panels in a row (> {MAX_COLS})")
    for t in fig.findobj(matplotlib.text.Text):
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT - 1e-6:
            problems.append(f"text {t.get_text()[:40]!r} at {t.get_fontsize():.1f} pt (< {MIN_FONT})")
    legends = list(fig.legends) + [ax.get_legend() for ax in axes if ax.get_legend()]
    if len(legends) > 1:
        problems.append(f"{len(legends)} legends (one per figure)")
    for leg in legends:
        lb = leg.get_window_extent(renderer=r)
        for ax in axes:
            ab = ax.get_window_extent(renderer=r)
            if lb.overlaps(ab):
                problems.append(f"the legend overlaps panel '{ax.get_title()}'")
        seen = {}
        for h, t in zip(leg.legendHandles, [t.get_text() for t in leg.get_texts()]):
            if isinstance(h, Line2D):
                look = (matplotlib.colors.to_hex(h.get_color()), h.get_marker(), h.get_linestyle(),
                        str(h.get_markerfacecolor()) == "none")
                if look in seen and ALIASES.get(seen[look], seen[look]) != ALIASES.get(t, t):
                    problems.append(f"legend entries {seen[look]!r} and {t!r} look the same")
                seen[look] = t
    return problems


def is_quick(fig):
    """Whether the figure says it was drawn from --quick records ("[quick]" or "(quick)" in a text)."""
    return any(("[quick]" in t.get_text() or "(quick)" in t.get_text()) for t in fig.findobj(matplotlib.text.Text))


def save(fig, out_dir, name, formats=("png", "pdf")):
    """Check the figure against the rules, write out_dir/name.png and .pdf at DPI, close it.
    A figure of quick records carries "privrace profile: quick" in its PNG Description (so
    scripts/publish_figures.sh never publishes it). Returns the paths written."""
    problems = check(fig)
    if problems:
        msg = f"figure {name}: " + "; ".join(problems)
        if os.environ.get("PRIVRACE_PLOT_STRICT"):
            plt.close(fig)
            raise ValueError(msg)
        warnings.warn(msg)
    profile = "quick" if is_quick(fig) else "full"
    os.makedirs(out_dir or ".", exist_ok=True)
    paths = []
    for ext in formats:
        p = os.path.join(out_dir, f"{name}.{ext}")
        meta = {"Description": f"privrace profile: {profile}"} if ext == "png" else None
        fig.savefig(p, dpi=DPI, metadata=meta)
        paths.append(p)
    plt.close(fig)
    return paths

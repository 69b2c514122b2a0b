#!/usr/bin/env python3
"""A stage-by-stage cost model of `privrace sketch` on K ranks x T threads, fitted on local runs.

usage: scripts/scaling_model.py RUNS_DIR [--device DIR] [--cores C] [--net-gbs B] [--c-elem US]
                                [--threads-per-rank T] [--plot PNG] [--markdown]

RUNS_DIR holds the JSON lines of scripts/scaling_model_measure.sh (runs.jsonl, or any *.jsonl
with "case" fields). --device DIR adds the 16-core runs of scripts/scaling_suite.sh (skin.jsonl,
skin10.jsonl, slashdot.jsonl, mpi.jsonl) as a second check of the fitted model, predicted with
the cores of their header line. Prints the fitted constants, the model beside every measured
configuration (medians over repetitions), and the predictions for 16, 64 and 256 ranks on a
Friendster-size graph and a 10^9 x 10 table; --plot draws measured against predicted and the
predictions. Needs numpy and matplotlib (Debian: /usr/bin/python3 with python3-numpy and
python3-matplotlib).

The model (rank 0's critical path; every stage is a `--timings` field, `other` is what the
command's `total` holds beyond them):
  o_par = max(1, K T / C), o_ser = max(1, K / C), o_tail = max(1, T / C)   (C cores in all)
  count_pass = [K > 1] c_scan S / K o_ser            read = c_read S / K o_ser
  allocate   = [T > 1] c_page 8 R W o_par            fill = c_fill(d) N R / (K T) o_par
  c_fill(d) = f0 + f1 d                               merge = [T > 1] c_merge R W
  reduce     = [K > 1] ceil(log2 K) 8 R W c_red       (here; over a network of B bytes/s a rank:
                                                      ceil(log2 K) (8 R W / B + c_merge R W))
               from 4 ranks and 2^18 counts on, the default reduce-scatter + gather instead:
               (K-1)/K (8 R W + F) c_red here; (K-1)/K (8 R W + F) / B + (K-1)/K c_merge R W over
               a network (the gather moves the encoded slices, F bytes in all)
  noise      = n0 + c_noise R W / T o_tail            encode = e0 + c_enc R W / T o_tail
               with the reduce-scatter each rank noises and encodes its slice: both / K, and
               rank 0 writes the gathered blocks as they are (no decode)
  write + fsync = w0 + c_write F (F: file bytes)      other = u1 (one process) or uK (mpirun)
  graphs: graph_read = c_gread E_file / K o_ser;  build = (c_page 8 R W + (c_node R N + c_elem E) / K) / T o_par
  split graphs (the design being built): + exchange = 8 E / K (K - 1) / K / B; reduce as for tables
S: input bytes, N: records (nodes), d: columns, E: stored neighbours, R x W: the sketch.
"""
import argparse
import glob
import json
import math
import os
import sys
from collections import defaultdict

try:
    import numpy as np
except ImportError:
    sys.exit("scaling_model.py: needs numpy (Debian: python3-numpy; run with /usr/bin/python3)")

STAGES = ["count_pass", "read", "allocate", "fill", "merge", "reduce", "noise", "encode", "write_fsync", "other"]
GRAPH_STAGES = ["graph_read", "build", "noise", "encode", "write_fsync", "other"]
# The data sets of the 16-core runs (scripts/scaling_suite.sh), which its lines do not describe.
DEVICE_CASES = {
    "skin": {"input_bytes": 3400818, "dim": 3, "edges": 0},
    "skin10": {"input_bytes": 34008180, "dim": 3, "edges": 0},
    "slashdot": {"input_bytes": 0, "dim": 0, "edges": 948464},  # the gzip size comes from local runs
}


def fail(msg):
    sys.exit(f"scaling_model.py: {msg}")


def read_lines(path, case=None, header_cores=None):
    runs, cores = [], header_cores
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"{path}:{n}: not JSON ({e})")
            if "sketch" not in o:
                cores = o.get("cores", cores)
                continue
            if not isinstance(o["sketch"], dict):
                fail(f"{path}:{n}: a run without timings")
            o.setdefault("ranks", o["sketch"].get("ranks", 1))
            o.setdefault("launcher", "mpirun" if "ranks" in o["sketch"] else "none")
            if case is not None:
                o["case"] = case
                for k, v in DEVICE_CASES.get(case, {}).items():
                    o.setdefault(k, v)
            if "case" not in o:
                fail(f"{path}:{n}: no \"case\" field (not a scripts/scaling_model_measure.sh line)")
            o["cores"] = cores
            runs.append(o)
    return runs


def stages_of(run):
    s = run["sketch"]
    g = lambda k: float(s.get(k, 0.0) or 0.0)
    out = {"total": g("total")}
    if run.get("edges", 0) > 0:
        out.update(graph_read=g("graph_read"), build=g("build"), noise=g("noise"), encode=g("encode"),
                   write_fsync=g("write") + g("fsync"))
        out["other"] = out["total"] - sum(out[k] for k in GRAPH_STAGES[:-1])
    else:
        for k in STAGES[:-2]:
            out[k] = g(k)
        out["write_fsync"] = g("write") + g("fsync")
        # `build` covers everything before the noise: what it holds beyond the itemised stages
        # (MPI set-up of the pieces, waiting at the barriers, validation) joins `other`.
        out["other"] = out["total"] - sum(out[k] for k in STAGES[:-1])
    return out


def params_of(run):
    s = run["sketch"]
    return {"N": float(s["points"]), "R": float(s["rows"]), "W": float(s["width"]), "d": float(run.get("dim", 0)),
            "S": float(run.get("input_bytes", 0)), "E": float(run.get("edges", 0)), "F": float(s.get("file_bytes", 0)),
            "K": int(run["ranks"]), "T": int(run["threads"]), "C": int(run["cores"] or 1)}


def group(runs):
    """Median of every stage over the repetitions of one (case, ranks, threads)."""
    by = defaultdict(list)
    for r in runs:
        by[(r["case"], int(r["ranks"]), int(r["threads"]))].append(r)
    out = []
    for key, rs in sorted(by.items()):
        st = [stages_of(r) for r in rs]
        med = {k: float(np.median([x[k] for x in st])) for k in st[0]}
        out.append({"key": key, "n": len(rs), "p": params_of(rs[0]), "m": med,
                    "wall": float(np.median([r.get("wall_s", float("nan")) for r in rs])),
                    "load": float(np.median([r.get("load1", float("nan")) for r in rs]))})
    return out


def factors(p):
    K, T, C = p["K"], p["T"], p["C"]
    return max(1.0, K * T / C), max(1.0, K / C), max(1.0, T / C)


def lsq(xs, ys, intercept=False):
    """Least squares of y on x (through the origin unless intercept), coefficients clipped at 0."""
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    if len(x) == 0:
        return (0.0, 0.0) if intercept else 0.0
    if intercept:
        A = np.vstack([np.ones_like(x), x]).T
        (a, b), *_ = np.linalg.lstsq(A, y, rcond=None)
        if b < 0 or a < 0:  # fall back to a line through the origin or a constant
            b2 = max(0.0, float(x @ y / (x @ x))) if x @ x > 0 else 0.0
            return (max(0.0, float(np.mean(y - b2 * x))), b2) if a < 0 else (max(0.0, float(np.mean(y))), 0.0)
        return float(a), float(b)
    return max(0.0, float(x @ y / (x @ x))) if x @ x > 0 else 0.0


def fit(groups):
    tab = [g for g in groups if g["p"]["E"] == 0]
    gra = [g for g in groups if g["p"]["E"] > 0]
    c = {}
    xs, ys = [], []
    for g in tab:
        p, m = g["p"], g["m"]
        op, os_, ot = factors(p)
        if p["K"] > 1:
            xs.append(p["S"] / p["K"] * os_), ys.append(m["count_pass"])
    c["c_scan"] = lsq(xs, ys)
    c["c_read"] = lsq([g["p"]["S"] / g["p"]["K"] * factors(g["p"])[1] for g in tab], [g["m"]["read"] for g in tab])
    al = [g for g in tab if g["p"]["T"] > 1]
    c["c_page"] = lsq([8 * g["p"]["R"] * g["p"]["W"] * factors(g["p"])[0] for g in al], [g["m"]["allocate"] for g in al])
    c["c_merge"] = lsq([g["p"]["R"] * g["p"]["W"] for g in al], [g["m"]["merge"] for g in al])
    # fill per record-row: f0 + f1 d, from x0 = N R / (K T) o_par and x1 = x0 d
    A = np.array([[1.0, g["p"]["d"]] for g in tab]) * np.array(
        [[g["p"]["N"] * g["p"]["R"] / (g["p"]["K"] * g["p"]["T"]) * factors(g["p"])[0]] for g in tab])
    y = np.array([g["m"]["fill"] for g in tab])
    if len({g["p"]["d"] for g in tab}) >= 2:
        (f0, f1), *_ = np.linalg.lstsq(A, y, rcond=None)
    else:
        f0, f1 = lsq(A[:, 0], y), 0.0
    c["f0"], c["f1"] = float(f0), float(f1)
    red = [g for g in tab if g["p"]["K"] > 1]  # local runs: 2-3 ranks, the tree reduce
    c["c_red"] = lsq([math.ceil(math.log2(g["p"]["K"])) * 8 * g["p"]["R"] * g["p"]["W"] for g in red],
                     [g["m"]["reduce"] for g in red])
    allg = tab + gra
    rw_t = lambda g: g["p"]["R"] * g["p"]["W"] / g["p"]["T"] * factors(g["p"])[2]
    c["n0"], c["c_noise"] = lsq([rw_t(g) for g in allg], [g["m"]["noise"] for g in allg], intercept=True)
    c["e0"], c["c_enc"] = lsq([rw_t(g) for g in allg], [g["m"]["encode"] for g in allg], intercept=True)
    c["w0"], c["c_write"] = lsq([g["p"]["F"] for g in allg], [g["m"]["write_fsync"] for g in allg], intercept=True)
    one = [g["m"]["other"] for g in tab if g["p"]["K"] == 1]
    many = [g["m"]["other"] for g in tab if g["p"]["K"] > 1]
    c["u1"] = float(np.median(one)) if one else 0.0
    c["uK"] = float(np.median(many)) if many else c["u1"]
    if gra:
        c["c_gread"] = lsq([g["p"]["E"] for g in gra], [g["m"]["graph_read"] for g in gra])
        # build - pages = (c_node R N + c_elem E) / T: one graph gives one equation per thread count,
        # so c_elem is an assumption (--c-elem), c_node is fitted
        ys = [g["m"]["build"] - c["c_page"] * 8 * g["p"]["R"] * g["p"]["W"] / g["p"]["T"] * factors(g["p"])[0] for g in gra]
        c["c_node"] = lsq([g["p"]["R"] * g["p"]["N"] / g["p"]["T"] * factors(g["p"])[0] for g in gra],
                          [y - C_ELEM * g["p"]["E"] / g["p"]["T"] * factors(g["p"])[0] for y, g in zip(ys, gra)])
    return c


C_ELEM = 0.2e-6  # seconds per stored neighbour (assumption, see --c-elem)


SCATTER_MIN_RANKS, SCATTER_MIN_COUNTS = 4, 1 << 18  # src/cli/distributed.cpp's default rule


def scatter_applies(K, R, W):
    return K >= SCATTER_MIN_RANKS and R * W >= SCATTER_MIN_COUNTS


def reduce_seconds(c, K, R, W, net_bps=None, file_bytes=None):
    """The sum of the ranks' counts at rank 0. The tree reduce moves and adds the whole array
    ceil(log2 K) times; the reduce-scatter (recursive halving) moves (K-1)/K of it and adds (K-1)/K
    of it on every rank at once, and the gather moves (K-1)/K of the encoded slices (F bytes in
    all; 8 R W if F is not given) to rank 0. Here: the fitted c_red a byte and pass; over a
    network: the bytes at B plus the adds at c_merge."""
    if K <= 1:
        return 0.0
    array = 8 * R * W
    if scatter_applies(K, R, W):
        share = (K - 1) / K
        moved = share * (array + (file_bytes if file_bytes is not None else array))
        return moved / net_bps + share * c["c_merge"] * R * W if net_bps else moved * c["c_red"]
    steps = math.ceil(math.log2(K))
    return steps * (array / net_bps + c["c_merge"] * R * W if net_bps else array * c["c_red"])


def predict_table(c, p, net_bps=None):
    op, os_, ot = factors(p)
    K, T, R, W = p["K"], p["T"], p["R"], p["W"]
    out = {
        "count_pass": c["c_scan"] * p["S"] / K * os_ if K > 1 else 0.0,
        "read": c["c_read"] * p["S"] / K * os_,
        "allocate": c["c_page"] * 8 * R * W * op if T > 1 else 0.0,
        "fill": (c["f0"] + c["f1"] * p["d"]) * p["N"] * R / (K * T) * op,
        "merge": c["c_merge"] * R * W if T > 1 else 0.0,
        "reduce": reduce_seconds(c, K, R, W, net_bps, p["F"]),
        "write_fsync": c["w0"] + c["c_write"] * p["F"],
        "other": c["uK"] if K > 1 else c["u1"],
    }
    out.update(tail_seconds(c, K, T, R, W, ot))
    out["total"] = sum(out.values())
    return out


def tail_seconds(c, K, T, R, W, ot):
    """Noise and encoding: at rank 0, or, with the reduce-scatter, each rank its slice (1/K of
    the counts, in parallel); rank 0 writes the gathered encoded blocks without decoding them."""
    k = K if scatter_applies(K, R, W) else 1
    out = {"noise": c["n0"] + c["c_noise"] * R * W / (T * k) * ot,
           "encode": c["e0"] + c["c_enc"] * R * W / (T * k) * ot}
    return out


def predict_graph(c, p, net_bps=None, split=False):
    """One process (split=False, as today), or the split design on K ranks: each rank reads 1/K of
    the edge list, sends every edge to the owner of its node (all-to-all, 8 bytes an edge), MinHashes
    its own N/K nodes into a full R x W array, and the arrays are reduced to rank 0."""
    K, T, R, W = p["K"], p["T"], p["R"], p["W"]
    op, os_, ot = factors(p)
    out = {"graph_read": c["c_gread"] * p.get("Efile", p["E"]) / K * os_}
    if split and K > 1:  # every stored neighbour as an 8-byte (node, neighbour) record, (K-1)/K of them sent
        out["exchange"] = 8 * p["E"] / K * (K - 1) / K / net_bps
    # one R x W array a rank, its pages populated by the T threads together
    out["build"] = c["c_page"] * 8 * R * W / T * op + (c["c_node"] * R * p["N"] + C_ELEM * p["E"]) / (K * T) * op
    if split and K > 1:
        out["reduce"] = reduce_seconds(c, K, R, W, net_bps, p["F"])
        out.update(tail_seconds(c, K, T, R, W, ot))
    else:
        out.update(tail_seconds(c, 1, T, R, W, ot))
    out["write_fsync"] = c["w0"] + c["c_write"] * p["F"]
    out["other"] = c["u1"]
    out["total"] = sum(out.values())
    return out


def predict(c, p):
    if p["E"] > 0 and "c_gread" not in c:
        fail("graph runs to check but no local graph runs to fit (measure the slashdot case)")
    return predict_graph(c, p) if p["E"] > 0 else predict_table(c, p)


UNITS = {
    "c_scan": ("count pass, per input byte", "ns/B", 1e9), "c_read": ("read (parse), per input byte", "ns/B", 1e9),
    "c_page": ("page population, per byte of counts", "ns/B", 1e9),
    "f0": ("fill, per record-row", "ns", 1e9), "f1": ("fill, per record-row and column", "ns", 1e9),
    "c_merge": ("thread merge, per count", "ns", 1e9),
    "c_red": ("MPI reduce on this machine, per byte and step", "ns/B", 1e9),
    "n0": ("noise set-up (exact sampler tables)", "ms", 1e3), "c_noise": ("noise, per count", "ns", 1e9),
    "e0": ("encode, fixed", "ms", 1e3), "c_enc": ("encode, per count", "ns", 1e9), "w0": ("write + fsync, fixed", "ms", 1e3),
    "c_write": ("write + fsync, per file byte", "ns/B", 1e9),
    "u1": ("other, one process", "ms", 1e3), "uK": ("other, under mpirun", "ms", 1e3),
    "c_gread": ("graph read (gzip edge list to CSR), per edge", "ns", 1e9),
    "c_node": ("graph build, per node-row (densified MinHash + increment)", "ns", 1e9),
}


def figures(local):
    """The two speed figures of the issue, from the local runs (medians over repetitions)."""
    def med(case, k, t, f):
        xs = [f(r) for r in local if r["case"] == case and int(r["ranks"]) == k and int(r["threads"]) == t]
        return (float(np.median(xs)), len(xs)) if xs else (float("nan"), 0)
    print("\nspeed figures (medians):")
    r1, n1 = med("table", 1, 1, lambda r: r["sketch"]["read"])
    r2, n2 = med("table", 2, 1, lambda r: r["sketch"]["read"])
    print(f"  10^7 x 10 CSV read stage, 2 ranks x 1 thread (rank 0) / 1 rank: {r2:.3f} / {r1:.3f} s = {r2 / r1:.0%} "
          f"(runs {n2}, {n1}; target at most 55%: {'pass' if r2 / r1 <= 0.55 else 'FAIL'})")
    for what, f in (("total", lambda r: r["sketch"]["total"]), ("wall", lambda r: r.get("wall_s", float("nan")))):
        a2, m2 = med("skin", 2, 1, f)
        a1, m1 = med("skin", 1, 2, f)
        print(f"  skin R = W = 1000, 2 ranks x 1 thread / 1 process x 2 threads, {what}: {a2:.3f} / {a1:.3f} s = "
              f"{a2 / a1:.2f}x (runs {m2}, {m1}; target at most 1.3x: {'pass' if a2 / a1 <= 1.3 else 'FAIL'})")


def main():
    global C_ELEM
    ap = argparse.ArgumentParser(description="Fit and check the scaling model (see the module docstring).",
                                 usage=__doc__.split("\n\n")[1].replace("usage: ", "", 1))
    ap.add_argument("runs_dir")
    ap.add_argument("--device", help="folder of the 16-core scaling_suite.sh runs")
    ap.add_argument("--cores", type=float, default=0, help="effective cores of the local runs (default: fitted)")
    ap.add_argument("--net-gbs", type=float, default=10.0, help="assumed network bandwidth a rank, GB/s (default 10)")
    ap.add_argument("--threads-per-rank", type=int, default=16, help="threads (and cores) a rank in the predictions")
    ap.add_argument("--c-elem", type=float, default=0.2, help="assumed graph cost per stored neighbour, us (default 0.2)")
    ap.add_argument("--plot", help="write the figure here (PNG)")
    ap.add_argument("--markdown", action="store_true", help="print the check tables as Markdown")
    a = ap.parse_args()
    C_ELEM = a.c_elem * 1e-6
    if not os.path.isdir(a.runs_dir):
        fail(f"{a.runs_dir} is not a folder")
    files = sorted(glob.glob(os.path.join(a.runs_dir, "*.jsonl")))
    if not files:
        fail(f"no *.jsonl in {a.runs_dir} (make them with scripts/scaling_model_measure.sh)")
    local = [r for f in files for r in read_lines(f)]
    if not local:
        fail(f"no runs in {a.runs_dir}")
    if any(not r["cores"] for r in local) and not a.cores:
        fail("the runs name no core count (no header line): pass --cores")
    lg = group(local)
    # The cores the local runs really had: other jobs share the machine, so the effective core count
    # C is fitted (the one whose constants predict the local totals best, least squares of the logs)
    # unless --cores fixes it.
    best = None
    for ce in ([float(a.cores)] if a.cores else np.arange(1.0, local[0]["cores"] + 1e-9, 0.05)):
        for g in lg:
            g["p"]["C"] = float(ce)
        cc = fit(lg)
        err = float(np.mean([math.log(predict(cc, g["p"])["total"] / g["m"]["total"]) ** 2 for g in lg]))
        if best is None or err < best[0]:
            best = (err, float(ce), cc)
    _, c_eff, c = best
    for g in lg:
        g["p"]["C"] = c_eff
    loads = [r.get("load1") for r in local if r.get("load1") is not None]
    print(f"local runs: {len(local)} on {local[0]['cores']} cores, load average (1 min) "
          f"{min(loads):.1f}-{max(loads):.1f}, median {float(np.median(loads)):.1f}; effective cores C = {c_eff:.2f}"
          + (" (given)" if a.cores else " (fitted)") if loads else "")
    print("fitted constants (local runs, medians over repetitions):")
    for k, v in c.items():
        name, unit, scale = UNITS[k]
        print(f"  {k:8s} = {v * scale:10.3f} {unit:5s} {name}")
    print(f"  c_elem   = {C_ELEM * 1e9:10.3f} ns    graph build, per stored neighbour (assumption)")

    def show(groups, title):
        print(f"\n{title}")
        if a.markdown:
            print("\n| case | K x T | runs | measured total s | model s | error | read or graph read, measured / model "
                  "| fill or build | reduce | noise + encode + write |\n|---|---|---|---|---|---|---|---|---|---|")
        else:
            print(f"  {'case':9s} {'K x T':6s} {'C':>5s} {'meas s':>8s} {'model s':>8s} {'error':>7s}   stages measured / model")
        errs = []
        for g in groups:
            pr = predict(c, g["p"])
            e = pr["total"] / g["m"]["total"] - 1
            errs.append(abs(e))
            if a.markdown:
                gr = g["p"]["E"] > 0
                cell = lambda k: f"{g['m'].get(k, 0):.3f} / {pr.get(k, 0):.3f}"
                tail = lambda d: sum(d.get(k, 0) for k in ("noise", "encode", "write_fsync"))
                print(f"| {g['key'][0]} | {g['key'][1]} x {g['key'][2]} | {g['n']} | {g['m']['total']:.3f} | {pr['total']:.3f} "
                      f"| {e:+.0%} | {cell('graph_read' if gr else 'read')} | {cell('build' if gr else 'fill')} "
                      f"| {cell('reduce') if not gr else '-'} | {tail(g['m']):.3f} / {tail(pr):.3f} |")
                continue
            names = GRAPH_STAGES[:-1] if g["p"]["E"] > 0 else ["read", "fill", "reduce", "noise"]
            st = ", ".join(f"{k} {g['m'][k]:.3f}/{pr[k]:.3f}" for k in names)
            print(f"  {g['key'][0]:9s} {g['key'][1]}x{g['key'][2]:<4d} {g['p']['C']:5.2g} {g['m']['total']:8.3f} "
                  f"{pr['total']:8.3f} {e:+7.1%}   {st}")
        print(f"  max |error| {max(errs):.1%}, median {float(np.median(errs)):.1%}")
        return errs

    show(lg, "local runs (the fit's own data)")
    figures(local)
    dg = []
    if a.device:
        gz = next((r["input_bytes"] for r in local if r["case"] == "slashdot"), 0)
        dev = []
        for name in ("skin", "skin10", "slashdot", "mpi"):
            path = os.path.join(a.device, f"{name}.jsonl")
            if os.path.exists(path):
                rs = read_lines(path, case="skin10" if name == "mpi" else name)
                for r in rs:
                    if name == "slashdot":
                        r["input_bytes"] = gz
                    if name == "mpi":
                        r["case"] = "skin10/mpi"
                dev += rs
        if not dev:
            fail(f"no skin/skin10/slashdot/mpi .jsonl in {a.device}")
        for r in dev:
            r.setdefault("dim", 3)
        dg = group(dev)
        show(dg, "16-core runs (a second check: constants from the local runs, C from their header)")

    # Predictions: T threads a rank on T cores each, one rank a node.
    T = a.threads_per_rank
    net = a.net_gbs * 1e9
    # Friendster: 65.6M nodes, 1.8B undirected edges in the file, 3.6B stored neighbours (both
    # directions), R = 2000, W = 500k (10^9 counts, 8 GB as int64), 1.7 bytes a count in the file.
    fr = {"N": 65.6e6, "E": 3.6e9, "Efile": 1.8e9, "R": 2000.0, "W": 500000.0, "d": 0.0, "S": 0.0,
          "F": 1.7 * 2000 * 500000, "T": T}
    # 10^9 x 10 table as plain CSV at 95 bytes a row (6 decimals, as the measured 10^7 x 10 file), R = W = 1000.
    tb = {"N": 1e9, "d": 10.0, "S": 95.0 * 1e9, "R": 1000.0, "W": 1000.0, "E": 0.0, "F": 1.6e6, "T": T}
    print(f"\npredictions: {T} threads a rank on {T} cores, one rank a node, network {a.net_gbs:g} GB/s a rank "
          f"(assumed), c_elem {a.c_elem:g} us (assumed)")
    preds = {"graph": {}, "table": {}}
    for K in (1, 16, 64, 256):
        pg = predict_graph(c, dict(fr, K=K, C=K * T), net, split=True) if "c_gread" in c else {"total": float("nan")}
        pt = predict_table(c, dict(tb, K=K, C=K * T), net)
        preds["graph"][K], preds["table"][K] = pg, pt
        print(f"  K = {K:3d}  Friendster-size graph (split design): total {pg['total']:8.1f} s = "
              + ", ".join(f"{k} {v:.2f}" for k, v in pg.items() if k != "total"))
        print(f"           10^9 x 10 table, R = W = 1000:        total {pt['total']:8.2f} s = "
              + ", ".join(f"{k} {v:.3f}" for k, v in pt.items() if k != "total"))

    if a.plot:
        plot(a.plot, c, lg, dg, preds)


def plot(path, c, lg, dg, preds):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("--plot needs matplotlib (Debian: python3-matplotlib)")
    fig, ax = plt.subplots(1, 2, figsize=(10, 4.2), dpi=90)
    colors = {"skin": "C0", "table": "C1", "slashdot": "C2", "skin10": "C3", "skin10/mpi": "C4"}
    for groups, marker, src in ((lg, "o", "2-core VM"), (dg, "^", "16 cores")):
        for case in sorted({g["key"][0] for g in groups}):
            gs = [g for g in groups if g["key"][0] == case]
            ax[0].scatter([g["m"]["total"] for g in gs], [predict(c, g["p"])["total"] for g in gs], marker=marker,
                          color=colors.get(case, "k"), label=f"{ {'table': '10^7 x 10 CSV'}.get(case, case)} ({src})", s=28)
    lim = [0.1, 40]
    ax[0].plot(lim, lim, "k-", lw=0.8)
    ax[0].plot(lim, [x * 1.3 for x in lim], "k:", lw=0.6)
    ax[0].plot(lim, [x / 1.3 for x in lim], "k:", lw=0.6)
    ax[0].set(xscale="log", yscale="log", xlim=lim, ylim=lim, xlabel="measured total (s)", ylabel="model total (s)",
              title="model against runs (dotted: +-30%)")
    ax[0].legend(fontsize=7)
    Ks = sorted(preds["graph"])
    for kind, label, col in (("graph", "Friendster-size graph, R=2000, W=500k (split design)", "C2"),
                             ("table", "10^9 x 10 table, R=W=1000", "C1")):
        tot = [preds[kind][k]["total"] for k in Ks]
        ax[1].plot(Ks, tot, "o-", color=col, label=label)
        tail = [sum(preds[kind][k][s] for s in ("noise", "encode", "write_fsync", "reduce") if s in preds[kind][k])
                for k in Ks]
        ax[1].plot(Ks, tail, "x--", color=col, lw=0.8, label="  of which reduce + rank 0's tail")
    ax[1].set(xscale="log", yscale="log", xlabel="ranks (16 threads each, one a node)", ylabel="predicted seconds",
              title="predictions (constants of the loaded 2-core VM)")
    ax[1].set_xticks(Ks)
    ax[1].set_xticklabels([str(k) for k in Ks])
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")


if __name__ == "__main__":
    main()

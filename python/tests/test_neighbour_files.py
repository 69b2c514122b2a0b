"""Neighbouring inputs give released files that differ only where the mechanism allows.

A released file must be differentially private as a whole, not only its counts. For every front
end and release path this grey-box test builds the file of a data set D and of neighbours D'
(one record removed, one record added, one record replaced for --neighbors replace, one edge
added or removed for edge lists) with the same randomness, and checks, byte for byte:

1. the headers: every field is identical except an allow-list written here (the noisy and derived
   fields; the project's own classification of fields is deliberately not used), both on the
   parsed header (field by field, in order) and on the raw header text with those fields' values
   masked (so the header length may differ only through them);
2. the counts: with the same --seed the noise is identical, so noisy(D) - noisy(D') is the exact
   difference, which must stay within the header's declared sensitivity_l1 / sensitivity_l2, over
   random neighbours and constructed worst cases; the bound must be reached where it is tight
   (L1 = R for plain RACE), so the test cannot pass vacuously;
3. nothing else: magic, version and the payload's block structure agree; the file sizes differ
   only through the payload and the masked fields.

Case 1 and 3 run twice: with --seed 7 on both files (the reproducible path) and with
--hash-seed 7 alone (the real release path: public hash functions, fresh noise from the OS).
"""
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import struct
import subprocess
import zlib
from typing import Callable, Optional

import numpy as np
import pytest

import privrace

# The fields a released header may hold that depend on the records through the noise only:
# noisy values and what is derived from them. Everything else must be byte-identical on
# neighbouring inputs. Written out here on purpose (independent of the writer's own table).
ALLOWED = frozenset({"n_hat", "privacy.count", "privacy.noise_id"})
# Their leaf names, for masking the raw header text.
_MASKED_KEYS = sorted({p.rsplit(".", 1)[-1] for p in ALLOWED})
_SCALAR = r'(?:"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null)'
_MASK_RE = re.compile(r'("(?:' + "|".join(map(re.escape, _MASKED_KEYS)) + r')"\s*:\s*)' + _SCALAR)

R = 32  # sketch rows (kept small: the whole file runs in well under a minute)
W = 64
SEED = 7


# ---------------------------------------------------------------------------------------------
# The file, parsed without the project's reader (docs/file-format.md)

@dataclasses.dataclass
class RskFile:
    raw: bytes
    magic: bytes
    version: int
    header_text: str
    header: dict
    header_pairs: list  # order-preserving parse
    payload: bytes
    crc: int


class _Obj(list):
    """A JSON object as its list of (key, value) pairs, in file order."""


def parse_rsk(raw: bytes) -> RskFile:
    assert len(raw) >= 8 + 4 + 8 + 8 + 4, "file too short"
    magic = raw[:8]
    (version,) = struct.unpack_from("<I", raw, 8)
    (hlen,) = struct.unpack_from("<Q", raw, 12)
    off = 20
    header_bytes = raw[off:off + hlen]
    off += hlen
    (plen,) = struct.unpack_from("<Q", raw, off)
    off += 8
    payload = raw[off:off + plen]
    off += plen
    (crc,) = struct.unpack_from("<I", raw, off)
    off += 4
    assert off == len(raw), f"{len(raw) - off} trailing bytes after the CRC"
    assert zlib.crc32(raw[:-4]) == crc, "bad CRC"
    text = header_bytes.decode("utf-8")
    return RskFile(raw, magic, version, text, json.loads(text), json.loads(text, object_pairs_hook=_Obj), payload, crc)


def flatten(node, prefix=""):
    """[(dotted path, JSON text of the leaf)] in file order; objects are walked, arrays are leaves."""
    out = []
    for key, value in node:
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, _Obj):
            out.append((path, "{object}"))
            out += flatten(value, path)
        else:
            out.append((path, json.dumps(value, sort_keys=False)))
    return out


def header_differences(a: RskFile, b: RskFile):
    """The header fields outside ALLOWED that differ (path, value in a, value in b)."""
    fa, fb = flatten(a.header_pairs), flatten(b.header_pairs)
    diffs = []
    da, db = dict(fa), dict(fb)
    for path in sorted(set(da) | set(db)):
        if path in ALLOWED or any(path.startswith(p + ".") for p in ALLOWED):
            continue
        if da.get(path) != db.get(path):
            diffs.append((path, _short(da.get(path)), _short(db.get(path))))
    if not diffs:  # same fields and values: the order must agree too
        order_a = [p for p, _ in fa if p not in ALLOWED]
        order_b = [p for p, _ in fb if p not in ALLOWED]
        if order_a != order_b:
            diffs.append(("<field order>", order_a, order_b))
    return diffs


def _short(v, n=60):
    return v if v is None or len(v) <= n else v[:n] + "..."


def masked_header(text: str) -> str:
    return _MASK_RE.sub(r"\1#", text)


def payload_structure(payload: bytes):
    """(counts, blocks) of a version-2 payload; the per-block byte planes depend on the values."""
    counts, blocks = struct.unpack_from("<QQ", payload, 0)
    table_end = 16 + blocks * 9
    assert len(payload) >= table_end
    total = sum(struct.unpack_from("<Q", payload, 16 + 9 * b + 1)[0] for b in range(blocks))
    assert table_end + total == len(payload), "block table does not add up"
    return counts, blocks


def check_same_except_allowed(a: RskFile, b: RskFile, what: str):
    """Checks 1 (header) and 3 (everything but the payload) of the module docstring."""
    assert a.magic == b.magic == b"PRIVRACE"
    assert a.version == b.version
    diffs = header_differences(a, b)
    assert not diffs, f"{what}: header fields differ on neighbouring inputs: " + "; ".join(
        f"{p}: {x} vs {y}" for p, x, y in diffs)
    ma, mb = masked_header(a.header_text), masked_header(b.header_text)
    assert ma == mb, f"{what}: the raw header texts differ outside {sorted(ALLOWED)}"
    # The sizes: everything outside the payload and the masked values has the same length.
    fixed_a = len(a.raw) - len(a.payload) - (len(a.header_text.encode()) - len(ma.encode()))
    fixed_b = len(b.raw) - len(b.payload) - (len(b.header_text.encode()) - len(mb.encode()))
    assert fixed_a == fixed_b, f"{what}: file sizes differ beyond the payload and the noisy fields"
    if a.version == 2:
        assert payload_structure(a.payload) == payload_structure(b.payload), f"{what}: payload shapes differ"


# ---------------------------------------------------------------------------------------------
# Inputs and their neighbours

def _dense_text(x):
    return "".join(",".join("%.10g" % v for v in row) + "\n" for row in x)


def _sets_text(sets):
    return "".join(" ".join(map(str, s)) + "\n" for s in sets)


def _edges_text(edges):
    return "".join(f"{u} {v}\n" for u, v in edges)


def dense_pairs(rng, relation, n=120, d=3, lo=None, hi=None, worst=()):
    """(label, D, D') for a dense table: random removals/additions (replacements), then worst cases."""
    def point():
        if lo is not None:
            return np.round(rng.uniform(lo, hi, size=d) * 64) / 64
        return np.round(rng.normal(0.0, 1.5, size=d) * 256) / 256
    x = np.array([point() for _ in range(n)])
    pairs = []
    if relation == "replace":
        for k in range(18):
            i = int(rng.integers(n))
            y = x.copy()
            # Odd k: far away (new buckets in every row), where the domain allows it.
            y[i] = point() + 40.0 if k % 2 and lo is None else point()
            pairs.append((f"replace {i}", x, y))
        j, i = 3, 5
        y = x.copy()
        y[i] = x[j]
        pairs.append(("replace by a copy of another record", x, y))
        pairs.append(("replace by itself", x, x.copy()))
        return pairs
    for k in range(10):
        i = int(rng.integers(n))
        pairs.append((f"remove {i}", x, np.delete(x, i, axis=0)))
        pairs.append((f"add #{k}", x, np.vstack([x, point()])))
    j = int(rng.integers(n))
    pairs.append(("add a duplicate record", x, np.vstack([x, x[j]])))
    xd = np.vstack([x, x[j]])
    pairs.append(("remove one of two duplicates", xd, x))
    for label, rec in worst:
        pairs.append((label, x, np.vstack([x, np.asarray(rec, dtype=float)])))
    return pairs


def set_pairs(rng, n=100, universe=300):
    sets = [sorted(set(int(v) for v in rng.integers(0, universe, size=rng.integers(1, 12)))) for _ in range(n)]
    new = lambda: sorted(set(int(v) for v in rng.integers(0, universe, size=rng.integers(1, 12))))  # noqa: E731
    pairs = []
    for k in range(10):
        i = int(rng.integers(n))
        pairs.append((f"remove set {i}", sets, sets[:i] + sets[i + 1:]))
        pairs.append((f"add set #{k}", sets, sets + [new()]))
    pairs.append(("add a duplicate set", sets, sets + [sets[4]]))
    pairs.append(("add a singleton", sets, sets + [[7]]))
    pairs.append(("add a set of every id", sets, sets + [list(range(universe))]))
    return pairs


def edge_pairs(rng, nodes=40, edges=150):
    """One edge added or removed. Nodes 30..39 have no out-neighbours in D (targets only)."""
    es = set()
    while len(es) < edges:
        u, v = int(rng.integers(30)), int(rng.integers(nodes))
        if u != v:
            es.add((u, v))
    base = sorted(es)
    out_deg = {}
    for u, _ in base:
        out_deg[u] = out_deg.get(u, 0) + 1
    top = max(out_deg, key=lambda u: (out_deg[u], -u))
    pairs = []
    for k in range(10):
        i = int(rng.integers(len(base)))
        pairs.append((f"remove edge {base[i]}", base, base[:i] + base[i + 1:]))
        while True:
            e = (int(rng.integers(nodes)), int(rng.integers(nodes)))
            if e[0] != e[1] and e not in es:
                break
        pairs.append((f"add edge {e}", base, base + [e]))
    v = next(w for w in range(nodes) if (top, w) not in es and w != top)
    pairs.append(("add an edge at the node of maximum out-degree", base, base + [(top, v)]))
    pairs.append(("add a first out-neighbour", base, base + [(33, 5)]))
    pairs.append(("add an edge between two nodes without out-neighbours", base, base + [(34, 35)]))
    single = [(u, w) for u, w in base if out_deg[u] == 1]
    if single:
        pairs.append(("remove a node's only out-edge", base, [e for e in base if e != single[0]]))
    pairs.append(("add a self-loop", base, base + [(top, top)]))
    pairs.append(("add a self-loop at a node without out-neighbours", base, base + [(36, 36)]))
    pairs.append(("add a duplicate edge line", base, base + [base[7]]))
    pairs.append(("add the reverse of an edge", base, base + [(base[9][1], base[9][0])]))
    pairs.append(("add an edge to new, higher node ids", base, base + [(nodes + 5, nodes + 9)]))
    return pairs


# ---------------------------------------------------------------------------------------------
# Release paths

@dataclasses.dataclass
class Path:
    id: str
    frontend: str  # cli | python | dask | mpi
    data: str  # dense | hist | sets | edges
    args: tuple = ()  # CLI options
    kwargs: Optional[dict] = None  # Python: RaceSketch(...) / fit(...) arguments
    relation: str = "add-remove"
    # The least the largest L1 change over the pairs must reach, as a function of the declared L1
    # sensitivity and R: the bound is tight there.
    reach: Callable = lambda s, r: s
    worst: tuple = ()


ANGULAR = ("--power", 3)
PATHS = [
    Path("cli-l2", "cli", "dense", ("--kernel", "l2", "--bandwidth", 2.0)),
    Path("cli-angular", "cli", "dense", ("--kernel", "angular", *ANGULAR)),
    Path("cli-angular_pair-query", "cli", "dense", ("--kernel", "angular_pair", *ANGULAR, "--pair-mode", "query")),
    Path("cli-angular_pair-insert", "cli", "dense", ("--kernel", "angular_pair", *ANGULAR, "--pair-mode", "insert")),
    Path("cli-jaccard-sets", "cli", "sets", ("--kernel", "jaccard", "--format", "sets")),
    Path("cli-jaccard_classic-sets", "cli", "sets", ("--kernel", "jaccard_classic", "--format", "sets")),
    # Edge-level neighbours: one edge changes one node's set (two, undirected), so a row changes
    # by at most 2 (4) cells. Tight constructions are R (a first out-neighbour) and 2R (an edge
    # between two nodes without out-neighbours, undirected).
    Path("cli-edgelist-directed", "cli", "edges", ("--kernel", "jaccard", "--format", "edgelist"),
         reach=lambda s, r: r),
    Path("cli-edgelist-undirected", "cli", "edges", ("--kernel", "jaccard", "--format", "edgelist", "--undirected"),
         reach=lambda s, r: 2 * r),
    # A declared node count (a public parameter) fixes the node set: an edge to new ids adds no node.
    Path("cli-edgelist-directed-nodes", "cli", "edges", ("--kernel", "jaccard", "--format", "edgelist", "--nodes", 64),
         reach=lambda s, r: r),
    # A record's quantised features reach sqrt(2) m' only at phases pi/4: ask for half of it.
    Path("cli-rff", "cli", "dense", ("--kernel", "rff", "--features", 40, "--sigma", 1.5), reach=lambda s, r: s / 2),
    Path("cli-hist", "cli", "hist", ("--kernel", "hist", "--bins", 8, "--domain", "0:1"),
         worst=(("a record on inner bin edges", [0.125, 0.5]), ("a record on the domain's ends", [0.0, 1.0]))),
    Path("cli-l2-discrete_laplace", "cli", "dense", ("--kernel", "l2", "--bandwidth", 2.0,
                                                     "--mechanism", "discrete_laplace")),
    Path("cli-l2-floored_laplace", "cli", "dense", ("--kernel", "l2", "--bandwidth", 2.0,
                                                    "--mechanism", "floored_laplace")),
    Path("cli-l2-gaussian", "cli", "dense", ("--kernel", "l2", "--bandwidth", 2.0, "--mechanism", "gaussian",
                                             "--delta", 1e-6)),
    Path("cli-l2-replace", "cli", "dense", ("--kernel", "l2", "--bandwidth", 2.0, "--neighbors", "replace"),
         relation="replace"),
    Path("cli-hist-replace", "cli", "hist", ("--kernel", "hist", "--bins", 8, "--domain", "0:1",
                                             "--neighbors", "replace"), relation="replace"),
    Path("python-l2", "python", "dense", kwargs=dict(kernel="l2", bandwidth=2.0)),
    Path("python-jaccard-sets", "python", "sets", kwargs=dict(kernel="jaccard")),
    Path("dask-l2", "dask", "dense", kwargs=dict(kernel="l2", bandwidth=2.0)),
    Path("mpirun-l2", "mpi", "dense", ("--kernel", "l2", "--bandwidth", 2.0)),
    Path("mpirun-edgelist-undirected", "mpi", "edges", ("--kernel", "jaccard", "--format", "edgelist", "--undirected"),
         reach=lambda s, r: 2 * r),
]


def make_pairs(path: Path):
    rng = np.random.default_rng(int(hashlib.sha256(path.id.encode()).hexdigest()[:8], 16))
    if path.data == "dense":
        return dense_pairs(rng, path.relation, worst=path.worst)
    if path.data == "hist":
        return dense_pairs(rng, path.relation, d=2, lo=0.0, hi=1.0, worst=path.worst)
    if path.data == "sets":
        return set_pairs(rng)
    return edge_pairs(rng)


# ---------------------------------------------------------------------------------------------
# Building a file

def _input_text(path: Path, data):
    if path.data in ("dense", "hist"):
        return _dense_text(data)
    if path.data == "sets":
        return _sets_text(data)
    return _edges_text(data)


def _mpi_available(cli):
    if not shutil.which("mpirun"):
        return "mpirun is not installed"
    ldd = subprocess.run(["ldd", cli], capture_output=True, text=True).stdout
    if "libmpi" not in ldd:
        return "the privrace command was built without MPI (-DPRIVRACE_MPI=OFF, CI's default)"
    return None


class Builder:
    """Builds (and caches) the file of one input on one path, with --seed or --hash-seed."""

    def __init__(self, cli, root):
        self.cli, self.root, self.cache = cli, root, {}

    def build(self, path: Path, mode: str, data, tag=""):
        text = _input_text(path, data)
        key = (path.id, mode, hashlib.sha256(text.encode()).hexdigest(), tag)
        if key in self.cache:
            return self.cache[key]
        work = self.root / hashlib.sha256(repr(key).encode()).hexdigest()[:16]
        work.mkdir()
        # The same input name for D and D' (a public choice of the releaser), in different folders.
        (work / "data.txt").write_text(text)
        out = work / "out.rsk"
        seed_opt = ["--seed", SEED] if mode == "seed" else ["--hash-seed", SEED]
        if path.frontend in ("cli", "mpi"):
            kernel = path.args[path.args.index("--kernel") + 1]
            size = [] if kernel in ("rff", "hist") else ["--rows", R, "--width", W]
            cmd = [self.cli, "sketch", "--input", "data.txt", "-o", "out.rsk", "--epsilon", 1.0, "--threads", 1, "-q",
                   *size, *path.args, *seed_opt]
            if path.frontend == "mpi":
                cmd = ["mpirun", "--oversubscribe", "-np", 2, *cmd]
            p = subprocess.run(list(map(str, cmd)), cwd=work, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed ({p.returncode}): {p.stderr.strip()}"
        elif path.frontend == "python":
            kw = dict(path.kwargs)
            kernel = kw.pop("kernel")
            seed_kw = {"seed": SEED} if mode == "seed" else {"hash_seed": SEED}
            sk = privrace.RaceSketch(kernel, rows=R, width=W, **kw, **seed_kw)
            if path.data == "sets":
                sk.fit_sets([np.asarray(s, dtype=np.int64) for s in data], epsilon=1.0, threads=1)
            else:
                sk.fit(np.asarray(data, dtype=np.float64), epsilon=1.0, threads=1)
            sk.save(str(out))
        elif path.frontend == "dask":
            import dask.array as da
            from privrace import dask as privrace_dask
            kw = dict(path.kwargs)
            kernel = kw.pop("kernel")
            seed_kw = {"seed": SEED} if mode == "seed" else {"hash_seed": SEED}
            x = np.asarray(data, dtype=np.float64)
            privrace_dask.sketch(da.from_array(x, chunks=(50, x.shape[1])), kernel, rows=R, width=W, **kw,
                                 **seed_kw, epsilon=1.0, path=str(out))
        raw = out.read_bytes()
        f = parse_rsk(raw)
        f.counts = self.counts(out, f)
        self.cache[key] = f
        return f

    def counts(self, out, f):
        if f.header.get("kind", "race") == "race":
            return np.asarray(privrace.RaceSketch.load(str(out)).counts, dtype=np.int64)
        p = subprocess.run([self.cli, "info", str(out), "--counts"], capture_output=True, text=True, check=True)
        csv = p.stdout  # info --counts: the counts on stdout, the header on stderr
        return np.array([[int(v) for v in line.split(",")] for line in csv.splitlines() if line], dtype=np.int64)


@pytest.fixture(scope="module")
def builder(cli, tmp_path_factory):
    return Builder(cli, tmp_path_factory.mktemp("neighbours"))


def _skip_unavailable(path: Path, cli):
    if path.frontend == "dask":
        pytest.importorskip("dask.distributed", reason="dask.distributed is not installed")
        pytest.importorskip("privrace.dask")
    if path.frontend == "mpi":
        why = _mpi_available(cli)
        if why:
            pytest.skip(why)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed", reason="dask.distributed is not installed")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _client_for(path, request):
    if path.frontend == "dask":
        request.getfixturevalue("dask_client")


# ---------------------------------------------------------------------------------------------
# The tests

@pytest.mark.parametrize("path", PATHS, ids=[p.id for p in PATHS])
def test_seeded_neighbours_differ_only_in_noisy_fields_and_within_the_sensitivity(path, cli, builder, request):
    _skip_unavailable(path, cli)
    _client_for(path, request)
    pairs = make_pairs(path)
    worst_l1, worst_l2, worst_label = 0, 0.0, None
    failures = []
    for label, d, d2 in pairs:
        a, b = builder.build(path, "seed", d), builder.build(path, "seed", d2)
        what = f"{path.id}, {label}"
        try:
            check_same_except_allowed(a, b, what)
        except AssertionError as e:  # recorded; the counts are still checked
            failures.append(str(e).split("\n")[0])
        pa = a.header["privacy"]
        assert pa["private"] is True, what
        s1, s2 = float(pa["sensitivity_l1"]), float(pa["sensitivity_l2"])
        assert a.counts.shape == b.counts.shape, what
        diff = a.counts - b.counts  # same seed: the noise cancels, this is the exact difference
        l1 = int(np.abs(diff).sum())
        l2 = math.sqrt(float((diff.astype(np.float64) ** 2).sum()))
        if l1 > s1 * (1 + 1e-12) or l2 > s2 * (1 + 1e-9):
            failures.append(f"{what}: |counts(D) - counts(D')| = L1 {l1}, L2 {l2:.6g} exceeds the declared "
                            f"sensitivity L1 {s1:g}, L2 {s2:.6g}")
        if l1 == 0 and a.payload != b.payload:  # the payload is a function of the counts alone
            failures.append(f"{what}: equal counts, but the payload bytes differ")
        if l1 > worst_l1:
            worst_l1, worst_label = l1, label
        worst_l2 = max(worst_l2, l2)
        if "count" in pa:  # the released record count of a feature sketch
            dc = abs(int(pa["count"]) - int(b.header["privacy"]["count"]))
            if dc > float(pa.get("count_sensitivity", 1)):
                failures.append(f"{what}: the noisy record counts differ by {dc} > count_sensitivity "
                                f"{pa.get('count_sensitivity')}")
    # The first failures of each kind (header, counts, record count), so that one kind does not hide another.
    shown = [f for f in failures if "header" in f or "sizes" in f or "payload" in f][:4] + \
        [f for f in failures if "counts(D)" in f][:4] + [f for f in failures if "record counts" in f][:2]
    assert not failures, f"{len(failures)} failures on {len(pairs)} neighbour pairs:\n" + "\n".join(shown)
    s1 = float(a.header["privacy"]["sensitivity_l1"])
    need = path.reach(s1, R)
    assert worst_l1 >= need * (1 - 1e-12), (
        f"{path.id}: the largest L1 change over {len(pairs)} pairs is {worst_l1} ({worst_label}), "
        f"below {need:g} (declared {s1:g}): the pairs do not exercise the bound")


@pytest.mark.parametrize("path", PATHS, ids=[p.id for p in PATHS])
def test_release_path_neighbours_differ_only_in_noisy_fields(path, cli, builder, request):
    """--hash-seed alone: public hash functions, fresh noise per file; headers as above."""
    _skip_unavailable(path, cli)
    _client_for(path, request)
    pairs = make_pairs(path)
    chosen = [pairs[0], pairs[1], pairs[-1]]
    for label, d, d2 in chosen:
        a, b = builder.build(path, "hash", d), builder.build(path, "hash", d2, tag=label)
        what = f"{path.id} (--hash-seed), {label}"
        check_same_except_allowed(a, b, what)
        assert a.header["privacy"]["private"] is True, what
        # The noise is fresh: the count arrays are not the exact difference of one noise draw.
        diff = a.counts - b.counts
        assert int(np.abs(diff).sum()) > float(a.header["privacy"]["sensitivity_l1"]), \
            f"{what}: the noise of two releases looks identical"

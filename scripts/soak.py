#!/usr/bin/env python3
"""Soak test of the `privrace` command against the Python module (the library's answer).

usage: scripts/soak.py [--calls N] [--seed S] [--build DIR] [--cli PATH] [--workdir DIR]
                       [--keep] [--case K] [--progress N] [--json FILE]

  --calls N     command calls to run (default 10000)
  --seed S      master seed (default 1); case k draws everything from default_rng([S, k])
  --build DIR   build tree holding `privrace` and python/ (default: <checkout>/build)
  --cli PATH    the `privrace` command (default: DIR/privrace)
  --workdir DIR where inputs and outputs go (default: a new folder under $TMPDIR, removed
                at the end unless --keep or a failure)
  --case K      run only case K of seed S (reproduces a reported failure) and keep its files
  --progress N  print a progress line and count the files every N calls (default 1000; 0:
                only at the start and the end)
  --json FILE   write the summary as JSON

Cases cycle through: a dense sketch (l2 / angular), a set sketch (jaccard / jaccard_classic),
a feature sketch (rff / hist) for m2m, each with random small shapes and input layouts, seeded.
Every call is checked:
  * sketch: counts and payload bytes equal RaceSketch(..., seed=S).fit(X) / fit_sets(sets)
    saved by Python, the header equal but for its `build` record (which names the input file
    and the threads); feature sketches (no Python fit): rebuilt through another path (stdin,
    more threads, tiny chunks) the payload is byte-identical, and a --no-privacy hist equals
    numpy's histogram;
  * merge of two sketches of disjoint halves: RaceSketch.merge (counts, header), feature
    sketches: counts and released count add;
  * query: the printed lines equal sk.query / sk.kernel_sums formatted %.9g;
  * m2m: the printed lines equal privrace.M2M's answer formatted as the command does;
  * info: the JSON header equals the loaded header, --counts equals the counts;
  * deliberately bad calls (malformed CSV row, missing file, mismatched merge, bad usage):
    exit code 1 or 2, nothing on stdout, no output file, an existing output left unchanged.
After every call the output folder must hold exactly the expected files and the private
TMPDIR given to the command must stay empty; every --progress calls the file counts of the
work directory, of that TMPDIR and of the system's TMPDIR are recorded. Each call's peak RSS
comes from /usr/bin/time (else wait4, which counts this process's size too). Exits 1 on the first failure, naming the call and how to rerun it.
"""
import argparse
import gzip
import json
import os
import resource
import shlex
import shutil
import signal
import struct
import sys
import tempfile
import time
import warnings
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)


class SoakFailure(Exception):
    pass


class Timeout(Exception):
    pass


def fail(msg):
    raise SoakFailure(msg)


# ---------------------------------------------------------------------------------------------
# The sketch container (docs/file-format.md): magic, u32 version, u64 header length, header,
# u64 payload length, payload, u32 CRC of everything before it.

def split_container(blob, what):
    if blob[:8] != b"PRIVRACE":
        fail(f"{what}: bad magic")
    (version,) = struct.unpack_from("<I", blob, 8)
    (hlen,) = struct.unpack_from("<Q", blob, 12)
    header = json.loads(blob[20:20 + hlen].decode("utf-8"))
    (plen,) = struct.unpack_from("<Q", blob, 20 + hlen)
    start = 28 + hlen
    payload = blob[start:start + plen]
    if start + plen + 4 != len(blob):
        fail(f"{what}: {len(blob)} bytes, the container declares {start + plen + 4}")
    (crc,) = struct.unpack_from("<I", blob, start + plen)
    if crc != zlib.crc32(blob[:start + plen]):
        fail(f"{what}: bad CRC")
    return version, header, payload


def same_lines(what, got, want):
    if got != want:
        i = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
        fail(f"{what}: {len(got)} lines printed, the library gives {len(want)}; first difference at line {i + 1}: "
             f"printed {got[i] if i < len(got) else None!r}, the library says {want[i] if i < len(want) else None!r}")


def without(header, *keys):
    return {k: v for k, v in header.items() if k not in keys}


# ---------------------------------------------------------------------------------------------
# Running a command: posix_spawn + wait4 (exit status and the child's own peak RSS).

class Runner:
    def __init__(self, cli, workdir, timeout):
        self.cli = cli
        self.out = os.path.join(workdir, "out")       # every output file goes here (and the cwd)
        self.cap = os.path.join(workdir, "cap")       # captured stdout / stderr
        self.tmp = os.path.join(workdir, "tmp")       # the commands' TMPDIR: must stay empty
        for d in (self.out, self.cap, self.tmp):
            os.makedirs(d, exist_ok=True)
        self.env = dict(os.environ, TMPDIR=self.tmp, OMP_NUM_THREADS="1")
        self.timeout = timeout
        self.calls = 0
        self.rss = {}          # command -> list of peak RSS (KiB), one per call
        self.wall = {}         # command -> total seconds
        self.last = None
        # wait4's ru_maxrss of a child spawned from this process counts the address space it
        # was spawned from (Linux records the old mm's high-water mark at exec: this Python
        # process, ~40 MiB). GNU time forks from a 2 MiB process, so its %M is the command's own.
        self.time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None

    def __call__(self, args, stdin=None):
        argv = [self.cli] + [str(a) for a in args]
        self.last = " ".join(shlex.quote(a) for a in argv) + (f" < {shlex.quote(stdin)}" if stdin else "")
        so, se = os.path.join(self.cap, "stdout"), os.path.join(self.cap, "stderr")
        wr = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        actions = [(os.POSIX_SPAWN_OPEN, 0, stdin or os.devnull, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, so, wr, 0o600),
                   (os.POSIX_SPAWN_OPEN, 2, se, wr, 0o600)]
        spawn = argv
        if self.time:  # a small parent: the child's peak RSS is its own (see __init__)
            spawn = [self.time, "-f", "%M", "-o", os.path.join(self.cap, "rss")] + argv
        t0 = time.monotonic()
        pid = os.posix_spawn(spawn[0], spawn, self.env, file_actions=actions)
        signal.alarm(self.timeout)
        try:
            _, status, ru = os.wait4(pid, 0)
        except Timeout:
            os.kill(pid, signal.SIGKILL)
            os.wait4(pid, 0)
            fail(f"no answer after {self.timeout} s (killed)")
        finally:
            signal.alarm(0)
        dt = time.monotonic() - t0
        self.calls += 1
        cmd = args[0]
        rss = ru.ru_maxrss
        if self.time:
            with open(os.path.join(self.cap, "rss")) as f:
                rss = int(f.read().split()[-1])
        self.rss.setdefault(cmd, []).append(rss)
        self.wall[cmd] = self.wall.get(cmd, 0.0) + dt
        with open(so, "rb") as f:
            out = f.read().decode("utf-8", "replace")
        with open(se, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        return os.waitstatus_to_exitcode(status), out, err


def count_files(root):
    n = 0
    for _, dirs, files in os.walk(root):
        n += len(files) + len(dirs)
    return n


# ---------------------------------------------------------------------------------------------
# Random inputs.

def fmt_values(rng, x, styles=("grid", "f32", "short", "sci", "int")):
    """Text of each value in one of several spellings; returns the text and the numbers it means."""
    style = rng.choice(styles)
    if style == "grid":
        x = np.round(x * 256) / 256
        text = np.vectorize(lambda v: "%.10g" % v)(x)
    elif style == "f32":
        text = np.vectorize(lambda v: "%.9g" % v)(x.astype(np.float32).astype(np.float64))
    elif style == "short":
        text = np.vectorize(lambda v: "%.3f" % v)(x)
    elif style == "sci":
        text = np.vectorize(lambda v: "%.6e" % v)(x)
    else:
        text = np.vectorize(lambda v: "%d" % v)(np.round(x * 10))
    vals = np.vectorize(float)(text)  # what a correct reader makes of the text
    return text, vals.reshape(x.shape)


def write_table(rng, path, text, layout=None):
    """Write rows of text fields; layout picks csv / csv+header / whitespace / crlf / no final
    newline / gzip. Returns the path written (a .gz name for gzip)."""
    layout = layout or rng.choice(["csv", "csv", "header", "ws", "crlf", "nonl", "gz"])
    sep = " \t"[rng.integers(2)] if layout == "ws" else ","
    eol = "\r\n" if layout == "crlf" else "\n"
    lines = [sep.join(r) for r in text]
    if layout == "header":
        lines.insert(0, ",".join(f"c{j}" for j in range(text.shape[1])))
    body = eol.join(lines) + ("" if layout == "nonl" else eol)
    if layout == "gz":
        path += ".gz"
        with gzip.open(path, "wb") as f:
            f.write(body.encode())
    else:
        with open(path, "w", newline="") as f:
            f.write(body)
    return path


def write_sets(path, sets, sep=" "):
    with open(path, "w") as f:
        for s in sets:
            f.write(sep.join(map(str, s)) + "\n")
    return path


def draw_privacy(rng):
    """CLI flags and Python fit keywords for one privacy setting."""
    if rng.random() < 0.1:
        return ["--no-privacy"], dict(epsilon=None, allow_non_private=True), False
    eps = float("%.4g" % np.exp(rng.uniform(np.log(0.1), np.log(10))))
    mech = rng.choice(["discrete_laplace", "discrete_laplace", "floored_laplace", "gaussian"])
    nb = rng.choice(["add-remove", "add-remove", "replace"])
    cli = ["--epsilon", eps, "--mechanism", mech, "--neighbors", nb]
    py = dict(epsilon=eps, mechanism=str(mech), neighbors=str(nb))
    if mech == "gaussian":
        cli += ["--delta", 1e-5]
        py["delta"] = 1e-5
    return cli, py, True


def halves(kflags, seed_flags):
    """kflags with its --seed replaced by one half's --seed S --hash-seed H."""
    i = kflags.index("--seed")
    return kflags[:i] + seed_flags + kflags[i + 2:]


def draw_seed(rng):
    r = rng.random()
    if r < 0.05:
        return 0
    if r < 0.1:
        return 2**64 - 1
    return int(rng.integers(0, 2**63))


# ---------------------------------------------------------------------------------------------

class Soak:
    def __init__(self, args, privrace):
        self.args = args
        self.pr = privrace
        self.run = Runner(args.cli, args.workdir, args.timeout)
        self.inp = os.path.join(args.workdir, "in")
        self.py = os.path.join(args.workdir, "py")
        self.expected = set()           # names that must be in out/
        self.bad_calls = 0
        self.cases = {"dense": 0, "sets": 0, "feature": 0}
        self.case = None
        self.case_seed = None

    # -- helpers ---------------------------------------------------------------------------
    def o(self, name):
        return os.path.join(self.run.out, name)

    def i(self, name):
        return os.path.join(self.inp, name)

    def check_dirs(self):
        have = set(os.listdir(self.run.out))
        if have != self.expected:
            fail(f"output folder holds {sorted(have)}, expected {sorted(self.expected)}")
        if os.listdir(self.run.tmp):
            fail(f"TMPDIR of the command is not empty: {sorted(os.listdir(self.run.tmp))}")

    def ok(self, args, stdin=None, output=None):
        """A call that must succeed; output names the file it writes (in out/)."""
        rc, out, err = self.run(args, stdin)
        if rc != 0:
            fail(f"exit code {rc}, expected 0; stderr: {err.strip()[:2000]}")
        if output:
            self.expected.add(os.path.basename(output))
        self.check_dirs()
        return out, err

    def bad(self, args, codes, output=None, stdin=None):
        """A call that must fail with one of codes, print nothing on stdout and write nothing."""
        before = None
        if output and os.path.exists(output):
            with open(output, "rb") as f:
                before = f.read()
        rc, out, err = self.run(args, stdin)
        self.bad_calls += 1
        if rc not in codes:
            fail(f"exit code {rc}, expected {codes}; stderr: {err.strip()[:2000]}")
        if out:
            fail(f"a failing call printed on stdout: {out[:500]!r}")
        if not err.strip():
            fail("a failing call said nothing on stderr")
        if output:
            if before is None and os.path.exists(output):
                fail(f"a failing call left {output}")
            if before is not None:
                with open(output, "rb") as f:
                    if f.read() != before:
                        fail(f"a failing call changed the existing {output}")
        self.check_dirs()

    def py_save(self, sk, name, private):
        path = os.path.join(self.py, name)
        sk.save(path, allow_non_private=not private)
        with open(path, "rb") as f:
            blob = f.read()
        os.unlink(path)
        return blob

    def same_race_file(self, cli_path, sk, private, n_points):
        """The CLI's sketch file against the Python sketch: same container version, payload bytes,
        header but for `build`; build.points = n_points in a file without noise only; the loaded counts equal."""
        with open(cli_path, "rb") as f:
            cblob = f.read()
        cv, ch, cp = split_container(cblob, cli_path)
        pv, ph, pp = split_container(self.py_save(sk, "py.rsk", private), "python save")
        if cv != pv:
            fail(f"{cli_path}: container version {cv}, Python's {pv}")
        if without(ch, "build") != without(ph, "build"):
            diff = sorted(k for k in set(ch) | set(ph) if ch.get(k) != ph.get(k))
            fail(f"{cli_path}: header differs from Python's in {diff}: "
                 f"{ {k: (ch.get(k), ph.get(k)) for k in diff if k != 'build'} }")
        # A private file holds no exact field: the record count only in a file without noise.
        if private and "points" in ch["build"]:
            fail(f"{cli_path}: a private file states its exact record count (build.points)")
        if not private and ch["build"].get("points") != n_points:
            fail(f"{cli_path}: build.points {ch['build'].get('points')}, expected {n_points}")
        loaded = self.pr.RaceSketch.load(cli_path)
        if not np.array_equal(loaded.counts, sk.counts):
            fail(f"{cli_path}: counts differ from Python's fit")
        if cp != pp:
            fail(f"{cli_path}: payload bytes differ from Python's save (counts equal)")
        return ch

    def check_info(self, path, header, counts):
        want_counts = self.rng.random() < 0.5
        # `info` prints the header on stdout; `info --counts` the counts alone (the header on stderr).
        out, err = self.ok(["info", path] + (["--counts"] if want_counts else []))
        dec = json.JSONDecoder()
        text = err[err.index("{"):] if want_counts else out
        got, end = dec.raw_decode(text)
        if got != header:
            diff = sorted(k for k in set(got) | set(header) if got.get(k) != header.get(k))
            fail(f"info {path}: header differs from the library's in {diff}")
        rest = out.split() if want_counts else out[end:].split()
        if want_counts:
            printed = np.array([[int(v) for v in line.split(",")] for line in rest], dtype=np.int64)
            if counts is not None and not np.array_equal(printed.reshape(counts.shape), counts):
                fail(f"info {path} --counts: differs from the library's counts")
            return printed
        if rest:
            fail(f"info {path}: unexpected text after the header: {' '.join(rest)[:200]}")
        return None

    def info_counts(self, path):
        out, _ = self.ok(["info", path, "--counts"])  # the counts alone on stdout
        return np.array([[int(v) for v in line.split(",")] for line in out.split()], dtype=np.int64)

    def clear_case(self):
        for d in (self.run.out, self.inp):
            for name in os.listdir(d):
                os.unlink(os.path.join(d, name))
        self.expected = set()

    # -- bad calls -------------------------------------------------------------------------
    def bad_call(self, table, flags, a_in):
        """One deliberately bad call, chosen at random (flags: the case's sketch flags)."""
        r = self.rng
        choice = r.integers(7)
        out = self.o("bad.rsk")
        if r.random() < 0.3:          # an earlier output that a failed call must leave alone
            shutil.copyfile(self.o("full.rsk"), out)
            self.expected.add("bad.rsk")
        if choice == 0 and table is not None:   # a malformed row in a CSV
            text = table.copy()
            row, col = r.integers(text.shape[0]), r.integers(text.shape[1])
            text[row, col] = r.choice(["abc", "nan", "inf", "1.2.3", "", "0x"])
            path = write_table(r, self.i("bad.csv"), text, layout="csv")
            self.bad(["sketch", "--input", path, "-o", out] + flags, (1,), out)
        elif choice == 1 and table is not None:  # a row with a field missing
            text = [",".join(row) for row in table]
            k = r.integers(len(text))
            text[k] = ",".join(table[k][:-1]) if table.shape[1] > 1 else ""
            with open(self.i("short.csv"), "w") as f:
                f.write("\n".join(text) + "\n")
            self.bad(["sketch", "--input", self.i("short.csv"), "-o", out] + flags, (1,), out)
        elif choice == 2:                        # a missing input file
            self.bad(["sketch", "--input", self.i("missing.csv"), "-o", out] + flags, (1,), out)
        elif choice == 3:                        # a missing sketch
            self.bad(["query", self.i("missing.rsk"), "--queries", self.i("missing.csv")], (1,))
        elif choice == 4:                        # merge of sketches with different seeds
            other = list(flags)
            other[other.index("--seed") + 1] = (int(other[other.index("--seed") + 1]) + 1) % 2**64
            self.ok(["sketch", "--input", a_in, "-o", self.o("other_seed.rsk")] + other, None, "other_seed.rsk")
            self.bad(["merge", self.o("a.rsk"), self.o("other_seed.rsk"), "-o", out], (1,), out)
        elif choice == 5:                        # bad usage
            self.bad(["sketch", "--input", self.i("missing.csv"), "--no-such-option", "-o", out], (2,), out)
        else:                                    # a truncated sketch file
            with open(self.o("full.rsk"), "rb") as f:
                blob = f.read()
            with open(self.i("cut.rsk"), "wb") as f:
                f.write(blob[:r.integers(1, len(blob))])
            self.bad(["info", self.i("cut.rsk")], (1,))

    # -- cases -----------------------------------------------------------------------------
    def dense_case(self):
        r = self.rng
        kernel = str(r.choice(["l2", "l2", "angular"]))
        n, d = int(r.integers(2, 300)), int(r.integers(1, 9))
        rows, width = int(r.integers(1, 65)), int(r.integers(2, 129))
        bw, power, seed = float("%.4g" % r.uniform(0.3, 5.0)), int(r.integers(1, 3)), draw_seed(r)
        pflags, pkw, private = draw_privacy(r)
        threads = int(r.choice([1, 1, 1, 2]))
        x = r.normal(0.0, r.uniform(0.2, 4.0), size=(n, d))
        text, vals = fmt_values(r, x)
        label = None
        if r.random() < 0.2:                     # a label column that --label-column drops
            label = int(r.integers(1, d + 2))
            lab = np.array([[str(int(v))] for v in r.integers(0, 2, size=n)])
            text = np.concatenate([text[:, :label - 1], lab, text[:, label - 1:]], axis=1)
        kflags = ["--kernel", kernel, "--rows", rows, "--width", width, "--bandwidth", bw, "--power", power,
                  "--seed", seed, "--threads", threads, "-q"] + (["--label-column", label] if label else [])

        # The halves are two owners' releases: one public hash seed, each its own noise seed (one
        # noise seed twice is refused by merge: the parts would share their noise).
        hash_seed = draw_seed(r)
        half_flags = [["--seed", seed, "--hash-seed", hash_seed], ["--seed", (int(seed) + 1) % 2**64, "--hash-seed", hash_seed]]

        def py_fit(lo, hi, half=None):
            hkw = {} if half is None else {"seed": int(half_flags[half][1]), "hash_seed": int(hash_seed)}
            sk = self.pr.RaceSketch(kernel, rows=rows, width=width, bandwidth=bw, power=power, **({"seed": seed} | hkw))
            return sk.fit(vals[lo:hi], threads=threads, **pkw)

        k = int(r.integers(1, n))
        full_in = write_table(r, self.i("x.csv"), text)
        a_in = write_table(r, self.i("a.csv"), text[:k])
        b_in = write_table(r, self.i("b.csv"), text[k:])
        stdin = None
        if r.random() < 0.15 and not full_in.endswith(".gz"):
            stdin, full_in = full_in, "-"
        self.ok(["sketch", "--input", full_in, "-o", self.o("full.rsk")] + kflags + pflags, stdin, "full.rsk")
        sk_full = py_fit(0, n)
        h_full = self.same_race_file(self.o("full.rsk"), sk_full, private, n)
        self.ok(["sketch", "--input", a_in, "-o", self.o("a.rsk")] + halves(kflags, half_flags[0]) + pflags, None, "a.rsk")
        sk_a = py_fit(0, k, 0)
        self.same_race_file(self.o("a.rsk"), sk_a, private, k)
        self.ok(["sketch", "--input", b_in, "-o", self.o("b.rsk")] + halves(kflags, half_flags[1]) + pflags, None, "b.rsk")
        sk_b = py_fit(k, n, 1)
        self.same_race_file(self.o("b.rsk"), sk_b, private, n - k)
        self.check_merge(sk_a, sk_b, private)
        qn = int(r.integers(1, 40))
        qtext, qvals = fmt_values(r, r.normal(0.0, 2.0, size=(qn, d)))
        q_in = write_table(r, self.i("q.csv"), qtext, layout=str(r.choice(["csv", "ws", "nonl"])))
        target, sk = (self.o("full.rsk"), sk_full) if r.random() < 0.6 else (self.o("ab.rsk"), self.merged)
        self.check_query(target, sk, q_in, qvals)
        self.check_info(target, self.pr.RaceSketch.load(target).header, sk.counts)
        if h_full["privacy"].get("private") is False and h_full["n_hat"] != n:
            fail(f"--no-privacy sketch of {n} records has n_hat {h_full['n_hat']}")
        if r.random() < 0.12:
            self.bad_call(text, kflags + pflags, a_in)

    def sets_case(self):
        r = self.rng
        kernel = str(r.choice(["jaccard", "jaccard", "jaccard_classic"]))
        n = int(r.integers(2, 200))
        universe = int(r.choice([50, 1000, 10**6]))
        rows, width, seed = int(r.integers(1, 65)), int(r.integers(2, 129)), draw_seed(r)
        pflags, pkw, private = draw_privacy(r)
        sets = [np.unique(r.integers(0, universe, size=int(r.integers(1, 30)))) for _ in range(n)]
        kflags = ["--kernel", kernel, "--rows", rows, "--width", width, "--seed", seed, "--threads", 1, "-q"]
        if r.random() < 0.5:
            kflags += ["--format", "sets"]

        hash_seed = draw_seed(r)
        half_flags = [["--seed", seed, "--hash-seed", hash_seed], ["--seed", (int(seed) + 1) % 2**64, "--hash-seed", hash_seed]]

        def py_fit(part, half=None):
            hkw = {"seed": seed} if half is None else {"seed": int(half_flags[half][1]), "hash_seed": int(hash_seed)}
            return self.pr.RaceSketch(kernel, rows=rows, width=width, **hkw).fit_sets(part, threads=1, **pkw)

        k = int(r.integers(1, n))
        full_in = write_sets(self.i("s.txt"), sets)
        a_in, b_in = write_sets(self.i("sa.txt"), sets[:k]), write_sets(self.i("sb.txt"), sets[k:])
        self.ok(["sketch", "--input", full_in, "-o", self.o("full.rsk")] + kflags + pflags, None, "full.rsk")
        sk_full = py_fit(sets)
        self.same_race_file(self.o("full.rsk"), sk_full, private, n)
        self.ok(["sketch", "--input", a_in, "-o", self.o("a.rsk")] + halves(kflags, half_flags[0]) + pflags, None, "a.rsk")
        sk_a = py_fit(sets[:k], 0)
        self.same_race_file(self.o("a.rsk"), sk_a, private, k)
        self.ok(["sketch", "--input", b_in, "-o", self.o("b.rsk")] + halves(kflags, half_flags[1]) + pflags, None, "b.rsk")
        sk_b = py_fit(sets[k:], 1)
        self.same_race_file(self.o("b.rsk"), sk_b, private, n - k)
        self.check_merge(sk_a, sk_b, private)
        queries = [np.unique(r.integers(0, universe, size=int(r.integers(1, 30)))) for _ in range(int(r.integers(1, 30)))]
        q_in = write_sets(self.i("q.txt"), queries)
        target, sk = (self.o("full.rsk"), sk_full) if r.random() < 0.6 else (self.o("ab.rsk"), self.merged)
        self.check_query(target, sk, q_in, queries, sets=True)
        if r.random() < 0.5:
            self.check_info(target, self.pr.RaceSketch.load(target).header, sk.counts)
        if r.random() < 0.1:
            self.bad_call(None, kflags + pflags, a_in)

    def check_merge(self, sk_a, sk_b, private):
        args = ["merge", self.o("a.rsk"), self.o("b.rsk"), "-o", self.o("ab.rsk")]
        self.ok(args + ([] if private else ["--no-privacy"]), None, "ab.rsk")
        self.merged = sk_a.merge(sk_b)
        loaded = self.pr.RaceSketch.load(self.o("ab.rsk"))
        if not np.array_equal(loaded.counts, self.merged.counts):
            fail("merge: counts differ from RaceSketch.merge")
        h, ph = loaded.header, self.merged.header
        if without(h, "merged_inputs") != without(ph, "merged_inputs"):
            diff = sorted(k for k in set(h) | set(ph) if h.get(k) != ph.get(k))
            fail(f"merge: header differs from RaceSketch.merge's in {diff}")
        if h.get("merged_inputs") != [self.o("a.rsk"), self.o("b.rsk")]:
            fail(f"merge: merged_inputs {h.get('merged_inputs')}")

    def check_query(self, path, sk, q_in, q, sets=False):
        r = self.rng
        flags, kw = [], {}
        if r.random() < 0.3:
            groups = int(r.integers(1, 8))
            flags += ["--estimator", "mom", "--mom-groups", groups]
            kw.update(estimator="mom", mom_groups=groups)
        if r.random() < 0.3:
            flags.append("--debias")
            kw["debias"] = True
        raw = r.random() < 0.3
        if raw:
            flags.append("--kernel-sum")
        if sets and r.random() < 0.5:
            flags += ["--format", "sets"]
        stdin = None
        if r.random() < 0.1:
            stdin, q_in = q_in, "-"
        out, _ = self.ok(["query", path, "--queries", q_in, "-t", int(r.choice([1, 1, 2]))] + flags, stdin)
        want = (sk.kernel_sums if raw else sk.query)(q, **kw)
        same_lines("query", out.split(), ["%.9g" % v for v in want])

    def feature_case(self):
        r = self.rng
        kernel = str(r.choice(["rff", "hist"]))
        n, d = int(r.integers(4, 300)), int(r.integers(1, 6))
        lo = float(r.choice([0.0, -1.0, -2.5, 0.5]))
        hi = lo + float(r.choice([1.0, 2.0, 4.0]))
        seed = draw_seed(r)
        private = r.random() >= 0.1
        pflags = ["--no-privacy"]
        if private:
            pflags = ["--epsilon", float("%.4g" % np.exp(r.uniform(np.log(0.1), np.log(10)))),
                      "--neighbors", str(r.choice(["add-remove", "add-remove", "replace"]))]
            if r.random() < 0.3:
                pflags += ["--num-share", float("%.3g" % r.uniform(0.5, 0.99))]
        if kernel == "rff":
            kflags = ["--kernel", "rff", "--features", 2 * int(r.integers(1, 33)), "--sigma", float("%.3g" % r.uniform(0.3, 3))]
            x = r.uniform(lo, hi, size=(n, d))
        else:
            bins = int(r.integers(1, 33))
            kflags = ["--kernel", "hist", "--bins", bins, "--domain", f"{lo:g}:{hi:g}"]
            # values away from the bin edges, so float32 and double agree on the bin
            b = r.integers(0, bins, size=(n, d))
            x = lo + (b + r.uniform(0.1, 0.9, size=(n, d))) * (hi - lo) / bins
        text, vals = fmt_values(r, x, ("grid", "f32", "short"))
        if not np.all((vals >= lo) & (vals <= hi)):
            text = np.vectorize(lambda v: "%.9g" % v)(x)
            vals = np.vectorize(float)(text)
        kflags += ["--seed", seed, "-q"]
        full_in = write_table(r, self.i("x.csv"), text)
        self.ok(["sketch", "--input", full_in, "-o", self.o("full.rsk"), "--threads", 1] + kflags + pflags, None, "full.rsk")
        with open(self.o("full.rsk"), "rb") as f:
            _, h1, p1 = split_container(f.read(), "full.rsk")
        # the same sketch through another path: stdin, two threads, tiny read chunks
        alt = []
        stdin = None
        way = r.integers(3)
        if way == 0 and not full_in.endswith(".gz"):
            stdin, src = full_in, "-"
        else:
            src = full_in
        alt = ["--threads", 2] if way == 1 else ["--threads", 1]
        if way == 2:
            # HIST bins each value alone: any chunking gives the same counts. RFF features come
            # from one GEMM per batch of 4096 records, batches start at each chunk's start, and a
            # GEMM's float rounding depends on the batch's size: a --chunk-rows that is not a
            # multiple of 4096 can move a feature by one grid step (docs/architecture.md).
            alt += ["--chunk-rows", int(r.integers(1, 8)) * (1 if kernel == "hist" else 4096)]
        self.ok(["sketch", "--input", src, "-o", self.o("again.rsk")] + alt + kflags + pflags, stdin, "again.rsk")
        with open(self.o("again.rsk"), "rb") as f:
            _, h2, p2 = split_container(f.read(), "again.rsk")
        if p1 != p2 or without(h1, "build") != without(h2, "build"):
            fail("the same seeded feature sketch built another way (stdin / threads / chunks) differs")
        if private and "points" in h1["build"]:
            fail("a private feature sketch states its exact record count (build.points)")
        if not private and h1["build"].get("points") != n:
            fail(f"build.points {h1['build'].get('points')}, expected {n}")
        if kernel == "hist" and not private:
            counts = self.info_counts(self.o("full.rsk"))
            want = np.stack([np.bincount(np.minimum(((vals[:, j] - lo) / (hi - lo) * bins).astype(int), bins - 1),
                                         minlength=bins) for j in range(d)])
            if not np.array_equal(counts.reshape(want.shape), want):
                fail("--no-privacy hist counts differ from numpy's histogram")
        target = self.o("full.rsk")
        if r.random() < 0.4:
            k = int(r.integers(1, n))
            a_in = write_table(r, self.i("a.csv"), text[:k])
            b_in = write_table(r, self.i("b.csv"), text[k:])
            # Two owners' halves: one hash seed, each its own noise seed.
            hash_seed = draw_seed(r)
            for name, src, s_ in (("a.rsk", a_in, seed), ("b.rsk", b_in, (int(seed) + 1) % 2**64)):
                self.ok(["sketch", "--input", src, "-o", self.o(name), "--threads", 1]
                        + halves(kflags, ["--seed", s_, "--hash-seed", hash_seed]) + pflags, None, name)
            self.ok(["merge", self.o("a.rsk"), self.o("b.rsk"), "-o", self.o("ab.rsk")] + ([] if private else ["--no-privacy"]),
                    None, "ab.rsk")
            ca, cb, cab = (self.info_counts(self.o(f)) for f in ("a.rsk", "b.rsk", "ab.rsk"))
            if not np.array_equal(ca + cb, cab):
                fail("merge of feature sketches: counts are not the sums of the parts")
            if not private and kernel == "hist" and not np.array_equal(cab, self.info_counts(self.o("full.rsk"))):
                fail("merge of exact hist sketches differs from the sketch of all records")
            hs = [split_container(open(self.o(f), "rb").read(), f)[1]["privacy"] for f in ("a.rsk", "b.rsk", "ab.rsk")]
            if hs[0]["count"] + hs[1]["count"] != hs[2]["count"]:
                fail(f"merge of feature sketches: released count {hs[2]['count']} is not {hs[0]['count']} + {hs[1]['count']}")
            target = self.o("ab.rsk")
        self.check_m2m(target, d, lo, hi)
        if r.random() < 0.3:
            m = self.pr.M2M(target, domain=(lo, hi), samples=10, threads=1)
            self.check_info(target, m.header, None)

    def check_m2m(self, path, d, lo, hi):
        r = self.rng
        tasks = ["mean", "moment2", "cdf"] + (["cov"] if d >= 2 else []) + (["count"] * 2 if d >= 3 else [])
        task = str(r.choice(tasks))
        samples = int(r.integers(50, 3000))
        # hist refuses cov and counting queries over several attributes without --allow-unsupported
        # (docs/privacy-tasks.md, "M2M: the tasks each feature map supports"); the answers are still compared.
        flags = ["--task", task, "--domain", f"{lo:g}:{hi:g}", "--samples", samples, "--allow-unsupported"]
        kw = dict(domain=(lo, hi), samples=samples, threads=1, allow_unsupported=True)  # as --allow-unsupported
        if r.random() < 0.3:
            s = int(r.integers(0, 2**32))
            flags += ["--seed", s]
            kw["seed"] = s
        if r.random() < 0.3:
            flags.append("--intercept")
            kw["intercept"] = True
        if r.random() < 0.3:
            flags += ["--lambda", "auto-noise"]
            kw["lambda_rule"] = "auto-noise"
        queries = []
        if task == "count":
            for _ in range(int(r.integers(1, 6))):
                attrs = r.permutation(d)[:3]
                queries.append([(int(a), str(r.choice(["<=", ">="])), float("%.3g" % r.uniform(lo, hi))) for a in attrs])
            with open(self.i("cq.txt"), "w") as f:
                for q in queries:
                    f.write("; ".join(f"{a} {op} {v:g}" for a, op, v in q) + "\n")
            flags += ["--queries", self.i("cq.txt")]
        out, _ = self.ok(["m2m", path] + flags)
        m = self.pr.M2M(path, **kw)
        warnings.simplefilter("ignore", self.pr.UnsupportedTaskWarning)  # the CLI's is on stderr, unchecked too
        if task in ("mean", "moment2"):
            want = ["%.9g" % v for v in getattr(m, task)().ravel()]
            got = out.split()
        elif task == "cov":
            want = [" ".join("%.9g" % v for v in row) for row in m.cov()]
            got = out.splitlines()
        elif task == "cdf":
            c = m.cdf()
            want, got = [], []
            for line, (j, t) in zip(out.splitlines(), ((j, t) for j in range(c.shape[0]) for t in range(c.shape[1]))):
                a, p, v = line.split()
                point = lo + (t + 1) * (hi - lo) / c.shape[1]
                if int(a) != j or abs(float(p) - point) > 1e-12 * max(1.0, abs(point)):
                    fail(f"m2m cdf: line '{line}', expected attribute {j} at {point:.9g}")
                got.append(v)
            want = ["%.9g" % v for v in c.ravel()]
            if len(out.splitlines()) != c.size:
                fail(f"m2m cdf: {len(out.splitlines())} lines, expected {c.size}")
        else:
            frac = m.count(queries).ravel()
            want = ["%.9g %.9g" % (v, v * m.released_count) for v in frac]
            got = out.splitlines()
        same_lines(f"m2m {task}", got, want)

    # -- the loop --------------------------------------------------------------------------
    def run_case(self, k):
        self.case = k
        self.rng = np.random.default_rng([self.args.seed, k])
        kind = ("dense", "sets", "feature")[k % 3]
        self.cases[kind] += 1
        getattr(self, kind + "_case")()
        if self.args.case is None:
            self.clear_case()


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip().removeprefix("usage: "),
                                 description="Soak test of the privrace command against the Python module.")
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(CHECKOUT, "build"))
    ap.add_argument("--cli", help="the privrace command (default: BUILD/privrace)")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--case", type=int)
    ap.add_argument("--progress", type=int, default=1000)
    ap.add_argument("--timeout", type=int, default=120, help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    cli = args.cli = os.path.abspath(args.cli or os.path.join(args.build, "privrace"))
    if not os.access(cli, os.X_OK):
        print(f"soak: no privrace command at {cli}", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.join(args.build, "python"))
    try:
        import privrace
    except ImportError as e:
        print(f"soak: the Python module is not built in {args.build}/python: {e}", file=sys.stderr)
        return 77  # ctest's skip code
    own_dir = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="privrace-soak-"))
    for d in ("in", "out", "py"):
        os.makedirs(os.path.join(args.workdir, d), exist_ok=True)

    warnings.filterwarnings("ignore", message="N-hat")  # noise-dominated sketches are expected

    def on_alarm(signum, frame):
        raise Timeout()
    signal.signal(signal.SIGALRM, on_alarm)

    soak = Soak(args, privrace)
    os.chdir(soak.run.out)           # anything a command drops in its working folder shows up
    sys_tmp = tempfile.gettempdir()
    marks = []

    def mark():
        marks.append(dict(calls=soak.run.calls, seconds=round(time.monotonic() - t0, 1),
                          workdir_files=count_files(args.workdir) - count_files(soak.run.cap),
                          command_tmpdir_files=count_files(soak.run.tmp),
                          system_tmpdir_entries=len(os.listdir(sys_tmp)),
                          soak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)))
        if args.progress and (soak.run.calls or len(marks) == 1):
            m = marks[-1]
            print(f"soak: {m['calls']} calls, {m['seconds']} s, files: workdir {m['workdir_files']}, "
                  f"command TMPDIR {m['command_tmpdir_files']}, {sys_tmp} {m['system_tmpdir_entries']}; "
                  f"peak RSS of a call so far {max((max(v) for v in soak.run.rss.values()), default=0) / 1024:.1f} MiB",
                  flush=True)

    def no_growth():
        if marks[-1]["workdir_files"] > marks[0]["workdir_files"] or marks[-1]["command_tmpdir_files"]:
            fail(f"files grew: {marks[0]} -> {marks[-1]}")

    t0 = time.monotonic()
    mark()
    k = args.case if args.case is not None else 0
    next_mark = args.progress
    try:
        while soak.run.calls < args.calls:
            soak.run_case(k)
            if args.case is not None:
                break
            k += 1
            if args.progress and soak.run.calls >= next_mark:
                mark()
                next_mark += args.progress
                no_growth()
        if marks[-1]["calls"] != soak.run.calls:
            mark()
            no_growth()
    except SoakFailure as e:
        print(f"soak: FAILED at call {soak.run.calls} (case {soak.case}, seed {args.seed}): {e}\n"
              f"  the call: {soak.run.last}\n"
              f"  rerun:    {sys.executable} {os.path.abspath(__file__)} --seed {args.seed} --case {soak.case} "
              f"--build {args.build} --cli {args.cli} --workdir DIR\n"
              f"  files kept in {args.workdir}", file=sys.stderr)
        return 1
    wall = time.monotonic() - t0
    rss = soak.run.rss
    allrss = [v for vs in rss.values() for v in vs]
    summary = dict(
        calls=soak.run.calls, failures=0, cases=soak.cases, bad_calls=soak.bad_calls, seed=args.seed,
        wall_s=round(wall, 1),
        peak_rss_mib={c: round(max(v) / 1024, 1) for c, v in sorted(rss.items())},
        median_rss_mib={c: round(float(np.median(v)) / 1024, 1) for c, v in sorted(rss.items())},
        peak_rss_first_last_tenth_mib={c: [round(max(v[:max(1, len(v) // 10)]) / 1024, 1),
                                           round(max(v[-max(1, len(v) // 10):]) / 1024, 1)] for c, v in sorted(rss.items())},
        calls_per_command={c: len(v) for c, v in sorted(rss.items())},
        seconds_per_command={c: round(s, 1) for c, s in sorted(soak.run.wall.items())},
        marks=marks)
    print(f"soak: {soak.run.calls} calls, 0 failures ({soak.bad_calls} deliberately bad calls refused as "
          f"expected), {wall:.0f} s; cases {soak.cases}; peak RSS of a call {max(allrss) / 1024:.1f} MiB "
          f"({', '.join(f'{c} {m}' for c, m in summary['peak_rss_mib'].items())}); files at the start / end: "
          f"workdir {marks[0]['workdir_files']} / {marks[-1]['workdir_files']}, command TMPDIR "
          f"{marks[0]['command_tmpdir_files']} / {marks[-1]['command_tmpdir_files']}, {sys_tmp} "
          f"{marks[0]['system_tmpdir_entries']} / {marks[-1]['system_tmpdir_entries']}; soak process peak RSS "
          f"{marks[-1]['soak_rss_mib']} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    if own_dir and not args.keep and args.case is None:
        os.chdir("/")
        shutil.rmtree(args.workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

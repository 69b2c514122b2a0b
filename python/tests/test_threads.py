"""A RaceSketch shared by threads, Ctrl-C during a fit, and arrays of either byte order.

The thread and signal checks run in a subprocess: a crash (or a hang) fails the test instead of
taking pytest down with it."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import privrace
from conftest import grid_points


def run_python(code, timeout=240):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout,
                       env=env)
    return p.returncode, p.stdout, p.stderr


def test_queries_while_another_thread_fits_do_not_crash():
    # The sketch's counts (R x W int64, 800 KB) are replaced by every fit; without the lock a
    # query still reading the old ones reads freed memory (a segfault in the query worker).
    rc, out, err = run_python("""
        import threading
        import numpy as np, privrace
        rng = np.random.default_rng(0)
        x = rng.normal(size=(20000, 4)).astype(np.float32)
        q = rng.normal(size=(3000, 4))
        sk = privrace.RaceSketch("l2", rows=400, width=256, bandwidth=2.0).fit(x, epsilon=1.0)
        stop = threading.Event()
        errors, done = [], [0]

        def reader():
            try:
                while not stop.is_set():
                    d = sk.query(q)
                    assert d.shape == (3000,)
                    assert sk.counts.shape == (400, 256) and sk.header["width"] == 256
                    done[0] += 1
            except BaseException as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for i in range(40):
                sk.fit(x[: 5000 + 300 * i], epsilon=1.0, threads=2)
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors
        print("ok", done[0])
    """)
    assert rc == 0 and out.startswith("ok"), (rc, out, err[-3000:])
    assert int(out.split()[1]) > 0


def test_merges_both_ways_at_once_do_not_deadlock():
    rc, out, err = run_python("""
        import threading, warnings
        import numpy as np, privrace
        warnings.simplefilter("error")  # releases fit for release: not a word
        x = np.random.default_rng(0).normal(size=(5000, 4)).astype(np.float32)
        # Different hash seeds: each merge takes both locks, then is refused (the sketches do not grow).
        a = privrace.RaceSketch("l2", rows=400, width=256, bandwidth=2.0, hash_seed=11).fit(x, epsilon=1.0)
        b = privrace.RaceSketch("l2", rows=400, width=256, bandwidth=2.0, hash_seed=12).fit(x, epsilon=1.0)
        errors, refused = [], [0]

        def merge(target, part):
            try:
                for _ in range(1000):
                    try:
                        target.merge(part)
                    except ValueError as e:
                        assert "cannot merge" in str(e), e
                        refused[0] += 1
                    target.query(x[:20])
            except BaseException as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=merge, args=(a, b)), threading.Thread(target=merge, args=(b, a))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert refused[0] == 2000, refused
        print("ok")
    """, timeout=120)
    assert rc == 0 and out.startswith("ok"), (rc, out, err[-3000:])


@pytest.mark.parametrize("layout", ["float32 in place", "float64 converted"])
def test_ctrl_c_stops_a_fit_promptly(layout):
    rc, out, err = run_python(f"""
        import os, signal, threading, time
        import numpy as np, privrace
        layout = {layout!r}
        x = np.random.default_rng(0).normal(size=(3_000_000, 8)).astype(np.float32)
        if layout.startswith("float64"):
            x = x.astype(np.float64)
        t0 = time.perf_counter()
        privrace.RaceSketch("l2", rows=1000, width=64, bandwidth=2.0).fit(x[:300_000], epsilon=1.0, threads=1)
        full = 10 * (time.perf_counter() - t0)  # what the whole fit takes with R = 1000, roughly
        rows = int(min(20_000, max(1000, 1000 * 8.0 / full)))  # about 8 s on any machine
        full *= rows / 1000
        sk = privrace.RaceSketch("l2", rows=rows, width=64, bandwidth=2.0)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.perf_counter()
        try:
            sk.fit(x, epsilon=1.0, threads=1)
            print("finished", time.perf_counter() - t0, full)
        except KeyboardInterrupt:
            print("interrupted", time.perf_counter() - t0, full)
    """)
    assert rc == 0, (rc, out, err[-3000:])
    what, seconds, full = out.split()
    seconds, full = float(seconds), float(full)
    assert full > 4.0, f"the fit is too quick ({full:.1f} s) to test an interruption"
    assert what == "interrupted", out
    assert seconds < 0.5 + max(1.5, full / 4), out


@pytest.mark.parametrize("dtype", [">f4", ">f8", "<f4", "<f8", ">i8"])
def test_either_byte_order_gives_the_same_counts(dtype):
    x = grid_points(2000, 3, seed=7)  # on the grid 1/256: exact in float32
    q = grid_points(50, 3, seed=8)
    if dtype.endswith("i8"):
        x, q = np.round(x * 4), np.round(q * 4)

    def sketch():
        return privrace.RaceSketch("l2", rows=50, width=32, bandwidth=2.0, seed=3)

    want = sketch().fit(x, epsilon=None, allow_non_private=True)
    got = sketch().fit(x.astype(dtype), epsilon=None, allow_non_private=True)
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_array_equal(want.kernel_sums(q.astype(dtype)), want.kernel_sums(q))

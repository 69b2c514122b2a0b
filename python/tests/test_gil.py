"""fit and query release the GIL: a Python thread keeps running while the engine works."""
import threading
import time

import numpy as np

import privrace


def longest_stall(work):
    """The longest stretch of `work` during which a Python thread could not run, and how long
    `work` took. A call holding the GIL stalls the thread for (nearly) all of it."""
    stalls = []  # (from, to) of every pause of the ticker longer than 10 ms
    stop = threading.Event()

    def ticker():
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            if now - last > 0.01:
                stalls.append((last, now))
            last = now

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    work()
    t1 = time.perf_counter()
    time.sleep(0.05)
    stop.set()
    t.join()
    overlap = max([min(b, t1) - max(a, t0) for a, b in stalls] + [0.0])
    return overlap, t1 - t0


def test_fit_and_query_release_the_gil():
    x = np.random.default_rng(0).normal(size=(200_000, 8)).astype(np.float32)
    sk = privrace.RaceSketch("l2", rows=2000, width=64, bandwidth=2.0, seed=1)  # fit: about 0.4 s on one thread
    stall, seconds = longest_stall(lambda: sk.fit(x, epsilon=1.0, threads=1))
    assert seconds > 0.1
    assert stall < 0.5 * seconds, (stall, seconds)
    stall, seconds = longest_stall(lambda: sk.query(x[:100_000]))
    assert stall < 0.5 * seconds, (stall, seconds)

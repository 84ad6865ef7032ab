"""Many threads sharing one client: launches from 8 threads reading each other's handles give
exact results, and dropping handles while another thread syncs never deadlocks."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, i32, kernel
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.runner import TIMEOUT_S, read_array

THREADS = 8
LAUNCHES = 500
N = 256


@kernel
def accumulate(src: Array[i32], dst: Array[i32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = dst[i] + src[i]


def test_eight_threads_reading_each_others_inputs_are_exact(client):
    rng = np.random.default_rng(8)
    inputs = [rng.integers(-1000, 1000, N, dtype=np.int32) for _ in range(THREADS)]
    sources: list[object] = [None] * THREADS
    outputs: list[object] = [None] * THREADS
    written = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            # each thread writes its own input on its own stream, then reads the others'
            sources[k] = client.create_from_slice(inputs[k])
            outputs[k] = client.create_from_slice(np.zeros(N, np.int32))
            written.wait(TIMEOUT_S)
            dst = ArrayArg(outputs[k], N)
            for t in range(LAUNCHES):
                src = sources[(k + 1 + t % (THREADS - 1)) % THREADS]
                accumulate.launch(client, RudaCount(1), RudaDim(N), ArrayArg(src, N), dst)
            client.sync().result(timeout=TIMEOUT_S)
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(TIMEOUT_S)
    assert not errors, errors[0]
    for k in range(THREADS):
        want = np.zeros(N, np.int64)
        for t in range(LAUNCHES):
            want += inputs[(k + 1 + t % (THREADS - 1)) % THREADS]
        np.testing.assert_array_equal(read_array(client, outputs[k], np.int32), want)


def test_dropping_handles_while_another_thread_syncs_never_deadlocks(client):
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            while not stop.is_set():
                handles = [client.create_from_slice(b"x" * 4096) for _ in range(16)]
                del handles
                gc.collect()
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    def syncer() -> None:
        try:
            while not stop.is_set():
                client.sync().result(timeout=TIMEOUT_S)
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    pool = [threading.Thread(target=churn), threading.Thread(target=syncer)]
    for t in pool:
        t.start()
    time.sleep(1.0)
    stop.set()
    for t in pool:
        t.join(TIMEOUT_S)
    assert not any(t.is_alive() for t in pool), "a thread is stuck"
    assert not errors, errors[0]

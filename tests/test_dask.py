"""ruda in Dask tasks, on a LocalCluster of two in-process workers on loopback: each worker
opens its device once, devices are spread over the workers, data kept by one task is used in
place by the next on the same worker and freed by ``release``, waiting on a worker that left
the cluster fails at once, and misuse says what to do. Every cluster takes free ports, so test
processes running side by side do not collide.

Skips without ``distributed`` (``pip install 'ruda[dask]'``; the ``test`` extra has it)."""

from __future__ import annotations

import gc
import re
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="needs pip install 'ruda[dask]'")

import ruda_core as ruda  # noqa: E402  # after the skip: ruda_core.dask imports distributed
from ruda_core.dask import (  # noqa: E402
    DeviceRef,
    RudaWorkerPlugin,
    gather,
    keep,
    kept,
    release,
    worker_client,
)
from ruda_core.errors import WorkerLost  # noqa: E402
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32  # noqa: E402
from ruda_core.runtime import RudaCount, RudaDim  # noqa: E402
from ruda_core.tensor import RudaTensor  # noqa: E402

N = 1024


@kernel
def add_one(x: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + u32(1)


def _local_cluster(threads_per_worker: int) -> distributed.LocalCluster:
    """Two in-process workers. The scheduler's HTTP server, which runs even without the
    dashboard, takes a free loopback port instead of 8787."""
    return distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=threads_per_worker,
        processes=False,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )


@pytest.fixture(scope="module")
def dask_client() -> Iterator[distributed.Client]:
    with _local_cluster(2) as cluster, distributed.Client(cluster) as client:
        yield client


def _device_and_client_id() -> tuple[str, int]:
    c = worker_client()
    return str(c.device), id(c)


def _upload(key: str) -> DeviceRef:
    return keep(key, RudaTensor.from_numpy(worker_client(), np.arange(N, dtype=np.uint32)))


def _add_one(ref: DeviceRef) -> DeviceRef:
    x = kept(ref)
    add_one.launch(worker_client(), RudaCount(N // 256), RudaDim(256), ArrayArg(x.handle, N))
    return ref


def _read_and_release(ref: DeviceRef) -> tuple[list[int], int, int]:
    client = worker_client()
    values = kept(ref).to_numpy(client).tolist()
    gc.collect()
    before = client.memory_usage().bytes_in_use
    assert release(ref) and not release(ref)
    deadline = time.monotonic() + 30
    while True:  # the worker's other thread may have used the memory last, on its own stream
        gc.collect()
        client.sync().result(timeout=60)
        after = client.memory_usage().bytes_in_use
        if after <= before - 4 * N or time.monotonic() > deadline:
            return values, before, after
        time.sleep(0.01)


def _workers(dask_client) -> list[str]:
    return sorted(dask_client.scheduler_info()["workers"])


def test_each_worker_opens_its_device_once(dask_client):
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))
    for address in _workers(dask_client):
        seen = dask_client.gather(
            [
                dask_client.submit(_device_and_client_id, workers=address, pure=False)
                for _ in range(4)
            ]
        )
        assert {device for device, _ in seen} == {"cpu"}
        assert len({ident for _, ident in seen}) == 1  # one client, opened at setup


def test_devices_are_spread_over_the_workers(dask_client):
    present = {str(d) for d in ruda.enumerate_all_devices()}
    if "opencl:0" not in present:
        pytest.skip("needs opencl:0 beside cpu to tell two workers' devices apart")
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu", "opencl:0"]))
    devices = dask_client.run(lambda dask_worker: str(dask_worker.plugins["ruda"].client.device))
    assert sorted(devices.values()) == ["cpu", "opencl:0"]
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))  # back, for the other tests


def test_kept_data_stays_on_the_device_between_tasks(dask_client):
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))
    refs = dask_client.gather([dask_client.submit(_upload, f"t-{k}", pure=False) for k in range(4)])
    results = []
    for ref in refs:  # one chain at a time: the workers share this process's cpu pool
        step = dask_client.submit(_add_one, ref, workers=ref.worker, pure=False)
        step = dask_client.submit(_add_one, step, workers=ref.worker, pure=False)
        done = dask_client.submit(_read_and_release, step, workers=ref.worker, pure=False)
        results.append(done.result())
    for values, before, after in results:
        assert values == list(range(2, N + 2))  # two kernels ran on the same kept memory
        assert after <= before - 4 * N  # release gave the memory back to the pool
    assert all(
        not keys
        for keys in dask_client.run(lambda dask_worker: dask_worker.plugins["ruda"].keys()).values()
    )


def test_kept_on_another_worker_names_the_worker(dask_client):
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))
    first, second = _workers(dask_client)
    ref = dask_client.submit(_upload, "elsewhere", workers=first, pure=False).result()
    assert ref.worker == first and ref.device == "cpu"
    wrong = dask_client.submit(_add_one, ref, workers=second, pure=False)
    with pytest.raises(KeyError, match=f"on worker {second}"):
        wrong.result()
    assert dask_client.submit(release, ref, workers=first, pure=False).result()


def test_a_ref_whose_worker_left_raises_within_the_timeout():
    with _local_cluster(1) as cluster, distributed.Client(cluster) as client:
        client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))
        ref = client.submit(_upload, "doomed", pure=False).result()
        step = client.submit(_add_one, ref, workers=ref.worker, pure=False)
        assert gather(client, [step], [ref], timeout_s=60) == [ref]  # its worker is alive
        doomed = next(w for w in cluster.workers.values() if w.address == ref.worker)
        client.sync(doomed.close)
        lost = client.submit(_add_one, ref, workers=ref.worker, pure=False)
        start = time.monotonic()
        with pytest.raises(WorkerLost, match=re.escape(f"worker {ref.worker} left the cluster")):
            gather(client, [lost], [ref], timeout_s=10)
        assert time.monotonic() - start < 10
        assert not lost.done()  # Dask itself would have kept waiting
        lost.cancel()
        again = client.submit(_upload, "doomed", pure=False).result()  # the recipe, re-run
        assert again.worker != ref.worker
        done = client.submit(_read_and_release, again, workers=again.worker, pure=False)
        [(values, _, _)] = gather(client, [done], [again], timeout_s=60)
        assert values == list(range(N))


def test_a_worker_leaving_while_its_task_waits_raises():
    with _local_cluster(1) as cluster, distributed.Client(cluster) as client:
        client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))
        ref = client.submit(_upload, "waiting", pure=False).result()
        blocker = distributed.Event("blocker", client=client)
        held = client.submit(blocker.wait, workers=ref.worker, pure=False)
        queued = client.submit(_add_one, ref, workers=ref.worker, pure=False)  # behind held
        doomed = next(w for w in cluster.workers.values() if w.address == ref.worker)
        closer = threading.Timer(0.5, client.sync, [doomed.close])
        closer.start()
        start = time.monotonic()
        try:
            with pytest.raises(WorkerLost, match=re.escape(ref.worker)):
                gather(client, [queued], [ref], timeout_s=30)
            assert time.monotonic() - start < 30
        finally:
            blocker.set()
            closer.join()
            held.cancel()
            queued.cancel()


def test_waiting_too_long_on_a_live_worker_is_a_timeout(dask_client):
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))
    ref = dask_client.submit(_upload, "slow", pure=False).result()
    blocker = distributed.Event("slow", client=dask_client)
    held = dask_client.submit(blocker.wait, workers=ref.worker, pure=False)
    try:
        with pytest.raises(TimeoutError, match=re.escape("1 of 1 futures are not done after 0.5")):
            gather(dask_client, [held], [ref], timeout_s=0.5)
    finally:
        blocker.set()
    assert gather(dask_client, [held], [ref], timeout_s=60) == [True]
    assert dask_client.submit(release, ref, workers=ref.worker, pure=False).result()


def test_outside_a_worker_or_without_the_plugin_is_a_clear_error():
    with pytest.raises(ValueError):
        worker_client()  # not inside a Dask task
    with pytest.raises(RuntimeError, match="not set up"):
        _ = RudaWorkerPlugin().client
    with pytest.raises(ValueError, match="empty"):
        RudaWorkerPlugin(devices=[])


def _opened() -> str:
    return str(worker_client().device)


def test_a_plugin_whose_setup_failed_says_why_in_later_tasks(dask_client):
    with pytest.raises(ValueError, match="nosuch:0"):
        dask_client.register_plugin(RudaWorkerPlugin(devices=["nosuch:0"]))
    with pytest.raises(RuntimeError, match=r"setup failed on this worker: ValueError: .*nosuch:0"):
        dask_client.submit(_opened, pure=False).result()
    dask_client.register_plugin(RudaWorkerPlugin(devices=["cpu"]))  # back, for the other tests
    assert dask_client.submit(_opened, pure=False).result() == "cpu"

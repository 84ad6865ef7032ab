"""ruda kernels inside Dask tasks, with the data kept on each worker's device between tasks.

    python examples/dask_pipeline.py            # two local workers on "cpu"
    python examples/dask_pipeline.py cuda:0     # on any device `ruda devices` lists

Each chunk is uploaded once by a task, which keeps it on its worker's device and returns a
DeviceRef; the next tasks run on that worker (``workers=ref.worker``), launch a kernel on the
kept tensor in place and return only a small result. ``ruda_core.dask.gather`` waits for them
and raises ``WorkerLost`` if a worker keeping a chunk leaves the cluster (Dask alone would wait
for it forever); ``upload`` is the recipe that computes a lost chunk again on a live worker. On a
cluster of GPU machines, connect a ``distributed.Client`` to its scheduler instead of the
LocalCluster, and leave ``devices`` out: each worker then takes a GPU it sees, round robin.
"""

from __future__ import annotations

import sys

import numpy as np
from distributed import Client, LocalCluster

from ruda_core.dask import (
    DeviceRef,
    RudaWorkerPlugin,
    gather,
    keep,
    kept,
    release,
    worker_client,
)
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.tensor import RudaTensor

CHUNKS = 4
CHUNK = 1 << 14


@kernel
def scale_shift(x: Array[f32], a: f32, b: f32):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = a * x[i] + b


def upload(k: int, chunk: np.ndarray) -> DeviceRef:
    """Runs on a worker: the chunk goes to its device and stays there."""
    return keep(f"chunk-{k}", RudaTensor.from_numpy(worker_client(), chunk))


def transform(ref: DeviceRef, a: float, b: float) -> DeviceRef:
    """Runs on the worker that keeps ``ref``: a kernel on the kept tensor, in place."""
    x = kept(ref)
    n = x.shape[0]
    scale_shift.launch(
        worker_client(), RudaCount((n + 255) // 256), RudaDim(256), ArrayArg(x.handle, n), a, b
    )
    return ref


def total(ref: DeviceRef) -> float:
    """Runs on the worker that keeps ``ref``: reads the chunk back, sums it, frees it."""
    x = kept(ref)
    value = float(x.to_numpy(worker_client()).sum(dtype=np.float64))
    release(ref)
    return value


def main(device: str = "cpu") -> None:
    data = np.random.default_rng(0).random((CHUNKS, CHUNK), dtype=np.float32)
    with (
        LocalCluster(  # the scheduler's HTTP server takes a free port, not 8787
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(RudaWorkerPlugin(devices=[device]))
        refs = [client.submit(upload, k, data[k], pure=False) for k in range(CHUNKS)]
        kept_refs = client.gather(refs)
        sums = []
        for ref in kept_refs:
            step = client.submit(transform, ref, 2.0, 1.0, workers=ref.worker, pure=False)
            sums.append(client.submit(total, step, workers=ref.worker, pure=False))
        got = gather(client, sums, kept_refs, timeout_s=120)
        workers = len(client.scheduler_info()["workers"])
    want = [float((np.float32(2) * c + np.float32(1)).sum(dtype=np.float64)) for c in data]
    if not np.allclose(got, want, rtol=1e-6):
        raise SystemExit(f"the chunks' sums {got} differ from NumPy's {want}")
    print(
        f"{CHUNKS} chunks kept on {device} by a cluster of {workers} Dask workers agree with NumPy"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")

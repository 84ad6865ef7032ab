"""ruda on a Dask cluster: each worker opens its device once, and tasks keep data there.

Dask's scheduler distributes the work; this module only gives each worker its ruda client and
a place for device memory that outlives a task. Needs ``pip install 'ruda[dask]'``.

* :class:`RudaWorkerPlugin`, registered once with ``client.register_plugin(...)``, opens on each
  worker the client of the device chosen for it (from a list of devices, round robin by the
  worker's position, or by default over the CUDA GPUs the worker sees, whichever backend
  drives them, else the reference device);
* :func:`worker_client` is that client, inside a task;
* :func:`keep` stores a :class:`~ruda_core.tensor.RudaTensor` (or a handle) in the worker's
  plugin and returns a :class:`DeviceRef` naming the key and the worker; a later task gets
  the tensor back with :func:`kept`, submitted to that worker
  (``client.submit(f, ref, workers=ref.worker)``), and :func:`release` frees it. Data that
  a task returns travels through Dask as host bytes; data that is kept never leaves the device;
* :func:`gather` waits for such tasks like ``client.gather``, but raises
  :class:`~ruda_core.errors.WorkerLost` when the worker of a ref has left the cluster.

Kept memory lives as long as its worker: a worker that dies takes it along, and Dask's recovery
(re-running the task on another worker) does not recreate it. Worse, Dask raises nothing for a
task pinned to a worker that is gone: the task waits for that worker forever. Wait with
:func:`gather`, and keep the recipe of kept memory (the task that built it and its inputs):
after :class:`~ruda_core.errors.WorkerLost`, submit that task again without ``workers=`` and
use the new ref it returns. This module never starts a cluster; nothing else in ruda imports
it, so Dask is needed only by code that does.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distributed import Client, Future, WorkerPlugin, get_worker, wait

from .errors import WorkerLost
from .interop.dlpack import DLDeviceType
from .plugins import REFERENCE_BACKEND, devices_sharing
from .plugins import client as open_client
from .runtime.client import ComputeClient
from .runtime.memory.handle import Handle
from .tensor import RudaTensor

if TYPE_CHECKING:
    from distributed import Worker

__all__ = [
    "PLUGIN_NAME",
    "DeviceRef",
    "RudaWorkerPlugin",
    "gather",
    "keep",
    "kept",
    "release",
    "worker_client",
]

#: The name the plugin is registered under on every worker.
PLUGIN_NAME = "ruda"

Kept = RudaTensor | Handle
#: Seconds between two checks of :func:`gather` that the refs' workers are still there.
_POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """Device memory kept on a worker: what a task returns instead of the data.

    :param key: the name it is kept under on that worker.
    :param worker: the worker's address; submit the tasks that use it there, and wait for
        them with :func:`gather`, which raises :class:`~ruda_core.errors.WorkerLost` when this
        worker has left the cluster (Dask itself would wait for it forever).
    :param device: the device that holds it (``"cuda:1"``).
    """

    key: str
    worker: str
    device: str


class RudaWorkerPlugin(WorkerPlugin):
    """Opens the ruda client of each worker's device once, when the worker starts (or when the
    plugin is registered), and holds the memory tasks :func:`keep` there.

    :param devices: the devices to spread the workers over: worker ``k`` (its name when Dask
        names workers by integers, as ``LocalCluster`` does; else a hash of its name) takes
        ``devices[k % len(devices)]``. None: every device the worker sees whose memory is CUDA
        memory (the backends declaring DLPack device type CUDA answer), else the reference
        backend's device (``["cpu"]``).
    """

    name = PLUGIN_NAME

    def __init__(self, devices: Sequence[str] | None = None) -> None:
        if devices is not None and not devices:
            raise ValueError("devices is empty; pass device names such as ['cuda:0', 'cuda:1']")
        self.devices = None if devices is None else list(devices)
        self._client: ComputeClient | None = None
        #: why ``setup`` could not open the worker's device, if it could not
        self._failed: Exception | None = None
        self._kept: dict[str, Kept] = {}
        self._lock = threading.Lock()
        self.worker_address = ""

    def __getstate__(self) -> tuple[list[str] | None]:
        """What travels to the workers: the device list alone (a worker's state is its own)."""
        return (self.devices,)

    def __setstate__(self, state: tuple[list[str] | None]) -> None:
        self.__init__(state[0])  # type: ignore[misc]  # a fresh worker-side plugin

    def setup(self, worker: Worker) -> None:
        """Open this worker's client. A device that cannot be opened fails the worker's setup
        with the driver's error."""
        devices = self.devices
        if devices is None:
            gpus = [str(d) for d in devices_sharing(DLDeviceType.CUDA)]
            devices = gpus or [REFERENCE_BACKEND]
        self.worker_address = str(worker.address)
        try:
            self._client = open_client(devices[_ordinal(worker.name) % len(devices)])
        except Exception as exc:
            self._failed = exc
            raise

    def teardown(self, worker: Worker) -> None:
        """Drop every kept handle (its memory returns to the device's pool)."""
        with self._lock:
            self._kept.clear()

    @property
    def client(self) -> ComputeClient:
        """This worker's client.

        :raises RuntimeError: before ``setup`` ran, or after it failed (naming why).
        """
        if self._client is None:
            if self._failed is not None:
                raise RuntimeError(
                    "the ruda worker plugin's setup failed on this worker: "
                    f"{type(self._failed).__name__}: {self._failed}. Register the plugin again "
                    "with devices this worker can open"
                ) from self._failed
            raise RuntimeError("the ruda worker plugin is not set up on this worker yet")
        return self._client

    def keep(self, key: str, value: Kept) -> DeviceRef:
        """Hold ``value`` under ``key`` (replacing what was kept there) and return its ref."""
        with self._lock:
            self._kept[key] = value
        return DeviceRef(key, self.worker_address, str(self.client.device))

    def kept(self, key: str) -> Kept:
        """What is kept under ``key``.

        :raises KeyError: naming this worker, when nothing is kept there under ``key``.
        """
        with self._lock:
            value = self._kept.get(key)
        if value is None:
            raise KeyError(
                f"nothing is kept under {key!r} on worker {self.worker_address}; submit the task "
                "to the worker its DeviceRef names (client.submit(f, ref, workers=ref.worker))"
            )
        return value

    def release(self, key: str) -> bool:
        """Drop what is kept under ``key``; False when nothing was."""
        with self._lock:
            return self._kept.pop(key, None) is not None

    def keys(self) -> list[str]:
        """The keys kept on this worker."""
        with self._lock:
            return list(self._kept)


def _ordinal(name: object) -> int:
    """A worker's position: its name when that is an integer, else a stable hash of it."""
    if isinstance(name, int):
        return name
    text = str(name)
    return int(text) if text.isdigit() else zlib.crc32(text.encode())


def _plugin() -> RudaWorkerPlugin:
    """The plugin on the worker running the calling task.

    :raises ValueError: outside a Dask task (from ``get_worker``).
    :raises RuntimeError: on a worker without the plugin.
    """
    plugin = get_worker().plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, RudaWorkerPlugin):
        raise RuntimeError(
            "this Dask worker has no ruda plugin; register it first: "
            "client.register_plugin(RudaWorkerPlugin())"
        )
    return plugin


def worker_client() -> ComputeClient:
    """The ruda client of the worker running the calling task."""
    return _plugin().client


def keep(key: str, value: Kept) -> DeviceRef:
    """Keep ``value`` on this worker's device under ``key``, for later tasks on this worker."""
    return _plugin().keep(key, value)


def kept(ref: DeviceRef | str) -> Kept:
    """What a task kept on this worker (by its ref or key).

    :raises KeyError: when it is not kept on this worker (the task ran on another one).
    """
    return _plugin().kept(ref if isinstance(ref, str) else ref.key)


def release(ref: DeviceRef | str) -> bool:
    """Drop what is kept under ``ref`` on this worker; False when nothing was."""
    return _plugin().release(ref if isinstance(ref, str) else ref.key)


def gather(
    client: Client,
    futures: Sequence[Future[object]],
    refs: Iterable[DeviceRef],
    timeout_s: float = 60.0,
) -> list[object]:
    """``client.gather(futures)`` for tasks pinned to the workers that keep ``refs``
    (``workers=ref.worker``), which fails instead of waiting forever when one of those workers
    has left the cluster.

    Dask raises nothing for a task pinned to a worker that is gone: the task waits for that
    worker. This function asks the scheduler which workers are in the cluster before it waits
    and several times a second while it waits.

    :returns: the futures' results, in order.
    :raises WorkerLost: as soon as the worker of one of ``refs`` is not in the cluster, naming
        it and the key. The futures stay pending; cancel them, then compute the kept memory
        again on a live worker (submit the task that built it without ``workers=``).
    :raises TimeoutError: when the futures are not all done after ``timeout_s`` seconds.
    :raises Exception: the error of a task that failed, as ``client.gather`` raises it.
    """
    pinned = list(refs)
    deadline = time.monotonic() + timeout_s
    while True:
        # a query to the scheduler, not a cached view
        live = client.nthreads()  # type: ignore[no-untyped-call]  # untyped API
        for ref in pinned:
            if ref.worker not in live:
                raise WorkerLost(
                    f"worker {ref.worker} left the cluster, and {ref.key!r} kept on its "
                    f"{ref.device} went with it; a task pinned to it would wait forever. "
                    "Cancel the futures that use it and compute it again on a live worker: "
                    "submit the task that kept it without workers= and use the DeviceRef it "
                    f"returns ({len(live)} workers remain)"
                )
        left = deadline - time.monotonic()
        if left <= 0:
            done = [f.done() for f in futures]  # type: ignore[no-untyped-call]  # untyped API
            pending = done.count(False)
            raise TimeoutError(
                f"{pending} of {len(futures)} futures are not done after {timeout_s} s while "
                "every worker they are pinned to is alive; raise timeout_s, or look at the "
                "tasks on the Dask dashboard"
            )
        try:
            poll_s = min(_POLL_S, left)
            wait(futures, timeout=poll_s)  # type: ignore[no-untyped-call]  # untyped API
        except TimeoutError:
            continue  # not done yet: check the workers again
        return list(client.gather(futures))  # type: ignore[no-untyped-call]  # untyped API

"""Real kernels and candidates for the autotune tests: two ways of doubling a ``u32`` array,
one of them deliberately slower (a loop of multiply-adds that the compiler cannot fold, because
the factors are launch arguments), and candidates that fail at launch or at the next sync."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

import ruda_core as ruda
from ruda_core.autotune import Tunable, TunableSet, anchor
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import ComputeClient, Handle, KernelTask, RudaCount, RudaDim
from ruda_core.testing.faults import BrokenSourceTask

N = 4096
UNITS = 64
#: extra loop iterations per element of the slow variant
REPS = 256


@kernel
def double_fast(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * u32(2)


@kernel
def double_slow(x: Array[u32], out: Array[u32], reps: u32, mul: u32, add: u32):
    i = ABSOLUTE_POS
    if i < out.len():
        acc = x[i]
        for _k in range(reps):
            acc = acc * mul + add  # mul = 1, add = 0: the same result, after `reps` steps
        out[i] = acc * u32(2)


@kernel
def double_in_place(x: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] * u32(2)


def present_devices() -> list[str]:
    """The devices these tests run on: ``cpu``, and ``opencl:0`` where a driver is installed."""
    present = {str(d) for d in ruda.enumerate_all_devices()}
    return [d for d in ("cpu", "opencl:0") if d in present]


def inputs(client: ComputeClient, n: int = N) -> tuple[Handle, int]:
    """A device array holding ``0 .. n-1`` and its length: the inputs of every set here."""
    return client.create_from_slice(np.arange(n, dtype=np.uint32)), n


def read_u32(client: ComputeClient, handle: Handle) -> np.ndarray:
    return np.frombuffer(client.read_one(handle), np.uint32)


def _count(n: int) -> RudaCount:
    return RudaCount((n + UNITS - 1) // UNITS)


def run_fast(client: ComputeClient, x: Handle, n: int, units: int = UNITS) -> Handle:
    out = client.empty(4 * n)
    double_fast.launch(
        client,
        RudaCount((n + units - 1) // units),
        RudaDim(units),
        ArrayArg(x, n),
        ArrayArg(out, n),
    )
    return out


#: OpenCL's type ids of a GPU and a CPU: on a GPU the loop runs longer, to outlast a launch's
#: own cost, which the host's enqueueing decides in a loaded run (twelve test workers on an H100
#: host: the fast variant's runs cost 268 µs, more than the slow one's 184 µs of kernel at 256
#: times); on an OpenCL CPU device too, to outlast the noise of other processes' kernels on the
#: same cores (3 ms a launch for both variants in a loaded two-worker test run)
_GPU_TYPE = 1
_CPU_TYPE = 2
_SLOWER = {_GPU_TYPE: 2048, _CPU_TYPE: 64}


def run_slow(client: ComputeClient, x: Handle, n: int, times: int = 1) -> Handle:
    """The slow variant; ``times`` lengthens its loop further."""
    out = client.empty(4 * n)
    opencl = str(client.device).startswith("opencl")
    reps = times * REPS * (_SLOWER.get(client.device.to_id().type_id, 1) if opencl else 1)
    double_slow.launch(
        client, _count(n), RudaDim(UNITS), ArrayArg(x, n), ArrayArg(out, n), reps, 1, 0
    )
    return out


def run_too_big(client: ComputeClient, x: Handle, n: int) -> Handle:
    """Fails at launch: more units per cube than any device here allows."""
    return run_fast(client, x, n, units=1 << 20)


_BROKEN = BrokenSourceTask(KernelTask(double_fast.definition()))


def run_broken(client: ComputeClient, x: Handle, n: int) -> Handle:
    """Launches without an error, then fails at the next sync: its source does not build."""
    out = client.empty(4 * n)
    client.launch(_BROKEN, _count(n), RudaDim(UNITS), [x.binding(), out.binding()], (), (n, n))
    return out


_names = itertools.count()


def unique(name: str) -> str:
    """A set name no other test uses (results of one test never answer another's)."""
    return f"tests.autotune.{name}.{next(_names)}"


def key_of(x: Handle, n: int) -> int:
    return anchor(n)


def make_set(name: str, *candidates: tuple[str, Callable[..., Any]], **options: Any) -> TunableSet:
    """A set over ``(x, n)`` inputs with a unique name and the candidates given in order."""
    tunables = [Tunable(label, fn) for label, fn in candidates]
    return TunableSet(unique(name), key_of, tunables, **options)

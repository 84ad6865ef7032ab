"""A calibrated long-running kernel, for tests about asynchrony, ordering and fences.

:class:`Spin` launches a kernel whose units each iterate a 32-bit linear congruential generator
``iterations`` times and store the result. The iteration count is calibrated per device so one
launch keeps the device busy for about ``target_s`` seconds, which lets a test observe what
happens while work is still queued (a fence that completes too early, a read that is not
ordered after a writer on another stream). The expected values are computed on the host in
O(log iterations), so checking them costs nothing.
"""

from __future__ import annotations

import time

import numpy as np

from ..ir import Elem, KernelDefinition, Op
from ..runtime import ComputeClient, Handle, KernelTask, RudaCount, RudaDim
from .irbuild import KernelBuilder, builtin, const
from .runner import TIMEOUT_S

__all__ = ["Spin", "lcg_power", "spin_definition"]

_A = 1664525
_C = 1013904223
_MASK = 0xFFFF_FFFF


def spin_definition() -> KernelDefinition:
    """``out[i] = lcg^iterations(seed + i)`` for ``i < len(out)``, one LCG step per iteration."""
    k = KernelBuilder("conformance_spin")
    out = k.array("out", Elem.U32)
    seed = k.scalar("seed", Elem.U32)
    iterations = k.scalar("iterations", Elem.U32)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    with k.if_(k.let(Op.LT, Elem.BOOL, i, k.let(Op.LEN, Elem.U32, out))):
        x = k.local("x", Elem.U32)
        k.assign(x, k.let(Op.ADD, Elem.U32, seed, i))
        step = k.local("step", Elem.U32)
        with k.range_(step, const(0, Elem.U32), iterations):
            product = k.let(Op.MUL, Elem.U32, x, const(_A, Elem.U32))
            k.assign(x, k.let(Op.ADD, Elem.U32, product, const(_C, Elem.U32)))
        k.store(out, i, x)
    return k.build()


_TASK = KernelTask(spin_definition())


def lcg_power(iterations: int) -> tuple[int, int]:
    """``(a, c)`` with ``x -> a * x + c`` (mod 2**32) equal to ``iterations`` LCG steps."""
    a, c = 1, 0
    step_a, step_c = _A, _C
    n = iterations
    while n:
        if n & 1:
            a, c = (a * step_a) & _MASK, (c * step_a + step_c) & _MASK
        step_a, step_c = (step_a * step_a) & _MASK, (step_c * step_a + step_c) & _MASK
        n >>= 1
    return a, c


class Spin:
    """The spin kernel on one client, calibrated to run about ``target_s`` seconds per launch.

    :param units: units per launch (one cube of ``units``). The more units share a launch's
        time, the fewer iterations each unit takes: lavapipe stops a plane's loops after 65 535
        turns, which 64 units neared (22.7 M iterations, 22 000 turns of 1 024 for 0.3 s on
        the 2-core box) and a calibration step timed a little short went past.
    """

    def __init__(self, client: ComputeClient, target_s: float = 0.3, units: int = 256) -> None:
        self.client = client
        self.units = min(units, client.properties().max_units_per_ruda)
        self.iterations = 16
        self.seconds = 0.0
        self._calibrate(target_s)

    def timed(self, iterations: int | None = None) -> float:
        """Seconds from a launch of ``iterations`` (default: the calibrated ones) until a read
        of its output is back: the kernel's time as the device runs it now, and a round trip."""
        handle = self.client.empty(4 * self.units)
        start = time.perf_counter()
        self.launch(handle, seed=1, iterations=iterations)
        # a read waits for the kernel through stream order alone: calibration must not trust
        # sync(), which some of the tests using it are about
        self.client.read_async([handle]).result(timeout=TIMEOUT_S)
        return time.perf_counter() - start

    def _calibrate(self, target_s: float) -> None:
        """Find the iterations of ``target_s`` from what ``n`` more of them add to a launch's
        time (a read's round trip, long on a loaded host or device, is in both and cancels).
        Where a launch of them then takes under half of ``target_s`` (a round trip that was
        long in one measurement only, a device whose clock rose meanwhile), they are scaled up
        by what it took and timed again, up to three times."""
        self.timed(1)  # compile and build outside the measurement
        n = 256
        added = self.timed(2 * n) - self.timed(n)
        while added < target_s / 8 and n < 1 << 28:
            n *= 8
            added = self.timed(2 * n) - self.timed(n)
        self.iterations = int(min(max(n * target_s / max(added, 1e-6), 1), _MASK))
        for _ in range(3):
            # the shorter of two: another process's kernels may share the device and slow one
            self.seconds = min(self.timed(self.iterations), self.timed(self.iterations))
            if self.seconds >= target_s / 2 or self.iterations == _MASK:
                break
            scaled = self.iterations * target_s / max(self.seconds, 1e-6)
            self.iterations = int(min(scaled, _MASK))

    def launch(
        self,
        handle: Handle,
        seed: int = 12345,
        iterations: int | None = None,
        client: ComputeClient | None = None,
    ) -> None:
        """Enqueue one spin over ``handle`` (at least ``4 * units`` bytes) on ``client``'s
        stream (default: the calibrated client's); returns at once."""
        n = self.iterations if iterations is None else iterations
        (client or self.client).launch(
            _TASK,
            RudaCount(1),
            RudaDim(self.units),
            [handle.binding()],
            [np.uint32(seed), np.uint32(n)],
            [self.units],
        )

    def expected(self, seed: int = 12345, iterations: int | None = None) -> np.ndarray:
        """What a spin with ``seed`` leaves in its ``units`` u32 outputs."""
        a, c = lcg_power(self.iterations if iterations is None else iterations)
        x = (seed + np.arange(self.units, dtype=np.uint64)) & _MASK
        return ((x * a + c) & _MASK).astype(np.uint32)

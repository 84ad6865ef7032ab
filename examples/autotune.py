"""Autotuning: let the device pick the fastest way to launch an operation, once per problem size.

``scale(x, alpha)`` has three candidates: one unit per element with 64 or with 256 units per
cube, and a grid-stride loop over a fixed number of cubes. A :class:`TunableSet` groups them
with a key function (the size rounded up to a power of two, so that sizes of one magnitude share
a result); a :class:`Tuner` benchmarks them on the first call of each key, runs the winner, and
stores the choice under ``RUDA_CACHE_DIR`` so that the next process does not measure again.

Run: ``python examples/autotune.py [device]``.
"""

from __future__ import annotations

import sys

import numpy as np

import ruda_core as ruda
from ruda_core.autotune import Tunable, TunableSet, Tuner, anchor
from ruda_core.lang import ABSOLUTE_POS, RUDA_COUNT, RUDA_DIM, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim


@kernel
def scale_each(x: Array[f32], out: Array[f32], alpha: f32):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * alpha


@kernel
def scale_strided(x: Array[f32], out: Array[f32], alpha: f32):
    i = ABSOLUTE_POS
    while i < out.len():
        out[i] = x[i] * alpha
        i += RUDA_COUNT * RUDA_DIM


def one_per_unit(units: int):
    """A candidate launching one unit per element, ``units`` units per cube."""

    def run(client: ComputeClient, x: Handle, n: int, alpha: float) -> Handle:
        out = client.empty(4 * n)
        cubes = RudaCount((n + units - 1) // units)
        scale_each.launch(client, cubes, RudaDim(units), ArrayArg(x, n), ArrayArg(out, n), alpha)
        return out

    return run


def grid_stride(client: ComputeClient, x: Handle, n: int, alpha: float) -> Handle:
    out = client.empty(4 * n)
    cubes = RudaCount(max(client.properties().compute_units, 1) * 4)
    scale_strided.launch(client, cubes, RudaDim(256), ArrayArg(x, n), ArrayArg(out, n), alpha)
    return out


SCALE = TunableSet(
    "examples.scale",
    key_fn=lambda x, n, alpha: anchor(n),  # alpha does not change which candidate is fastest
    tunables=[
        Tunable("one-per-unit-64", one_per_unit(64)),
        Tunable("one-per-unit-256", one_per_unit(256)),
        Tunable("grid-stride", grid_stride),
    ],
)
TUNER = Tuner()


def main(device: str = "cpu") -> None:
    client = ruda.client(device)
    for n in (50_000, 60_000, 1 << 18):  # 50,000 and 60,000 share the key 65,536
        x = np.linspace(0, 1, n, dtype=np.float32)
        handle = client.create_from_slice(x)
        out = TUNER.execute(client, SCALE, handle, n, 3.0)  # measures on a new key, then runs
        result = np.frombuffer(client.read_one(out), np.float32)
        np.testing.assert_allclose(result, 3 * x, rtol=1e-6)
        tuned = TUNER.tune(client, SCALE, handle, n, 3.0)  # the stored result: timings, errors
        timings = ", ".join(f"{name} {ns / 1e3:.0f} us" for name, ns in tuned.timings_ns)
        print(f"{device} n={n} (key {tuned.key}): {tuned.winner} wins ({timings})")
    print(f"{device}: {TUNER.stats}")


if __name__ == "__main__":
    main(*sys.argv[1:2])

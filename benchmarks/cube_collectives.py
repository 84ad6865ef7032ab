"""The cube collectives next to a shared-memory tree over the cube, on one device.

For cubes of 256 and 1024 units (those the device takes), 1024 cubes of f32 small integers:
``units_sum`` and ``units_inclusive_sum`` (one plane operation per plane, then the pass over
the planes' partials in groups of ``SLOTS``), and the same results from a tree over a
``SharedMemory`` of one slot per unit (``log2(units)`` barriers; the form ``ruda_core.ops``
takes without planes). On a device without planes wider than one lane (an OpenCL driver without
subgroups, or any OpenCL device with ``RUDA_OPENCL_SUBGROUPS=0``) the collectives' pass does all
the work, and the tree is what it is measured against.

Columns: the device time of one launch in ms (``client.profile``, the least of a few), and the
collective's time as a multiple of the tree's. Every result is checked against NumPy.
Run: ``python benchmarks/cube_collectives.py opencl:0`` (or ``cuda:0``, ``cpu``).
"""

from __future__ import annotations

import sys

import numpy as np

import ruda_core as ruda
from ruda_core.lang import (
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    Kernel,
    f32,
    kernel,
    units_inclusive_sum,
    units_sum,
)
from ruda_core.ops.cube_fold import cube_exclusive_sum, cube_reduce
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

CUBES = 1024
ROUNDS = 5


@kernel
def collective_sum(x: Array[f32], out: Array[f32]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    out[i] = units_sum(x[i])


@kernel
def collective_scan(x: Array[f32], out: Array[f32]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    out[i] = units_inclusive_sum(x[i])


@kernel
def tree_sum(x: Array[f32], out: Array[f32], UNITS: Comptime[int]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    out[i] = cube_reduce(x[i], "sum", False, UNITS)


@kernel
def tree_scan(x: Array[f32], out: Array[f32], UNITS: Comptime[int]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    out[i] = cube_exclusive_sum(x[i], False, UNITS) + x[i]


def _device_ms(
    client: ComputeClient, body: Kernel, units: int, args: tuple[ArrayArg, ...], **options: int
) -> float:
    """The device time of one launch of ``body`` over :data:`CUBES` cubes of ``units``, in ms:
    the least of :data:`ROUNDS`, after one launch that builds it."""

    def run() -> None:
        body.launch(client, RudaCount(CUBES), RudaDim(units), *args, **options)

    run()
    best = float("inf")
    for _ in range(ROUNDS):
        _, duration = client.profile(run, "collective")
        best = min(best, duration.execution_ns / 1e6)
    return best


def main(device: str) -> None:
    client = ruda.client(device)
    props = client.properties()
    print(f"{device} ({props.name}), plane_dim {props.plane_dim}, {CUBES} cubes of f32")
    print(f"{'units':>6} {'result':>10} {'collective ms':>14} {'tree ms':>9} {'ratio':>6}")
    for units in (256, 1024):
        if units > props.max_units_per_ruda:
            continue
        n = CUBES * units
        host = np.random.default_rng(0).integers(-8, 9, n).astype(np.float32)
        x = ArrayArg(client.create_from_slice(host), n)
        out = ArrayArg(client.empty(4 * n), n)
        cubes = host.reshape(CUBES, units)
        wanted = {
            "sum": np.repeat(cubes.sum(axis=1)[:, None], units, axis=1),
            "inclusive": np.cumsum(cubes, axis=1),
        }
        pairs = {"sum": (collective_sum, tree_sum), "inclusive": (collective_scan, tree_scan)}
        for result, (collective, tree) in pairs.items():
            times = []
            for body, options in ((collective, {}), (tree, {"UNITS": units})):
                times.append(_device_ms(client, body, units, (x, out), **options))
                got = np.frombuffer(client.read_one(out.handle), np.float32).reshape(cubes.shape)
                if not np.array_equal(got, wanted[result]):
                    raise SystemExit(f"{body.name} on {units} units differs from NumPy's")
            print(
                f"{units:>6} {result:>10} {times[0]:>14.3f} {times[1]:>9.3f} "
                f"{times[0] / times[1]:>6.2f}"
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")

"""Host-side launch choices of the portable operations: accumulator types, the cube size and
the reduction path of row kernels on a device.

Pure functions of a client's properties and features: no IR, no launch, no driver import.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Elem
from ..runtime import ComputeClient, Feature

__all__ = ["MAX_BLOCK", "RowGeometry", "accumulator", "row_geometry"]

#: The most units per cube the row kernels use (and the length of their shared scratch).
MAX_BLOCK = 256


def accumulator(elem: Elem) -> Elem:
    """The accumulator element for float data of ``elem``: f64 for f64, else f32 (the host side
    of :data:`.reduction.Acc`)."""
    return Elem.F64 if elem is Elem.F64 else Elem.F32


@dataclass(frozen=True, slots=True)
class RowGeometry:
    """How a row kernel covers one row: ``block`` units per cube (a power of two, at most
    :data:`MAX_BLOCK`), reducing through planes or through shared memory."""

    block: int
    planes: bool


def _floor_pow2(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def _ceil_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def row_geometry(client: ComputeClient, features: int) -> RowGeometry:
    """The cube size and reduction path for rows of ``features`` elements on ``client``'s device.

    The cube is the smallest power of two that covers the row, between 32 units (or one plane)
    and :data:`MAX_BLOCK`, within the device's limits. Planes are used only where the device
    declares ``Feature.PLANE`` with a power-of-two ``plane_dim`` above 1 that fits a cube; the
    cube then holds at most ``plane_dim ** 2`` units (two plane reductions cover it). The cube
    size is a launch value, not part of the kernel, so rows of every length share one compiled
    kernel per element type and path.
    """
    props = client.properties()
    plane = props.plane_dim
    use_planes = client.features().has(Feature.PLANE) and plane > 1 and plane & (plane - 1) == 0
    upper = min(MAX_BLOCK, _floor_pow2(min(props.max_units_per_ruda, props.max_ruda_dim[0])))
    if use_planes:
        upper = min(upper, plane * plane)
        if upper < plane:
            use_planes = False
    lower = plane if use_planes else 32
    block = max(min(_ceil_pow2(features), upper), min(lower, upper))
    return RowGeometry(block=block, planes=use_planes)

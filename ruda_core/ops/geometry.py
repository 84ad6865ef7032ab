"""Host-side launch choices of the portable operations: accumulator types, the cube size and
the reduction path of row kernels on a device.

Pure functions of a client's properties and features: no IR, no launch, no driver import.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Elem
from ..runtime import ComputeClient, Feature

__all__ = [
    "HELD_BLOCK",
    "MAX_BLOCK",
    "HeldGeometry",
    "RowGeometry",
    "accumulator",
    "held_geometry",
    "line_width",
    "row_geometry",
]

#: The most units per cube the strided row kernels use (and the length of their scratch).
MAX_BLOCK = 256
#: The most units per cube the held row kernels use (and the length of their scratch): NVIDIA's
#: OpenCL runs them with at most 256 work-items, and CUDA has registers for 256 threads of them.
HELD_BLOCK = 256
#: The most lines a unit holds when one plane holds a row.
PLANE_ITEMS = 8
#: The lines per unit a cube that holds a row aims at (fewer units when the row is short).
CUBE_ITEMS = 4
#: The most lines a unit holds; wider rows take the strided kernels.
MAX_ITEMS = 16
#: The planes per cube when each plane holds a row.
PLANES_PER_CUBE = 4
#: The widest line access, in bytes.
LINE_NBYTES = 16


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


@dataclass(frozen=True, slots=True)
class HeldGeometry:
    """How a held row kernel covers a row: ``block`` units per cube, each unit holding
    ``items`` lines of ``line`` elements; a plane per row (``plane_rows``, ``block`` a multiple
    of the plane) or a cube per row, reducing a cube through planes (``planes``) or shared
    memory."""

    block: int
    line: int
    items: int
    plane_rows: bool
    planes: bool

    @property
    def rows_per_cube(self) -> int:
        """Rows one cube holds at a time."""
        return PLANES_PER_CUBE if self.plane_rows else 1


def line_width(features: int, nbytes: int, offset_bytes: int) -> int:
    """The widest line (8, 4, 2 or 1 elements of ``nbytes``, at most :data:`LINE_NBYTES`)
    that divides a row of ``features`` and the byte offsets of every operand (their bitwise or
    is ``offset_bytes``)."""
    width = 8
    while width > 1 and (
        width * nbytes > LINE_NBYTES or features % width or offset_bytes % (width * nbytes)
    ):
        width //= 2
    return width


def held_geometry(client: ComputeClient, features: int, line: int) -> HeldGeometry | None:
    """The held-kernel geometry for rows of ``features`` read in lines of ``line`` elements on
    ``client``'s device, or None where a row needs more than :data:`MAX_ITEMS` lines per unit
    (then the strided kernels run).

    A plane holds a row when the device has planes (as :func:`row_geometry` decides) and
    ``Feature.PARTIAL_PLANE``, and the row fits :data:`PLANE_ITEMS` lines per lane,
    :data:`PLANES_PER_CUBE` rows per cube. Else a cube holds it: the smallest power-of-two cube
    (at least 128 units or the device's limit) for :data:`CUBE_ITEMS` lines per unit, within
    :data:`HELD_BLOCK`, the device's limits and, reducing through planes, ``plane_dim ** 2``.
    ``items`` is a power of two, so few specialisations serve every width.
    """
    props = client.properties()
    plane = props.plane_dim
    use_planes = client.features().has(Feature.PLANE) and plane > 1 and plane & (plane - 1) == 0
    upper = min(HELD_BLOCK, _floor_pow2(min(props.max_units_per_ruda, props.max_ruda_dim[0])))
    if use_planes and upper < plane:
        use_planes = False
    lines = features // line
    # a plane per row only where partial planes run too: on PoCL 5.0's subgroups the plane-row
    # kernels gave wrong results, and there the cube-row kernels serve every width
    plane_rows = use_planes and client.features().has(Feature.PARTIAL_PLANE)
    if plane_rows and lines <= plane * PLANE_ITEMS and plane * PLANES_PER_CUBE <= upper:
        items = _ceil_pow2(-(-lines // plane))
        return HeldGeometry(plane * PLANES_PER_CUBE, line, items, plane_rows=True, planes=True)
    if use_planes:
        upper = min(upper, plane * plane)
    lower = min(128, upper)
    if use_planes:
        lower = max(lower, plane)
    block = max(min(_ceil_pow2(-(-lines // CUBE_ITEMS)), upper), lower)
    items = _ceil_pow2(-(-lines // block))
    if items > MAX_ITEMS:
        return None
    return HeldGeometry(block, line, items, plane_rows=False, planes=use_planes)


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

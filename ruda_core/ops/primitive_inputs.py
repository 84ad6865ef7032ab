"""The one array a device-wide primitive (``sum``, ``cumsum``, ``sort``, ``bincount`` …) takes,
and the host-side choices those primitives share: result and computing element types and cube
sizes.

An operand is a ``RudaTensor`` or ``TensorBuffer`` (the primitive runs on its device), or, after
a leading client (``sum(client, x)``), anything ``ruda_core.asarray`` takes, copied to that
client's device. Every check raises before anything is enqueued. This module launches no kernel.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arrays import asarray
from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import ComputeClient, Feature, LaunchConfigError, UnsupportedFeature
from ..runtime.layer_norm_args import TensorBuffer
from ..tensor import RudaTensor
from .operands import as_buffer, check_device, client_and_operands, is_on

__all__ = [
    "FOLDED",
    "UNTUNED",
    "Cubes",
    "cube_units",
    "fold_elem",
    "is_last_axis",
    "named_elem",
    "one_operand",
    "sum_elem",
]

#: The element types of ``sum``, ``min``, ``max``, ``cumsum``, ``sort`` and ``argsort``: bool,
#: integers and floats of 8 to 64 bits but bf16. The reductions and scans compute the narrow
#: ones in a wider type (:func:`fold_elem`); the sorts read them as their unsigned bits.
FOLDED = frozenset(
    {Elem.BOOL, Elem.I8, Elem.U8, Elem.I16, Elem.U16, Elem.I32, Elem.U32, Elem.I64, Elem.U64}
    | {Elem.F16, Elem.F32, Elem.F64}
)
#: NumPy's sum of each integer or bool element type, and the sum where the device lacks it.
_SUMS = {
    Elem.BOOL: (Elem.I64, Elem.I32),
    Elem.I8: (Elem.I64, Elem.I32),
    Elem.I16: (Elem.I64, Elem.I32),
    Elem.I32: (Elem.I64, Elem.I32),
    Elem.U8: (Elem.U64, Elem.U32),
    Elem.U16: (Elem.U64, Elem.U32),
    Elem.U32: (Elem.U64, Elem.U32),
}
#: The element a fold of each narrow element type computes in: plane operations and WGSL
#: hold 32-bit values, and f16 sums round once, where written.
_WIDER = {
    Elem.BOOL: Elem.U32,
    Elem.I8: Elem.I32,
    Elem.I16: Elem.I32,
    Elem.U8: Elem.U32,
    Elem.U16: Elem.U32,
    Elem.F16: Elem.F32,
}
#: Reductions and scans of at most this many elements run the first of their candidates that
#: runs, untuned: launch latency, not the candidates, sets their time on a GPU (a quarter of a
#: microsecond of the H200's bandwidth), and tuning would build every candidate's kernels.
UNTUNED = 1 << 18


def one_operand(
    op: str, args: tuple[Any, ...], elems: Collection[Elem]
) -> tuple[ComputeClient, RudaTensor]:
    """The client and the contiguous tensor of a primitive called as ``op(x)`` or
    ``op(client, x)``; in the second form ``x`` may be a NumPy array (or anything
    ``ruda_core.asarray`` takes), copied to the client's device first.

    :raises TypeError: for a missing or extra operand, or an array-like ``x`` without a client.
    :raises InvalidHandle: for a ``TensorBuffer`` of another device than the client's.
    :raises LayoutError: for a non-contiguous tensor, or one of ``2**32`` or more elements.
    :raises LaunchConfigError: for an element type outside ``elems``.
    :raises UnsupportedFeature: for an element type the device lacks.
    """
    if len(args) == 1:
        x = args[0]
        if type(x) is RudaTensor and x.flat is not None and x.elem in elems:
            # contiguous, within its handle and u32 indexing: checked when it was made
            client = ComputeClient.owning(x.handle)
            if client.features().supports(x.elem):
                return client, x
    if args and isinstance(args[0], ComputeClient) and len(args) == 2:
        value = args[1]
        if not isinstance(value, RudaTensor | TensorBuffer) or (
            type(value) is RudaTensor and not is_on(value, args[0])
        ):  # copied to the client's device (a tensor of another device too)
            value = asarray(value, args[0])
        client, operands = args[0], (value,)
    else:
        client, operands = client_and_operands(op, args)
    if len(operands) != 1:
        raise TypeError(f"{op} takes one array (after an optional client); got {len(operands)}")
    buf = as_buffer(op, "x", operands[0])
    check_device(op, "x", buf, client)
    if buf.elem not in elems:
        names = ", ".join(sorted(e.value for e in elems))
        raise LaunchConfigError(f"{op}: x is {buf.elem}; expected one of {names}")
    if not client.features().supports(buf.elem):
        raise UnsupportedFeature(
            f"{op}: x is {buf.elem}, which {client.device} does not support; convert it to a "
            "32-bit type first"
        )
    return client, RudaTensor(buf.handle, buf.shape, buf.strides, buf.elem)


def named_elem(op: str, arg: ArrayArg) -> Elem:
    """The element type ``arg`` names, which a kernel's output takes.

    :raises LaunchConfigError: when ``arg`` names none.
    """
    if arg.elem is None:
        raise LaunchConfigError(f"{op}: the output array must name its element type (elem=...)")
    return arg.elem


def sum_elem(client: ComputeClient, elem: Elem) -> Elem:
    """The element of a sum or cumulative sum of ``elem``: NumPy's (i64 for bool and signed
    integers, u64 for unsigned ones, the float itself), or i32 and u32 where the device lacks
    the 64-bit integer type."""
    sums = _SUMS.get(elem)
    if sums is None:
        return elem
    wide, narrow = sums
    return wide if client.features().supports(wide) else narrow


def fold_elem(elem: Elem) -> Elem:
    """The element a reduction or scan whose result is ``elem`` computes in: u32 for bool, u8
    and u16, i32 for i8 and i16, f32 for f16 (each result converted once, where written), else
    ``elem`` itself."""
    return _WIDER.get(elem, elem)


def cube_units(client: ComputeClient, wanted: int) -> int:
    """``wanted`` units per cube, or the device's largest power of two below it."""
    props = client.properties()
    most = min(props.max_units_per_ruda, props.max_ruda_dim[0])
    units = wanted
    while units > most:
        units //= 2
    return units


@dataclass(frozen=True, slots=True)
class Cubes:
    """How a primitive's kernels cover their data: ``units`` per cube (a power of two the device
    takes), ``items`` elements per unit per step, and whether cube-wide sums, minima and maxima
    go through planes (``planes``) or through shared memory (:mod:`.cube_fold`)."""

    units: int
    items: int
    planes: bool

    @classmethod
    def on(cls, client: ComputeClient, units: int, items: int, planes: bool) -> Cubes:
        """``units`` (or the device's largest power of two below) and ``items``, through planes
        where ``planes`` asks for them and the device has them."""
        has = client.features().has(Feature.PLANE)
        return cls(cube_units(client, units), items, planes and has)

    @property
    def tile(self) -> int:
        """The elements a cube takes per step."""
        return self.units * self.items


def is_last_axis(axis: object, rank: int) -> bool:
    """Whether ``axis`` is an int (NumPy's too, not a bool) naming the last of ``rank`` axes
    (``-1`` or ``rank - 1``)."""
    whole = isinstance(axis, int | np.integer) and not isinstance(axis, bool)
    return whole and rank > 0 and axis in (-1, rank - 1)

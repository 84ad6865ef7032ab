"""Variables of the kernel IR: what an instruction reads and writes.

Every variable is a frozen, hashable value. Scalars (:data:`Operand`) are per-unit values:
constants, locals, builtins and scalar parameters; a :class:`Local` of ``width`` above 1 is a
line, ``width`` lanes of its element (see :mod:`~ruda_core.ir.ops`). Arrays
(:data:`ArrayVar`) are indexed: global array/tensor parameters, shared memory (one per cube)
and local arrays (one per unit).
This module holds data only; it must not know about any backend.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from .types import Elem

__all__ = [
    "LINE_WIDTHS",
    "ArrayVar",
    "Builtin",
    "BuiltinKind",
    "Const",
    "Local",
    "LocalArray",
    "Operand",
    "Param",
    "ParamKind",
    "SharedArray",
    "SourceLoc",
]


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A place in the user's Python source: used in error messages and generated-code comments."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Const:
    """A compile-time constant of element ``elem``. ``value`` is already representable in it."""

    value: int | float | bool
    elem: Elem

    def __str__(self) -> str:
        return f"{self.value!r}:{self.elem}"

    def cast(self, elem: Elem) -> Const:
        """This constant converted to ``elem`` by the rules of ``CAST``: to ``bool`` it is
        ``value != 0``, to a float its nearest value (an infinity beyond the largest), to an
        integer truncated toward zero and wrapped to the type's width, a NaN or an infinity
        to 0 (``CAST`` leaves a float out of the integer's range unspecified). What a target
        that evaluates casts of literals itself, WGSL's, needs: its shader compiler refuses
        an overflowing conversion."""
        if elem is Elem.BOOL:
            return Const(self.value != 0, elem)
        if elem.is_float:  # as NumPy converts, from this constant's type
            with np.errstate(over="ignore"):
                value = np.array(self.value, self.elem.numpy).astype(elem.numpy)
            return Const(float(value), elem)
        if not math.isfinite(self.value):
            return Const(0, elem)
        n = int(self.value) & ((1 << elem.bits) - 1)  # int() truncates a float toward zero
        return Const(n - (1 << elem.bits) if elem.is_signed and n >> (elem.bits - 1) else n, elem)


#: The lane counts a line may have.
LINE_WIDTHS = (2, 4, 8)


@dataclass(frozen=True, slots=True)
class Local:
    """A mutable per-unit value: a scalar, or for ``width`` in :data:`LINE_WIDTHS` a line of
    ``width`` lanes of ``elem``. Names are unique within a kernel and keep the user's spelling
    where one exists (temporaries start with ``_``)."""

    name: str
    elem: Elem
    width: int = 1

    @property
    def type_text(self) -> str:
        """``f32`` for a scalar, ``f32x4`` for a line (IR dumps and messages)."""
        return f"{self.elem}x{self.width}" if self.width > 1 else str(self.elem)

    def __str__(self) -> str:
        return self.name


class BuiltinKind(enum.Enum):
    """Position builtins; all are ``u32``. Linear forms follow CubeCL: x fastest, then y, then z.

    ``UNIT_POS`` = z*dim.x*dim.y + y*dim.x + x within the cube; ``RUDA_POS`` likewise over the
    cube count; ``ABSOLUTE_POS_<A>`` = ``RUDA_POS_<A> * RUDA_DIM_<A> + UNIT_POS_<A>`` and
    ``ABSOLUTE_POS`` linearises those over the total units per axis. ``PLANE_DIM`` is the plane
    (warp/subgroup) width; ``UNIT_POS_PLANE`` the unit's lane in its plane
    (``UNIT_POS % PLANE_DIM``).
    """

    ABSOLUTE_POS = "ABSOLUTE_POS"
    ABSOLUTE_POS_X = "ABSOLUTE_POS_X"
    ABSOLUTE_POS_Y = "ABSOLUTE_POS_Y"
    ABSOLUTE_POS_Z = "ABSOLUTE_POS_Z"
    UNIT_POS = "UNIT_POS"
    UNIT_POS_X = "UNIT_POS_X"
    UNIT_POS_Y = "UNIT_POS_Y"
    UNIT_POS_Z = "UNIT_POS_Z"
    RUDA_POS = "RUDA_POS"
    RUDA_POS_X = "RUDA_POS_X"
    RUDA_POS_Y = "RUDA_POS_Y"
    RUDA_POS_Z = "RUDA_POS_Z"
    RUDA_DIM = "RUDA_DIM"
    RUDA_DIM_X = "RUDA_DIM_X"
    RUDA_DIM_Y = "RUDA_DIM_Y"
    RUDA_DIM_Z = "RUDA_DIM_Z"
    RUDA_COUNT = "RUDA_COUNT"
    RUDA_COUNT_X = "RUDA_COUNT_X"
    RUDA_COUNT_Y = "RUDA_COUNT_Y"
    RUDA_COUNT_Z = "RUDA_COUNT_Z"
    PLANE_DIM = "PLANE_DIM"
    UNIT_POS_PLANE = "UNIT_POS_PLANE"


@dataclass(frozen=True, slots=True)
class Builtin:
    """A read-only position builtin (always ``u32``)."""

    kind: BuiltinKind

    @property
    def elem(self) -> Elem:
        return Elem.U32

    def __str__(self) -> str:
        return self.kind.value


class ParamKind(enum.Enum):
    ARRAY = "array"  #: a global buffer with a length (``Array[T]``)
    TENSOR = "tensor"  #: a global buffer with a length, shape and strides (``Tensor[T]``)
    SCALAR = "scalar"  #: a by-value scalar argument


@dataclass(frozen=True, slots=True)
class Param:
    """A kernel parameter. ``index`` is its position among the kernel's parameters.

    For tensors, ``rank`` is fixed when the kernel is specialised (part of the kernel's identity);
    shapes and strides are runtime values. ``read_only`` is derived by the front end (no store or
    atomic targets it) and lets backends mark buffers ``const``.
    """

    index: int
    name: str
    kind: ParamKind
    elem: Elem
    rank: int = 0
    read_only: bool = False

    @property
    def is_array(self) -> bool:
        """True for ARRAY and TENSOR parameters (both are indexable buffers)."""
        return self.kind is not ParamKind.SCALAR

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class SharedArray:
    """Shared memory: one array of ``length`` elements per cube, visible to all its units.

    A *dynamic* shared array has a ``size``: a ``u32`` scalar parameter whose value at launch is
    its length (``length`` is then 0).
    """

    name: str
    elem: Elem
    length: int
    size: Param | None = None

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class LocalArray:
    """A private array of ``length`` elements per unit."""

    name: str
    elem: Elem
    length: int

    def __str__(self) -> str:
        return self.name


#: A per-unit scalar value an instruction can read. Scalar params only (``kind is SCALAR``).
Operand = Const | Local | Builtin | Param
#: Something indexable. Params here are ARRAY or TENSOR params.
ArrayVar = Param | SharedArray | LocalArray

"""Type objects of the kernel language: scalar types, element variables, ``Array``, ``Tensor``
and ``Comptime``.

These objects are what kernel signatures and bodies name. In a signature they declare parameters
(``x: Array[f32]``, ``n: u32``, ``t: Tensor[Float]``, ``BLOCK: Comptime[int]``); in a body a scalar
type is a cast (``f32(i)``) and an element variable casts to the type it is bound to
(``Float(0)``). Python's ``bool`` in an annotation means ``bool_``. Outside kernels a scalar type
converts a host value to the matching NumPy scalar (``u32(5)`` is ``np.uint32(5)``). This module
builds no IR and must not import a driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..ir import FLOAT_ELEMS, INT_ELEMS, LINE_WIDTHS, NUMERIC_ELEMS, Elem

__all__ = [
    "Array",
    "ArrayType",
    "Comptime",
    "ComptimeType",
    "ElemVar",
    "Float",
    "Int",
    "LineType",
    "Numeric",
    "ScalarType",
    "Tensor",
    "TensorType",
    "annotation_type",
    "as_elem",
    "bf16",
    "bool_",
    "f16",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
]


@dataclass(frozen=True, slots=True)
class ScalarType:
    """A scalar element type of the language (``f32``, ``u32`` …).

    Inside a kernel ``f32(x)`` is a cast; on the host it returns the NumPy scalar of this type.
    """

    elem: Elem

    def __call__(self, value: object) -> np.generic:
        """The host value as a NumPy scalar of this type.

        :raises TypeError: for ``bf16``, which NumPy does not have.
        """
        return self.elem.numpy.type(value)  # type: ignore[no-any-return]  # numpy scalar ctor

    def __repr__(self) -> str:
        return "bool_" if self.elem is Elem.BOOL else self.elem.value


f16 = ScalarType(Elem.F16)
bf16 = ScalarType(Elem.BF16)
f32 = ScalarType(Elem.F32)
f64 = ScalarType(Elem.F64)
i8 = ScalarType(Elem.I8)
i16 = ScalarType(Elem.I16)
i32 = ScalarType(Elem.I32)
i64 = ScalarType(Elem.I64)
u8 = ScalarType(Elem.U8)
u16 = ScalarType(Elem.U16)
u32 = ScalarType(Elem.U32)
u64 = ScalarType(Elem.U64)
bool_ = ScalarType(Elem.BOOL)


def annotation_type(annotation: object) -> object:
    """An annotation with Python's ``bool`` read as ``bool_``."""
    return bool_ if annotation is bool else annotation


def as_elem(value: object) -> Elem:
    """The :class:`Elem` named by a scalar type, an ``Elem``, an elem name (``"f32"``) or a NumPy
    dtype-like.

    :raises TypeError: when ``value`` names no element type.
    """
    if isinstance(value, Elem):
        return value
    if isinstance(value, ScalarType):
        return value.elem
    if isinstance(value, str):
        try:
            return Elem(value)
        except ValueError:
            pass
    return Elem.from_dtype(value)


class ElemVar:
    """An element-type variable of a generic kernel or function.

    Every use of one variable in a kernel signature binds to one element type, taken from the
    bound arguments' types at launch (or given by keyword: ``k.launch(..., Float=f32)``). In a
    body ``V(x)`` casts to the bound type. Identity is the object; ``name`` is the keyword.

    :param bound: the allowed elements: another variable (its bound), scalar types or elements.
    """

    __slots__ = ("allowed", "name")

    def __init__(
        self, name: str, bound: ElemVar | Iterable[ScalarType | Elem] | None = None
    ) -> None:
        if not name.isidentifier():
            raise ValueError(f"ElemVar name {name!r} is not an identifier")
        self.name = name
        if bound is None:
            allowed = frozenset(Elem)
        elif isinstance(bound, ElemVar):
            allowed = bound.allowed
        else:
            allowed = frozenset(as_elem(b) for b in bound)
        if not allowed:
            raise ValueError(f"ElemVar {name!r} allows no element type")
        #: The element types this variable may bind to.
        self.allowed: frozenset[Elem] = allowed

    def __repr__(self) -> str:
        return self.name


Float = ElemVar("Float", FLOAT_ELEMS)
Int = ElemVar("Int", INT_ELEMS)
Numeric = ElemVar("Numeric", NUMERIC_ELEMS)

ElemSpec = ScalarType | ElemVar


@dataclass(frozen=True, slots=True)
class LineType:
    """``Line[T, n]``: a line of ``n`` lanes (2, 4 or 8) of ``T``, a scalar type or an element
    variable; it annotates a local (``acc: Line[f32, 4] = 0``).

    :raises TypeError: for another ``n`` or a ``T`` that is not an element type.
    """

    elem: ElemSpec
    width: int

    def __post_init__(self) -> None:
        if not isinstance(self.elem, ScalarType | ElemVar):
            raise TypeError(f"Line[T, n] needs an element type T such as f32, got {self.elem!r}")
        if self.width not in LINE_WIDTHS or isinstance(self.width, bool):
            raise TypeError(f"Line[T, n] has n in {LINE_WIDTHS}, got {self.width!r}")

    def __repr__(self) -> str:
        return f"Line[{self.elem!r}, {self.width}]"


def _elem_spec(item: object, what: str) -> ElemSpec:
    item = annotation_type(item)
    if not isinstance(item, ScalarType | ElemVar):
        raise TypeError(f"{what}[...] takes a scalar type or an ElemVar (f32, Float …): {item!r}")
    return item


@dataclass(frozen=True, slots=True)
class ArrayType:
    """The annotation ``Array[T]``: a global buffer of ``T`` with a runtime length."""

    elem: ElemSpec

    def __repr__(self) -> str:
        return f"Array[{self.elem!r}]"


@dataclass(frozen=True, slots=True)
class TensorType:
    """The annotation ``Tensor[T]``: a global buffer of ``T`` with a shape and strides whose rank
    is fixed when the kernel is specialised."""

    elem: ElemSpec

    def __repr__(self) -> str:
        return f"Tensor[{self.elem!r}]"


@dataclass(frozen=True, slots=True)
class ComptimeType:
    """The annotation ``Comptime[hint]``: a hashable Python value fixed per specialisation. The
    hint is documentation only."""

    hint: object = None


class Array:
    """``Array[T]``: a kernel parameter bound to an ``ArrayArg``. In a body ``x.len()`` is its
    length (``u32``) and ``x[i]`` an element."""

    def __class_getitem__(cls, item: object) -> ArrayType:
        return ArrayType(_elem_spec(item, "Array"))


class Tensor:
    """``Tensor[T]``: a kernel parameter bound to a ``TensorArg``. In a body ``t.len()``,
    ``t.shape(d)``, ``t.stride(d)`` (``u32``; ``d`` a compile-time int), ``t.rank()`` (a
    compile-time int) and ``t[i]`` (``i`` a linear element index)."""

    def __class_getitem__(cls, item: object) -> TensorType:
        return TensorType(_elem_spec(item, "Tensor"))


class Comptime:
    """``Comptime[...]`` (or bare ``Comptime``): a compile-time parameter passed by keyword at
    launch. Each distinct value specialises the kernel."""

    def __class_getitem__(cls, item: object) -> ComptimeType:
        return ComptimeType(item)

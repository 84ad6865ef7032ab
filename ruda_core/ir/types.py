"""Element types of the kernel IR.

An :class:`Elem` names a scalar type that every backend understands. Values of the IR are always
of exactly one element type; the IR has no implicit conversion (the language front end inserts
``CAST`` instructions). This module must not import a driver.
"""

from __future__ import annotations

import enum
import functools

import numpy as np

__all__ = ["FLOAT_ELEMS", "INT_ELEMS", "NUMERIC_ELEMS", "Elem"]


class Elem(enum.Enum):
    """A scalar element type. ``value`` is the short name used in IR dumps and cache keys."""

    BOOL = "bool"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"

    #: members are singletons compared by identity: hash them so too, in C (``Enum`` hashes
    #: the name in Python, and dicts keyed by element type are read on every launch)
    __hash__ = object.__hash__

    @property
    def nbytes(self) -> int:
        """Size of one element in bytes."""
        return _NBYTES[self]

    @property
    def is_float(self) -> bool:
        return self in FLOAT_ELEMS

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self in INT_ELEMS

    @property
    def is_signed(self) -> bool:
        """True for signed integers and floats."""
        return self.value[0] in "if"

    @property
    def is_numeric(self) -> bool:
        return self is not Elem.BOOL

    @property
    def bits(self) -> int:
        return 8 * self.nbytes

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of this element; for ``bf16``, ``ml_dtypes.bfloat16``."""
        if self is Elem.BF16:
            return _bfloat16()
        return np.dtype(_NUMPY_NAME[self])

    @classmethod
    def from_dtype(cls, dtype: object) -> Elem:
        """The element of a NumPy dtype (or anything ``np.dtype`` accepts).

        :raises TypeError: when the dtype has no IR element (complex, object, strings …).
        """
        dt = np.dtype(dtype)  # type: ignore[call-overload]  # np.dtype accepts any dtype-like
        found = _FROM_DTYPE.get(dt)
        if found is not None:
            return found
        if dt.name == "bfloat16":  # ml_dtypes' type, recognised without importing it
            _FROM_DTYPE[dt] = cls.BF16
            return cls.BF16
        for elem, name in _NUMPY_NAME.items():
            if dt == np.dtype(name):
                _FROM_DTYPE[dt] = elem
                return elem
        if not dt.isnative and dt.newbyteorder("=") in map(np.dtype, _NUMPY_NAME.values()):
            raise TypeError(
                f"dtype {dt} is not in this machine's byte order, which ruda's elements are in; "
                "convert it first: x.astype(x.dtype.newbyteorder('='))"
            )
        names = [*_NUMPY_NAME.values(), "bfloat16"]
        raise TypeError(f"dtype {dt} has no ruda element type; use one of {names}")

    def __repr__(self) -> str:
        return f"Elem.{self.name}"

    def __str__(self) -> str:
        return self.value


#: the dtypes :meth:`Elem.from_dtype` has answered, with their elements (a dozen at most)
_FROM_DTYPE: dict[np.dtype, Elem] = {}


@functools.cache
def _bfloat16() -> np.dtype:
    """``ml_dtypes.bfloat16``, imported at the first use of bf16 on the host (it costs
    milliseconds that a program without bf16 need not pay)."""
    import ml_dtypes

    dtype: np.dtype = np.dtype(ml_dtypes.bfloat16)  # ml_dtypes ships no stubs
    return dtype


_NBYTES = {
    Elem.BOOL: 1,
    Elem.I8: 1,
    Elem.I16: 2,
    Elem.I32: 4,
    Elem.I64: 8,
    Elem.U8: 1,
    Elem.U16: 2,
    Elem.U32: 4,
    Elem.U64: 8,
    Elem.F16: 2,
    Elem.BF16: 2,
    Elem.F32: 4,
    Elem.F64: 8,
}
_NUMPY_NAME = {
    Elem.BOOL: "bool",
    Elem.I8: "int8",
    Elem.I16: "int16",
    Elem.I32: "int32",
    Elem.I64: "int64",
    Elem.U8: "uint8",
    Elem.U16: "uint16",
    Elem.U32: "uint32",
    Elem.U64: "uint64",
    Elem.F16: "float16",
    Elem.F32: "float32",
    Elem.F64: "float64",
}

#: Floating-point elements, narrowest first.
FLOAT_ELEMS = frozenset({Elem.F16, Elem.BF16, Elem.F32, Elem.F64})
#: Integer elements (signed and unsigned, not bool).
INT_ELEMS = frozenset(
    {Elem.I8, Elem.I16, Elem.I32, Elem.I64, Elem.U8, Elem.U16, Elem.U32, Elem.U64}
)
#: Every element but bool.
NUMERIC_ELEMS = FLOAT_ELEMS | INT_ELEMS

"""Lane values and the arithmetic that needs more than a NumPy operator.

A *value* is the state of one IR variable over the lanes of a batch: a NumPy scalar (the same in
every lane), a 1-D array with one element per lane, a :class:`Lanes` (an integer vector known to
be ``start + step * lane``, so that memory accesses through it become slices) or a
:class:`Units` (one integer vector over a cube's units, the same in every cube: arithmetic on
it costs one cube's worth, and shared-memory accesses through it become 2-D slices or gathers
along the units) or a :class:`Split` (a value per cube plus a value per unit: a cube position
combined with unit positions, whose global accesses become copies of rows).

A :class:`Units` of a launch carries the launch's :class:`~ruda_cpu.lockstep.derived.Derived`:
what operations derive from it (``UNIT_POS >= d``, ``UNIT_POS - d``) is kept there, so that
every batch of the same size finds it again instead of computing it and tiling its pattern over
the batch anew.

Values are never mutated after creation; every operation returns a new value of the operation's
element type. Callers run under ``np.errstate(all="ignore")``: integer arithmetic wraps and
division by zero gives an unspecified value instead of warning. This module holds no state.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .derived import Derived

__all__ = [
    "Lanes",
    "Split",
    "UnitMask",
    "Units",
    "Value",
    "add",
    "arr",
    "bit_and",
    "bit_or",
    "bit_xor",
    "blend",
    "cast",
    "eq",
    "floor_div",
    "fma",
    "ge",
    "gt",
    "is_float",
    "lanes",
    "le",
    "logical_and",
    "logical_or",
    "lt",
    "maximum",
    "minimum",
    "mod",
    "mul",
    "ne",
    "select",
    "sub",
    "unit_runs",
    "unit_spans",
    "units_of",
    "wrap",
]

Value = Any  # np.generic | np.ndarray | Lanes | Units | Split


_U64 = np.dtype(np.uint64)
_RANGES = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
}


def wrap(value: int, dtype: np.dtype) -> Any:
    """The integer ``value`` modulo 2**bits as a scalar of ``dtype`` (two's complement)."""
    bits = dtype.itemsize * 8
    v = value & ((1 << bits) - 1)
    if dtype.kind == "i" and v >> (bits - 1):
        v -= 1 << bits
    return dtype.type(v)


class Lanes:
    """The integer vector ``start + step * j`` for ``j in range(n)``, every element within
    ``dtype``'s range (no wrap-around) and ``step != 0``. Build it with :func:`lanes`."""

    __slots__ = ("_array", "dtype", "n", "start", "step")

    def __init__(self, start: int, step: int, n: int, dtype: np.dtype) -> None:
        self.start = start
        self.step = step
        self.n = n
        self.dtype = dtype
        self._array: np.ndarray | None = None

    def array(self) -> np.ndarray:
        """The materialised vector (computed once, then shared: never mutate it)."""
        if self._array is None:
            self._array = self.at(np.arange(self.n, dtype=np.uint64))
        return self._array

    def at(self, j: np.ndarray) -> np.ndarray:
        """The elements at the lanes ``j`` (integers in ``[0, n)``), as a new array."""
        step, start = wrap(self.step, _U64), wrap(self.start, _U64)
        out: np.ndarray = (j.astype(_U64, copy=False) * step + start).astype(self.dtype)
        return out  # exact modulo 2**64

    def __repr__(self) -> str:
        return f"Lanes({self.start} + {self.step}*j, n={self.n}, {self.dtype})"


def lanes(start: int, step: int, n: int, dtype: np.dtype) -> Value:
    """``start + step * j`` over ``n`` lanes in ``dtype`` with wrap-around: a :class:`Lanes`
    when no element wraps, a scalar when ``step == 0``, else an array."""
    if step == 0:
        return wrap(start, dtype)
    lo, hi = _RANGES[dtype]
    if not lo <= start <= hi:
        start = int(wrap(start, dtype))
    last = start + step * (n - 1)
    if lo <= last <= hi:
        return Lanes(start, step, n, dtype)
    j = np.arange(n, dtype=np.uint64).astype(dtype)
    return j * wrap(step, dtype) + dtype.type(start)


class Units:
    """An integer vector that repeats ``one`` (a :class:`Lanes` or an integer array over the
    units of one cube) in each of ``cubes`` cubes: a unit position combined with uniform values
    or other such vectors. ``memo`` is the launch's :class:`Derived` (None outside a launch)."""

    __slots__ = ("_array", "cubes", "memo", "one")

    def __init__(self, one: Lanes | np.ndarray, cubes: int, memo: Derived | None = None) -> None:
        self.one = one
        self.cubes = cubes
        self.memo = memo
        self._array: np.ndarray | None = None

    @property
    def dtype(self) -> np.dtype:
        return self.one.dtype

    def array(self) -> np.ndarray:
        """The materialised vector (computed once, then shared: never mutate it)."""
        if self._array is None:
            self._array = np.tile(arr(self.one), self.cubes)
        return self._array

    @property
    def nbytes(self) -> int:
        """The bytes of the materialised vector (whether or not it is)."""
        one = self.one
        size = one.n * one.dtype.itemsize if isinstance(one, Lanes) else one.nbytes
        return int(size) * self.cubes

    def derived(self, key: object, make: Callable[[], Any]) -> Any:
        """``make()``, a value computed from this one alone for ``key``: kept in the launch's
        memo, so found again by later batches of the same size."""
        return make() if self.memo is None else self.memo.get((self,), key, make)

    def __repr__(self) -> str:
        return f"Units({self.one!r} in each of {self.cubes} cubes)"


class Split:
    """The integer vector ``cube[q] + unit[j]`` over a batch of whole cubes of ``units`` units
    (lane ``q * units + j``), wrapping in ``cube``'s type: ``cube`` an array with one element
    per cube, ``unit`` a :class:`Lanes`, an array over one cube's units or a uniform value, of
    the same type. A cube position, and its sums with unit positions and uniform values, times
    uniform values."""

    __slots__ = ("_array", "_span", "_spanned", "cube", "unit", "units")

    def __init__(self, cube: np.ndarray, unit: Any, units: int) -> None:
        self.cube = cube
        self.unit = unit
        self.units = units
        self._array: np.ndarray | None = None
        self._span: tuple[int, int] | None = None
        self._spanned = False

    @property
    def dtype(self) -> np.dtype:
        return self.cube.dtype

    def array(self) -> np.ndarray:
        """The materialised vector (computed once, then shared: never mutate it)."""
        if self._array is None:
            if isinstance(self.unit, np.generic):
                self._array = np.repeat(self.cube + self.unit, self.units)
            else:
                self._array = (self.cube[:, None] + arr(self.unit)[None, :]).reshape(-1)
        return self._array

    def span(self) -> tuple[int, int] | None:
        """The least and the greatest element, when no element wrapped around; else None
        (computed once)."""
        if not self._spanned:
            self._spanned = True
            unit = self.unit
            if type(unit) is Lanes:
                ends = (unit.start, unit.start + unit.step * (unit.n - 1))
                u_lo, u_hi = min(ends), max(ends)
            elif isinstance(unit, np.generic):
                u_lo = u_hi = int(unit)
            else:
                u_lo, u_hi = int(unit.min()), int(unit.max())
            lo, hi = int(self.cube.min()) + u_lo, int(self.cube.max()) + u_hi
            low, high = _RANGES[self.dtype]
            self._span = (lo, hi) if low <= lo and hi <= high else None
        return self._span

    def __repr__(self) -> str:
        return f"Split({self.cube.shape[0]} cubes + {self.unit!r} per unit)"


def _parts(x: Value, like: Split) -> tuple[Any, Any] | None:
    """``x`` as a (per-cube, per-unit) pair next to ``like``: a uniform value is per cube, a
    :class:`Units` per unit; None for other values."""
    zero = like.dtype.type(0)
    if type(x) is Split:
        return x.cube, x.unit
    if isinstance(x, np.generic):
        return x, zero
    if type(x) is Units:
        return zero, x.one
    return None


def _split_op(fn: Callable[[Value, Value], Value], a: Value, b: Value) -> Value:
    """``fn`` (``add`` or ``sub``) part by part when an operand is a :class:`Split` and the
    other uniform, Units or a Split; else over materialised vectors."""
    like = a if type(a) is Split else b
    pa, pb = _parts(a, like), _parts(b, like)
    if pa is None or pb is None:
        return fn(arr(a), arr(b))
    return Split(fn(pa[0], pb[0]), fn(pa[1], pb[1]), like.units)


class UnitMask(np.ndarray[Any, np.dtype[np.bool_]]):
    """A boolean lane vector (a mask or a condition) that repeats ``one``, a boolean array over
    one cube's units, in every cube of a batch: a comparison of unit positions. It is a plain
    array to every operation; what keeps ``one`` lets a merge or a shared-memory store under
    it touch only the units it covers. Arrays derived from it (views, results of operations)
    have ``one`` None. Build it with :meth:`tiled`; ``memo`` is the launch's :class:`Derived`
    (None outside a launch), which masks made from this one are kept in."""

    one: np.ndarray | None
    memo: Derived | None
    #: what :func:`unit_runs` found for it (computed at its first call), else None
    runs: tuple[int, list[tuple[int, int]]] | None
    #: whether ``runs`` has been computed
    ran: bool

    @classmethod
    def tiled(cls, one: np.ndarray, cubes: int, memo: Derived | None = None) -> UnitMask:
        """``one`` repeated in each of ``cubes`` cubes: with a launch's ``memo``, the mask of
        that pattern that an earlier batch of that size made, when it was kept."""
        if memo is None:
            return cls._tiled(one, cubes, None)
        mask: UnitMask = memo.get(
            (), ("mask", cubes, one.tobytes()), lambda: cls._tiled(one, cubes, memo)
        )
        return mask

    @classmethod
    def _tiled(cls, one: np.ndarray, cubes: int, memo: Derived | None) -> UnitMask:
        out = np.tile(one, cubes).view(cls)
        out.one = one
        out.memo = memo
        return out

    def __array_finalize__(self, obj: Any) -> None:
        self.one = None
        self.memo = None
        self.runs = None
        self.ran = False

    def _combined(self, other: Any, fn: Callable[[Any, Any], Any]) -> Any:
        """``fn`` of two masks over the same lanes: over one cube's units when both keep
        theirs (the result keeps its units too), else lane by lane."""
        units = units_of(self, other)
        if units is None:
            return fn(self.view(np.ndarray), np.asarray(other))
        cubes = self.shape[0] // units[0].shape[0]
        return UnitMask.tiled(fn(units[0], units[1]), cubes, self.memo)

    # the boolean operators the generated code applies to conditions (``c == d``, ``~c``)
    def __eq__(self, other: object) -> Any:
        return self._combined(other, operator.eq)

    def __ne__(self, other: object) -> Any:
        return self._combined(other, operator.ne)

    def __and__(self, other: Any) -> Any:
        return self._combined(other, operator.and_)

    def __or__(self, other: Any) -> Any:
        return self._combined(other, operator.or_)

    def __xor__(self, other: Any) -> Any:
        return self._combined(other, operator.xor)

    def __invert__(self) -> Any:
        if self.one is None:
            return ~self.view(np.ndarray)
        return UnitMask.tiled(~self.one, self.shape[0] // self.one.shape[0], self.memo)


#: The most runs of consecutive units a mask may have for :func:`unit_runs` to list them.
_MAX_RUNS = 4


def unit_runs(m: Any) -> tuple[int, list[tuple[int, int]]] | None:
    """For a :class:`UnitMask` that keeps its units and covers at most ``_MAX_RUNS`` runs of
    consecutive units: the units per cube and the runs ``[j0, j1)``; None otherwise."""
    if type(m) is not UnitMask or m.one is None:
        return None
    if not m.ran:  # a mask is asked by each access and merge under it: found once
        m.ran = True
        one = m.one
        units = one.shape[0]
        flags = one.view(np.int8)
        inner = np.flatnonzero(flags[1:] != flags[:-1])  # a run starts or ends after these
        if inner.shape[0] <= 2 * _MAX_RUNS:
            bounds = (inner + 1).tolist()
            if units and one[0]:
                bounds.insert(0, 0)
            if units and one[-1]:
                bounds.append(units)
            if len(bounds) <= 2 * _MAX_RUNS:
                m.runs = (units, list(zip(bounds[::2], bounds[1::2], strict=True)))
    return m.runs


def unit_spans(units: int, runs: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """The units ``[0, units)`` cut at the ends of ``runs`` (sorted, disjoint, from
    :func:`unit_runs`): ``(j0, j1, inside)`` for each piece, ``inside`` when a run covers it."""
    spans: list[tuple[int, int, bool]] = []
    at = 0
    for j0, j1 in runs:
        if at < j0:
            spans.append((at, j0, False))
        spans.append((j0, j1, True))
        at = j1
    if at < units:
        spans.append((at, units, False))
    return spans


def _per_unit(result: Value, cubes: int, memo: Derived | None) -> Value:
    """The value over all cubes of an operation computed over one cube's units: a
    :class:`Units` for an integer result, a :class:`UnitMask` for a boolean one (masks take
    arrays), floats repeated into a full array."""
    if type(result) is Lanes:
        return Units(result, cubes, memo)
    if isinstance(result, np.ndarray):
        if result.dtype.kind in "iu":
            return Units(result, cubes, memo)
        if result.dtype.kind == "b":
            return UnitMask.tiled(result, cubes, memo)
        return np.tile(result, cubes)
    return result


def is_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a float (NumPy's, or ml_dtypes' ``bfloat16``, whose kind is "V")."""
    return dtype.kind == "f" or dtype.name == "bfloat16"


def arr(x: Value) -> Any:
    """``x`` with a :class:`Lanes`, :class:`Units` or :class:`Split` materialised; scalars and
    arrays are returned as they are."""
    if type(x) is Lanes or type(x) is Units or type(x) is Split:
        return x.array()
    return x


# --- Lanes-aware integer arithmetic -----------------------------------------------------------


def _units_op(fn: Callable[[Any, Any], Any], a: Value, b: Value) -> Value:
    """``fn`` over one cube's units when one operand is Units and the other uniform or Units.
    The result is kept in the launch's memo (see :class:`Derived`) under ``fn`` (a function of
    this module, the same object at every call), the operands and a uniform operand's bits."""
    ta, tb = type(a) is Units, type(b) is Units
    sources: tuple[object, ...]
    key: object
    if ta and tb:
        units, sources, key, x, y = a, (a, b), fn, a.one, b.one
    elif ta and isinstance(b, np.generic):
        units, sources, key, x, y = a, (a,), (fn, 1, b.dtype, b.tobytes()), a.one, b
    elif tb and isinstance(a, np.generic):
        units, sources, key, x, y = b, (b,), (fn, 0, a.dtype, a.tobytes()), a, b.one
    else:
        return fn(arr(a), arr(b))
    memo = units.memo

    def make() -> Value:
        return _per_unit(fn(x, y), units.cubes, memo)

    return make() if memo is None else memo.get(sources, key, make)


def add(a: Value, b: Value) -> Value:
    if type(a) is Split or type(b) is Split:
        return _split_op(add, a, b)
    if type(a) is Units or type(b) is Units:
        return _units_op(add, a, b)
    ta, tb = type(a) is Lanes, type(b) is Lanes
    if ta and tb:
        return lanes(a.start + b.start, a.step + b.step, a.n, a.dtype)
    if ta and isinstance(b, np.generic):
        return lanes(a.start + int(b), a.step, a.n, a.dtype)
    if tb and isinstance(a, np.generic):
        return lanes(b.start + int(a), b.step, b.n, b.dtype)
    return arr(a) + arr(b)


def sub(a: Value, b: Value) -> Value:
    if type(a) is Split or type(b) is Split:
        return _split_op(sub, a, b)
    if type(a) is Units or type(b) is Units:
        return _units_op(sub, a, b)
    ta, tb = type(a) is Lanes, type(b) is Lanes
    if ta and tb:
        return lanes(a.start - b.start, a.step - b.step, a.n, a.dtype)
    if ta and isinstance(b, np.generic):
        return lanes(a.start - int(b), a.step, a.n, a.dtype)
    if tb and isinstance(a, np.generic):
        return lanes(int(a) - b.start, -b.step, b.n, b.dtype)
    return arr(a) - arr(b)


def mul(a: Value, b: Value) -> Value:
    if type(a) is Split and isinstance(b, np.generic):
        return Split(a.cube * b, mul(a.unit, b), a.units)
    if type(b) is Split and isinstance(a, np.generic):
        return Split(a * b.cube, mul(a, b.unit), b.units)
    if type(a) is Units or type(b) is Units:
        return _units_op(mul, a, b)
    if type(a) is Lanes and isinstance(b, np.generic):
        return lanes(a.start * int(b), a.step * int(b), a.n, a.dtype)
    if type(b) is Lanes and isinstance(a, np.generic):
        return lanes(b.start * int(a), b.step * int(a), b.n, b.dtype)
    return arr(a) * arr(b)


def _on_units(fn: Callable[[Any, Any], Any]) -> Callable[[Value, Value], Value]:
    """The integer operation ``fn`` on values: over one cube's units when the operands are
    :class:`Units` or uniform, else over materialised vectors."""

    def apply(a: Value, b: Value) -> Value:
        if type(a) is Units or type(b) is Units:
            return _units_op(apply, a, b)
        return fn(arr(a), arr(b))

    return apply


bit_and = _on_units(operator.and_)
bit_or = _on_units(operator.or_)
bit_xor = _on_units(operator.xor)
floor_div = _on_units(operator.floordiv)
mod = _on_units(operator.mod)
minimum = _on_units(np.minimum)
maximum = _on_units(np.maximum)


def cast(x: Value, to: type[np.generic]) -> Value:
    """Convert to the type ``to`` by the IR's CAST rules (float->int truncates, ->bool is
    ``!= 0``)."""
    dtype = np.dtype(to)
    if dtype.kind == "b":
        return arr(x) != 0
    if type(x) is Split:
        return x.array().astype(dtype)
    if type(x) is Units:
        kind = ("cast", dtype.str)
        return x.derived(kind, lambda: _per_unit(cast(x.one, to), x.cubes, x.memo))
    if type(x) is Lanes:
        if dtype.kind in "iu":
            return lanes(x.start, x.step, x.n, dtype)
        x = x.array()
    return x.astype(dtype)


# --- comparisons --------------------------------------------------------------------------------

_MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}


def _lanes_true(start: int, step: int, n: int, op: str, bound: int) -> tuple[int, int, bool]:
    """For ``v_j = start + step*j`` (step > 0): the lanes where ``v_j <op> bound`` hold are
    ``[lo, hi)`` (``inside`` True) or its complement (``inside`` False)."""
    if op in ("le", "gt"):
        bound += 1  # integers: v <= b is v < b + 1
    k = min(max(-((start - bound) // step), 0), n)  # first j with v_j >= bound
    if op in ("lt", "le"):
        return 0, k, True
    if op in ("gt", "ge"):
        return k, n, True
    off = bound - start
    j0 = off // step if off % step == 0 else n
    hit = 0 <= j0 < n
    return (j0, j0 + 1, op == "eq") if hit else (0, 0, op == "eq")


def _compare_lanes(x: Lanes, op: str, bound: int) -> Value:
    start, step = x.start, x.step
    if step < 0:  # compare -v_j with -bound instead: an increasing sequence
        start, step, bound = -start, -step, -bound
        if op not in ("eq", "ne"):
            op = _MIRROR[op]
    lo, hi, inside = _lanes_true(start, step, x.n, op, bound)
    true_count = hi - lo if inside else x.n - (hi - lo)
    if true_count == x.n:
        return np.True_
    if true_count == 0:
        return np.False_
    out = np.full(x.n, not inside)
    out[lo:hi] = inside
    return out


def _decided(op: str, lo: Any, hi: Any, b: int) -> tuple[Any, Any]:
    """Whether ``v <op> b`` holds for every ``v`` of ``[lo, hi]``, and whether for none: two
    bools, or two boolean arrays for arrays of ends."""
    if op == "lt":
        return hi < b, lo >= b
    if op == "le":
        return hi <= b, lo > b
    if op == "gt":
        return lo > b, hi <= b
    if op == "ge":
        return lo >= b, hi < b
    single = (lo == hi) & (lo == b)
    outside = (b < lo) | (hi < b)
    return (single, outside) if op == "eq" else (outside, single)


def _compare_rows(op: str, x: Split, b: int) -> np.ndarray | None:
    """``x <op> b`` for a Split of at most 32 bits without wrap-around whose unit part is a
    vector, cube by cube: a row that the cube's span decides is filled, the others compare
    their units with ``b`` less the cube part. None when more than a quarter of the cubes are
    undecided (then adding the parts first costs less)."""
    unit = np.asarray(arr(x.unit), dtype=np.int64)
    cube = x.cube.astype(np.int64)
    always, never = _decided(op, cube + int(unit.min()), cube + int(unit.max()), b)
    mixed = np.flatnonzero(~(always | never))
    if 4 * mixed.shape[0] > cube.shape[0]:
        return None
    out = np.empty((cube.shape[0], unit.shape[0]), dtype=bool)
    np.copyto(out, always[:, None])
    if mixed.shape[0]:
        out[mixed] = _OPERATORS[op](unit[None, :], (b - cube[mixed])[:, None])
    return out.reshape(-1)


def _compare_split(op: str, x: Split, bound: np.generic) -> Value:
    """``x <op> bound``: uniform when the span of ``x`` decides it for every lane; else, when no
    element wrapped, decided cube by cube where that can be (see :func:`_compare_rows`)."""
    span = x.span()
    if span is not None:
        always, never = _decided(op, span[0], span[1], int(bound))
        if always:
            return np.True_
        if never:
            return np.False_
        if x.dtype.itemsize <= 4 and not isinstance(x.unit, np.generic):
            rows = _compare_rows(op, x, int(bound))
            if rows is not None:
                return rows
    return _OPERATORS[op](x.array(), bound)


def _compare(op: str, a: Value, b: Value) -> Value:
    if type(a) is Split and isinstance(b, np.generic):
        return _compare_split(op, a, b)
    if type(b) is Split and isinstance(a, np.generic):
        return _compare_split(_MIRROR[op], b, a)
    if type(a) is Units or type(b) is Units:
        return _units_op(_COMPARE_ON_UNITS[op], a, b)
    ta, tb = type(a) is Lanes, type(b) is Lanes
    if ta and tb:
        if a.step == b.step:
            return np.bool_(_OPERATORS[op](a.start, b.start))
        diff = Lanes(a.start - b.start, a.step - b.step, a.n, a.dtype)  # exact, in Python ints
        return _compare_lanes(diff, op, 0)
    if ta and isinstance(b, np.generic):
        return _compare_lanes(a, op, int(b))
    if tb and isinstance(a, np.generic):
        return _compare_lanes(b, _MIRROR[op], int(a))
    return _OPERATORS[op](arr(a), arr(b))


#: ``_compare`` of each operator, one object per operator: the memo's key of a comparison.
_COMPARE_ON_UNITS = {op: functools.partial(_compare, op) for op in _OPERATORS}


def lt(a: Value, b: Value) -> Value:
    return _compare("lt", a, b)


def le(a: Value, b: Value) -> Value:
    return _compare("le", a, b)


def gt(a: Value, b: Value) -> Value:
    return _compare("gt", a, b)


def ge(a: Value, b: Value) -> Value:
    return _compare("ge", a, b)


def eq(a: Value, b: Value) -> Value:
    return _compare("eq", a, b)


def ne(a: Value, b: Value) -> Value:
    return _compare("ne", a, b)


# --- other operations ---------------------------------------------------------------------------


#: The unsigned type of each element size: a blend moves any element as these bits.
_BITS: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.uint16),
    4: np.dtype(np.uint32),
    8: _U64,
}


def blend(m: np.ndarray, a: Value, b: Value) -> Any:
    """``a`` where the boolean array ``m`` holds, else ``b``, bit for bit (NaN payloads, -0.0).

    Operands of one element type are combined as unsigned bits, ``b ^ ((a ^ b) & -m)``: a few
    streaming passes, where ``np.where`` branches per lane and costs up to ten times as much on
    a mask that changes often. Operands of two types fall back to ``np.where``'s promotion."""
    a, b = arr(a), arr(b)
    dtype = np.result_type(a)
    if dtype != np.result_type(b):
        return np.where(m, a, b)
    runs = unit_runs(m)
    if runs is not None:
        return _blend_runs(m.shape[0], runs, a, b, dtype)
    bits = _BITS[dtype.itemsize]  # booleans too: 0 and 1 as bytes
    one = m.one if type(m) is UnitMask else None
    if one is not None and isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        # the all-ones-where-true pattern of one cube, applied to every cube's row
        y = b.view(bits)
        out = np.bitwise_xor(a.view(bits), y)
        rows = out.reshape(-1, one.shape[0])
        np.bitwise_and(rows, np.negative(one.view(np.uint8).astype(bits)), out=rows)
        out ^= y
        return out.view(dtype)
    out = m.view(np.uint8).astype(bits)
    np.negative(out, out=out)  # 0 -> 0, 1 -> all ones
    y = np.asarray(b).view(bits)
    out &= np.bitwise_xor(np.asarray(a).view(bits), y)
    out ^= y
    return out.view(dtype)


def _blend_runs(
    n: int, runs: tuple[int, list[tuple[int, int]]], a: Any, b: Any, dtype: np.dtype
) -> np.ndarray:
    """:func:`blend` under a :class:`UnitMask` of ``n`` lanes covering the runs of units
    ``runs``: ``a`` copied over the covered units, ``b`` over the others, each element written
    once (same-type copies move bits)."""
    units = runs[0]
    out = np.empty(n, dtype=dtype)
    rows = out.reshape(-1, units)
    for j0, j1, inside in unit_spans(units, runs[1]):
        x = a if inside else b
        rows[:, j0:j1] = x.reshape(-1, units)[:, j0:j1] if isinstance(x, np.ndarray) else x
    return out


def units_of(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The units of two :class:`UnitMask` over the same lanes, when both keep them."""
    if type(a) is not UnitMask or type(b) is not UnitMask or a.one is None or b.one is None:
        return None
    if a.one.shape != b.one.shape or a.shape != b.shape:
        return None
    return a.one, b.one


def logical_and(a: Value, b: Value) -> Value:
    """``a and b`` of boolean values. A uniform operand decides without a pass over the lanes
    (NumPy combines a boolean scalar with an array lane by lane, many times slower than two
    arrays); two :class:`UnitMask` combine their units."""
    if isinstance(a, np.generic):
        return b if a else np.False_
    if isinstance(b, np.generic):
        return a if b else np.False_
    units = units_of(a, b)
    if units is not None:
        return UnitMask.tiled(units[0] & units[1], a.shape[0] // units[0].shape[0], a.memo)
    return a & b


def logical_or(a: Value, b: Value) -> Value:
    """``a or b`` of boolean values, as :func:`logical_and` computes ``and``."""
    if isinstance(a, np.generic):
        return np.True_ if a else b
    if isinstance(b, np.generic):
        return np.True_ if b else a
    units = units_of(a, b)
    if units is not None:
        return UnitMask.tiled(units[0] | units[1], a.shape[0] // units[0].shape[0], a.memo)
    return a | b


def select(cond: Value, a: Value, b: Value) -> Value:
    """``a`` where ``cond`` else ``b``; uniform when ``cond`` is."""
    if isinstance(cond, np.generic):
        return a if cond else b
    return blend(cond, a, b)


def fma(a: Value, b: Value, c: Value) -> Value:
    """``a * b + c`` rounded (nearly) once. f16 and f32 are computed in f64, where the product
    is exact, then rounded to the element type (a double rounding, off by at most one ulp in
    rare ties). f64 uses error-free transformations (Dekker's product, Knuth's sum): the result
    is within one ulp of the fused value, ``a * b + c`` where an intermediate overflows, and
    the sum of the zeros' signs where the product and ``c`` are zeros."""
    dtype = np.result_type(a)
    if dtype.itemsize < 8:
        wide = np.float64(1)
        return (a * wide * b + c).astype(dtype)
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # p + e == a * b exactly
    s = p + c
    v = s - p
    t = (p - (s - v)) + (c - v)  # s + t == p + c exactly
    r = s + (t + e)
    plain = ~np.isfinite(r) | ((p == 0) & (c == 0))  # s, rounded once, is the answer
    return np.where(plain, s, r) if isinstance(r, np.ndarray) else (s if plain else r)


def _split(x: Value) -> tuple[Value, Value]:
    """Veltkamp's split of an f64 into two halves of 26 bits: ``hi + lo == x``."""
    t = x * np.float64(134217729.0)
    hi = t - (t - x)
    return hi, x - hi

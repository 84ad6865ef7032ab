"""Builtins of the kernel language: position values, memory, barriers, atomics, plane operations
and math intrinsics.

These are marker objects: a kernel body names them and the front end turns each use into IR.
Positions (``ABSOLUTE_POS`` …, all ``u32``) follow CubeCL (see
:class:`~ruda_core.ir.BuiltinKind`). Calls:

* ``SharedMemory(T, n)`` / ``LocalArray(T, n)``: an array of ``n`` (a compile-time int) elements,
  one per cube / one per unit, named after the variable it is assigned to; ``a.len()`` is ``n``
  as a ``u32`` constant. Atomics do not apply to local arrays.
* ``sync_units()``: the barrier of one cube; ``sync_units_count(p)`` (``u32``),
  ``sync_units_and(p)`` and ``sync_units_or(p)`` are that barrier reducing a ``bool`` over the
  cube's units; ``sync_plane()`` is the barrier of one plane; ``fence_units()`` and
  ``fence_device()`` order the unit's memory accesses for its cube / the device.
* ``atomic_<op>(arr, i, v)`` on a global array or ``SharedMemory``, returning the old value;
  ``atomic_load(arr, i)``, ``atomic_store(arr, i, v)`` and
  ``atomic_compare_and_swap(arr, i, cmp, v)``; ``atomic_inc_wrap(arr, i, limit)`` and
  ``atomic_dec_wrap(arr, i, limit)`` on ``u32`` (CUDA's ``atomicInc``/``atomicDec``).
* ``plane_<op>(v)`` over the units of a plane; ``plane_ballot(p)`` (``u32``) and
  ``plane_elect()``; ``plane_broadcast(v, lane)``, ``plane_shuffle(v, src)`` and
  ``plane_shuffle_up/down/xor(v, delta)`` read another lane's value.
* math: ``exp exp2 expm1 log log2 log10 log1p sqrt rsqrt cbrt recip sin cos tan asin acos atan
  sinh cosh tanh asinh acosh atanh erf erfc lgamma floor ceil round trunc`` (floats), ``isnan
  isinf isfinite`` (floats -> bool), ``abs min max clamp`` (numbers), ``fma pow atan2 hypot fmod
  remainder copysign`` (floats), ``popcount leading_zeros trailing_zeros find_first_set`` (integers
  -> u32), ``reverse_bits mul_hi saturating_add saturating_sub`` (integers); ``bitcast(T, x)``:
  ``x``'s bits as the type ``T`` of its width. ``round`` of a float
  is a float (half to even). Python's
  ``abs``, ``min``, ``max``, ``round`` and ``pow`` mean the same inside kernels, as do the
  functions of ``math`` that return floats (:data:`MATH_FUNCTIONS`).
* ``launch_bounds(n)``: the kernel's cubes have at most ``n`` units (a compile-time int >= 1,
  stated once, at the top level of the body): CUDA fits the kernel's registers to such cubes
  (``__launch_bounds__``), and a launch of a larger cube is refused on every device.
  ``launch_bounds(n, cubes)`` also asks that ``cubes`` such cubes fit one multiprocessor at
  once: CUDA then limits the registers per unit for that (``__launch_bounds__(n, cubes)``; it
  may spill registers to reach it), other targets ignore it.
* ``cube_units(n)``: the kernel's cubes have exactly ``n`` units (stated as ``launch_bounds``,
  instead of it): a launch of any other cube is refused on every device, and targets may fold
  what depends on the cube's size (CUDA's warp masks, where ``n`` is whole warps).
* ``unroll(range(...))``: a ``for`` loop the front end unrolls, so the loop variable is a
  compile-time int.
* ``grid_stride(n)``: ``for i in grid_stride(n)`` visits ``ABSOLUTE_POS``, then every launch-size
  step after it below ``n`` (``range(ABSOLUTE_POS, n, RUDA_COUNT * RUDA_DIM)``), so any
  launch covers ``0 .. n-1`` once.
* lines: ``Line(a, b, …)`` builds a line of its 2, 4 or 8 lanes, ``Line.splat(v, n)`` one of
  ``n`` copies of ``v``, ``Line[T, n]`` annotates a local line; ``select(c, a, b)`` is ``a``
  where ``c`` holds, else ``b``, lane by lane for a ``bool`` line ``c``. Arrays read and write
  lines with ``x.load_line(i, n)`` and ``x.store_line(i, v)`` (see :mod:`.lines`).

Outside kernels the math intrinsics compute on the host (NumPy); the others raise ``TypeError``.
This module builds no IR.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..ir import BuiltinKind
from .types import ElemSpec, LineType, annotation_type

__all__ = [
    "ABSOLUTE_POS",
    "ABSOLUTE_POS_X",
    "ABSOLUTE_POS_Y",
    "ABSOLUTE_POS_Z",
    "PLANE_DIM",
    "RUDA_COUNT",
    "RUDA_COUNT_X",
    "RUDA_COUNT_Y",
    "RUDA_COUNT_Z",
    "RUDA_DIM",
    "RUDA_DIM_X",
    "RUDA_DIM_Y",
    "RUDA_DIM_Z",
    "RUDA_POS",
    "RUDA_POS_X",
    "RUDA_POS_Y",
    "RUDA_POS_Z",
    "UNIT_POS",
    "UNIT_POS_PLANE",
    "UNIT_POS_X",
    "UNIT_POS_Y",
    "UNIT_POS_Z",
    "BuiltinVar",
    "Intrinsic",
    "Line",
    "LineIntrinsic",
    "LocalArray",
    "SharedMemory",
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "atomic_add",
    "atomic_and",
    "atomic_compare_and_swap",
    "atomic_dec_wrap",
    "atomic_inc_wrap",
    "atomic_load",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_store",
    "atomic_sub",
    "atomic_swap",
    "atomic_xor",
    "bitcast",
    "cbrt",
    "ceil",
    "clamp",
    "copysign",
    "cos",
    "cosh",
    "cube_units",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "fence_device",
    "fence_units",
    "find_first_set",
    "floor",
    "fma",
    "fmod",
    "grid_stride",
    "hypot",
    "isfinite",
    "isinf",
    "isnan",
    "launch_bounds",
    "leading_zeros",
    "lgamma",
    "log",
    "log1p",
    "log2",
    "log10",
    "max",
    "min",
    "mul_hi",
    "plane_all",
    "plane_any",
    "plane_ballot",
    "plane_broadcast",
    "plane_elect",
    "plane_exclusive_sum",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_shuffle_down",
    "plane_shuffle_up",
    "plane_shuffle_xor",
    "plane_sum",
    "popcount",
    "pow",
    "recip",
    "remainder",
    "reverse_bits",
    "round",
    "rsqrt",
    "saturating_add",
    "saturating_sub",
    "select",
    "sin",
    "sinh",
    "sqrt",
    "sync_plane",
    "sync_units",
    "sync_units_and",
    "sync_units_count",
    "sync_units_or",
    "tan",
    "tanh",
    "trailing_zeros",
    "trunc",
    "unroll",
]


@dataclass(frozen=True, slots=True)
class BuiltinVar:
    """A position builtin (``u32``) as a kernel body names it."""

    kind: BuiltinKind

    def __repr__(self) -> str:
        return self.kind.value


ABSOLUTE_POS = BuiltinVar(BuiltinKind.ABSOLUTE_POS)
ABSOLUTE_POS_X = BuiltinVar(BuiltinKind.ABSOLUTE_POS_X)
ABSOLUTE_POS_Y = BuiltinVar(BuiltinKind.ABSOLUTE_POS_Y)
ABSOLUTE_POS_Z = BuiltinVar(BuiltinKind.ABSOLUTE_POS_Z)
UNIT_POS = BuiltinVar(BuiltinKind.UNIT_POS)
UNIT_POS_X = BuiltinVar(BuiltinKind.UNIT_POS_X)
UNIT_POS_Y = BuiltinVar(BuiltinKind.UNIT_POS_Y)
UNIT_POS_Z = BuiltinVar(BuiltinKind.UNIT_POS_Z)
RUDA_POS = BuiltinVar(BuiltinKind.RUDA_POS)
RUDA_POS_X = BuiltinVar(BuiltinKind.RUDA_POS_X)
RUDA_POS_Y = BuiltinVar(BuiltinKind.RUDA_POS_Y)
RUDA_POS_Z = BuiltinVar(BuiltinKind.RUDA_POS_Z)
RUDA_DIM = BuiltinVar(BuiltinKind.RUDA_DIM)
RUDA_DIM_X = BuiltinVar(BuiltinKind.RUDA_DIM_X)
RUDA_DIM_Y = BuiltinVar(BuiltinKind.RUDA_DIM_Y)
RUDA_DIM_Z = BuiltinVar(BuiltinKind.RUDA_DIM_Z)
RUDA_COUNT = BuiltinVar(BuiltinKind.RUDA_COUNT)
RUDA_COUNT_X = BuiltinVar(BuiltinKind.RUDA_COUNT_X)
RUDA_COUNT_Y = BuiltinVar(BuiltinKind.RUDA_COUNT_Y)
RUDA_COUNT_Z = BuiltinVar(BuiltinKind.RUDA_COUNT_Z)
PLANE_DIM = BuiltinVar(BuiltinKind.PLANE_DIM)
UNIT_POS_PLANE = BuiltinVar(BuiltinKind.UNIT_POS_PLANE)


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """A function of the kernel language. ``name`` selects the front end's handler; ``host`` is
    what a call outside a kernel computes (``None``: such a call is a ``TypeError``)."""

    name: str
    host: Callable[..., object] | None = field(default=None, compare=False)

    def __call__(self, *args: object) -> object:
        if self.host is None:
            raise TypeError(f"{self.name}() can only be used inside a @kernel or @func body")
        return self.host(*args)

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class LineIntrinsic(Intrinsic):
    """``Line``: a call builds a line of its lanes, ``Line.splat(v, n)`` repeats one value and
    ``Line[T, n]`` is the :class:`~.types.LineType` that annotates a local line."""

    @property
    def splat(self) -> Intrinsic:
        """``Line.splat(v, n)``: the line of ``n`` lanes all equal to ``v``."""
        return _LINE_SPLAT

    def __getitem__(self, spec: tuple[ElemSpec, int]) -> LineType:
        if not isinstance(spec, tuple) or len(spec) != 2:
            raise TypeError(f"write Line[T, n], e.g. Line[f32, 4], not Line[{spec!r}]")
        elem, width = spec
        return LineType(annotation_type(elem), width)  # type: ignore[arg-type]  # LineType checks


_LINE_SPLAT = Intrinsic("Line.splat")


def _host_rsqrt(x: float) -> float:
    return 1.0 / math.sqrt(x)


def _host_recip(x: float) -> float:
    return 1.0 / x


def _host_fma(a: float, b: float, c: float) -> float:
    return a * b + c


SharedMemory = Intrinsic("SharedMemory")
LocalArray = Intrinsic("LocalArray")
sync_units = Intrinsic("sync_units")
sync_units_count = Intrinsic("sync_units_count")
sync_units_and = Intrinsic("sync_units_and")
sync_units_or = Intrinsic("sync_units_or")
sync_plane = Intrinsic("sync_plane")
fence_units = Intrinsic("fence_units")
fence_device = Intrinsic("fence_device")
launch_bounds = Intrinsic("launch_bounds")
cube_units = Intrinsic("cube_units")
unroll = Intrinsic("unroll")
grid_stride = Intrinsic("grid_stride")
Line = LineIntrinsic("Line")
select = Intrinsic("select")

atomic_load = Intrinsic("atomic_load")
atomic_store = Intrinsic("atomic_store")
atomic_swap = Intrinsic("atomic_swap")
atomic_add = Intrinsic("atomic_add")
atomic_sub = Intrinsic("atomic_sub")
atomic_min = Intrinsic("atomic_min")
atomic_max = Intrinsic("atomic_max")
atomic_and = Intrinsic("atomic_and")
atomic_or = Intrinsic("atomic_or")
atomic_xor = Intrinsic("atomic_xor")
atomic_compare_and_swap = Intrinsic("atomic_compare_and_swap")
atomic_inc_wrap = Intrinsic("atomic_inc_wrap")
atomic_dec_wrap = Intrinsic("atomic_dec_wrap")

plane_sum = Intrinsic("plane_sum")
plane_prod = Intrinsic("plane_prod")
plane_min = Intrinsic("plane_min")
plane_max = Intrinsic("plane_max")
plane_all = Intrinsic("plane_all")
plane_any = Intrinsic("plane_any")
plane_broadcast = Intrinsic("plane_broadcast")
plane_shuffle = Intrinsic("plane_shuffle")
plane_inclusive_sum = Intrinsic("plane_inclusive_sum")
plane_exclusive_sum = Intrinsic("plane_exclusive_sum")
plane_ballot = Intrinsic("plane_ballot")
plane_elect = Intrinsic("plane_elect")
plane_shuffle_up = Intrinsic("plane_shuffle_up")
plane_shuffle_down = Intrinsic("plane_shuffle_down")
plane_shuffle_xor = Intrinsic("plane_shuffle_xor")

exp = Intrinsic("exp", np.exp)
exp2 = Intrinsic("exp2", np.exp2)
log = Intrinsic("log", np.log)
log2 = Intrinsic("log2", np.log2)
log1p = Intrinsic("log1p", np.log1p)
sqrt = Intrinsic("sqrt", np.sqrt)
rsqrt = Intrinsic("rsqrt", _host_rsqrt)
recip = Intrinsic("recip", _host_recip)
sin = Intrinsic("sin", np.sin)
cos = Intrinsic("cos", np.cos)
tan = Intrinsic("tan", np.tan)
tanh = Intrinsic("tanh", np.tanh)
erf = Intrinsic("erf", math.erf)
erfc = Intrinsic("erfc", math.erfc)
lgamma = Intrinsic("lgamma", math.lgamma)
expm1 = Intrinsic("expm1", np.expm1)
log10 = Intrinsic("log10", np.log10)
cbrt = Intrinsic("cbrt", np.cbrt)
asin = Intrinsic("asin", np.arcsin)
acos = Intrinsic("acos", np.arccos)
atan = Intrinsic("atan", np.arctan)
sinh = Intrinsic("sinh", np.sinh)
cosh = Intrinsic("cosh", np.cosh)
asinh = Intrinsic("asinh", np.arcsinh)
acosh = Intrinsic("acosh", np.arccosh)
atanh = Intrinsic("atanh", np.arctanh)
isfinite = Intrinsic("isfinite", np.isfinite)
atan2 = Intrinsic("atan2", np.arctan2)
hypot = Intrinsic("hypot", np.hypot)
fmod = Intrinsic("fmod", np.fmod)
remainder = Intrinsic("remainder", math.remainder)
copysign = Intrinsic("copysign", np.copysign)
popcount = Intrinsic("popcount")
bitcast = Intrinsic("bitcast")
leading_zeros = Intrinsic("leading_zeros")
trailing_zeros = Intrinsic("trailing_zeros")
find_first_set = Intrinsic("find_first_set")
reverse_bits = Intrinsic("reverse_bits")
mul_hi = Intrinsic("mul_hi")
saturating_add = Intrinsic("saturating_add")
saturating_sub = Intrinsic("saturating_sub")
floor = Intrinsic("floor", np.floor)
ceil = Intrinsic("ceil", np.ceil)
round = Intrinsic("round", builtins.round)
trunc = Intrinsic("trunc", np.trunc)
isnan = Intrinsic("isnan", np.isnan)
isinf = Intrinsic("isinf", np.isinf)
abs = Intrinsic("abs", builtins.abs)
min = Intrinsic("min", builtins.min)
max = Intrinsic("max", builtins.max)
fma = Intrinsic("fma", _host_fma)
clamp = Intrinsic("clamp", np.clip)
pow = Intrinsic("pow", builtins.pow)

#: The functions of Python's ``math`` module a kernel may call, each with its Python meaning on
#: floats: most are the intrinsics of the same name; ``math.pow`` (always a float power, never
#: an integer one), ``math.fabs`` (a float's ``abs``) and ``math.log`` (which also takes a base)
#: are intrinsics of their own, named ``math.<name>``. ``math.floor``, ``ceil`` and ``trunc``
#: are not among them: they return ints in Python, ruda's a float.
MATH_FUNCTIONS: dict[object, Intrinsic] = {
    **{
        getattr(math, i.name): i
        for i in (
            *(exp, exp2, expm1, log2, log10, log1p, sqrt, cbrt, sin, cos, tan, asin, acos),
            *(atan, sinh, cosh, tanh, asinh, acosh, atanh, erf, erfc, lgamma, isnan, isinf),
            *(isfinite, atan2, hypot, fmod, remainder, copysign),
        )
    },
    **{f: Intrinsic(f"math.{f.__name__}", f) for f in (math.pow, math.fabs, math.log)},
}

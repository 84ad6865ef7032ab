"""A sequential interpreter of the IR for one unit, for tests of the front end and the bounds pass.

It follows ``ruda_core/ir/ops.py`` for the operations these tests use and raises
:class:`OutOfBounds` on any access outside an array (negative indices included), so a test can
assert that a checked kernel never touches memory it does not own. Plane operations act on a
plane of one unit and ``SYNC_UNITS`` does nothing.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

import numpy as np

from ruda_core.ir import (
    Break,
    Builtin,
    BuiltinKind,
    Const,
    Continue,
    Elem,
    If,
    Instr,
    KernelDefinition,
    Local,
    Loop,
    Op,
    Param,
    ParamKind,
    RangeLoop,
    Return,
)


class OutOfBounds(Exception):
    pass


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    pass


_BINARY = {
    Op.ADD: np.add,
    Op.SUB: np.subtract,
    Op.MUL: np.multiply,
    Op.DIV: np.true_divide,
    Op.FLOOR_DIV: np.floor_divide,
    Op.MOD: np.mod,
    Op.POW: np.power,
    Op.MIN: np.fmin,
    Op.MAX: np.fmax,
    Op.EQ: np.equal,
    Op.NE: np.not_equal,
    Op.LT: np.less,
    Op.LE: np.less_equal,
    Op.GT: np.greater,
    Op.GE: np.greater_equal,
    Op.AND: np.logical_and,
    Op.OR: np.logical_or,
    Op.BIT_AND: np.bitwise_and,
    Op.BIT_OR: np.bitwise_or,
    Op.BIT_XOR: np.bitwise_xor,
}
_UNARY = {
    Op.NEG: np.negative,
    Op.ABS: np.abs,
    Op.NOT: np.logical_not,
    Op.BIT_NOT: np.invert,
    Op.EXP: np.exp,
    Op.LOG: np.log,
    Op.SQRT: np.sqrt,
    Op.FLOOR: np.floor,
    Op.CEIL: np.ceil,
    Op.ROUND: np.rint,
    Op.TRUNC: np.trunc,
    Op.ISNAN: np.isnan,
    Op.ISINF: np.isinf,
    Op.TANH: np.tanh,
    Op.SIN: np.sin,
    Op.COS: np.cos,
}
_ATOMIC = {
    Op.ATOMIC_SWAP: lambda old, v: v,
    Op.ATOMIC_ADD: np.add,
    Op.ATOMIC_SUB: np.subtract,
    Op.ATOMIC_MIN: np.minimum,
    Op.ATOMIC_MAX: np.maximum,
    Op.ATOMIC_AND: np.bitwise_and,
    Op.ATOMIC_OR: np.bitwise_or,
    Op.ATOMIC_XOR: np.bitwise_xor,
    Op.ATOMIC_STORE: lambda old, v: v,
}


def _typed(value: object, elem: Elem) -> np.generic:
    return np.array(value).astype(elem.numpy)[()]


class Interp:
    """Run ``defn`` once. ``arrays`` maps array parameter names to NumPy arrays (modified in
    place); ``scalars`` the scalar parameters; ``tensors`` name -> (shape, strides)."""

    def __init__(
        self,
        defn: KernelDefinition,
        arrays: Mapping[str, np.ndarray],
        scalars: Mapping[str, object] = {},
        builtins: Mapping[BuiltinKind, int] = {},
        tensors: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]] = {},
    ) -> None:
        self.defn = defn
        self.env: dict[str, np.generic] = {}
        self.arrays: dict[str, np.ndarray] = dict(arrays)
        for arr in (*defn.shared, *defn.local_arrays):
            self.arrays[arr.name] = np.zeros(arr.length, arr.elem.numpy)
        self.scalars = {p.name: _typed(scalars[p.name], p.elem) for p in defn.scalar_params}
        self.builtins = builtins
        self.tensors = tensors
        self.reports: list[tuple[int, int, int]] = []

    def run(self) -> Interp:
        with np.errstate(all="ignore"), contextlib.suppress(_Return):
            self.block(self.defn.body)
        return self

    def val(self, x: object) -> np.generic:
        if isinstance(x, Const):
            return _typed(x.value, x.elem)
        if isinstance(x, Local):
            return self.env[x.name]
        if isinstance(x, Builtin):
            return np.uint32(self.builtins.get(x.kind, 0))
        if isinstance(x, Param):
            return self.scalars[x.name]
        raise TypeError(x)

    def block(self, stmts: tuple[object, ...]) -> None:
        for s in stmts:
            if isinstance(s, Instr):
                self.instr(s)
            elif isinstance(s, If):
                self.block(s.then if self.val(s.cond) else s.orelse)
            elif isinstance(s, RangeLoop):
                self.range_loop(s)
            elif isinstance(s, Loop):
                while True:
                    try:
                        self.block(s.body)
                    except _Break:
                        break
                    except _Continue:
                        continue
            elif isinstance(s, Break):
                raise _Break
            elif isinstance(s, Continue):
                raise _Continue
            elif isinstance(s, Return):
                raise _Return

    def range_loop(self, s: RangeLoop) -> None:
        start, end, step = (int(self.val(v)) for v in (s.start, s.end, s.step))
        for i in range(start, end, step):
            self.env[s.var.name] = _typed(i, s.var.elem)
            try:
                self.block(s.body)
            except _Break:
                break
            except _Continue:
                continue

    def element(self, arr: object, index: object) -> tuple[np.ndarray, int]:
        data = self.arrays[arr.name]  # type: ignore[attr-defined]
        i = int(self.val(index))
        if not 0 <= i < data.size:
            raise OutOfBounds(f"{arr}[{i}] of {data.size}")
        return data, i

    def instr(self, ins: Instr) -> None:
        op, args = ins.op, ins.args
        if op is Op.INDEX_ASSIGN:
            data, i = self.element(args[0], args[1])
            data[i] = self.val(args[2])
            return
        if op is Op.REPORT_OOB:
            if not self.reports:
                self.reports.append(tuple(int(self.val(a)) for a in args))  # type: ignore[arg-type]
            return
        if op is Op.SYNC_UNITS:
            return
        result = self.compute(op, args)
        if ins.out is not None:
            self.env[ins.out.name] = _typed(result, ins.out.elem)

    def compute(self, op: Op, args: tuple[object, ...]) -> object:
        if op is Op.INDEX:
            data, i = self.element(args[0], args[1])
            return data[i]
        if op in _ATOMIC or op in (Op.ATOMIC_LOAD, Op.ATOMIC_CAS):
            data, i = self.element(args[0], args[1])
            old = data[i].copy()
            if op is Op.ATOMIC_CAS:
                if old == self.val(args[2]):
                    data[i] = self.val(args[3])
            elif op is not Op.ATOMIC_LOAD:
                data[i] = _ATOMIC[op](old, self.val(args[2]))
            return old
        if op is Op.LEN:
            p = args[0]
            assert isinstance(p, Param)
            if p.kind is ParamKind.TENSOR:
                shape, strides = self.tensors[p.name]
                return (
                    1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
                    if all(shape)
                    else 0
                )
            return self.arrays[p.name].size
        if op in (Op.SHAPE, Op.STRIDE):
            shape, strides = self.tensors[args[0].name]  # type: ignore[attr-defined]
            return (shape if op is Op.SHAPE else strides)[args[1].value]  # type: ignore[attr-defined]
        values = [self.val(a) for a in args]
        if op in (Op.ASSIGN, Op.CAST) or op in (Op.PLANE_SUM, Op.PLANE_BROADCAST):
            return values[0]
        if op is Op.SELECT:
            return values[1] if values[0] else values[2]
        if op in (Op.SHL, Op.SHR):
            n = int(values[1]) % (values[0].dtype.itemsize * 8)
            shift = np.left_shift if op is Op.SHL else np.right_shift
            return shift(values[0], values[0].dtype.type(n))
        if op in _BINARY:
            return _BINARY[op](values[0], values[1])
        if op in _UNARY:
            return _UNARY[op](values[0])
        if op is Op.FMA:
            return values[0] * values[1] + values[2]
        if op is Op.CLAMP:
            return np.fmin(np.fmax(values[0], values[1]), values[2])
        if op is Op.ERF:
            return math.erf(float(values[0]))
        raise NotImplementedError(op)

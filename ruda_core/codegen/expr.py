"""Expressions: the exact semantics of :mod:`ruda_core.ir.ops` for value operations, in C.

Integer arithmetic wraps without undefined behaviour: signed and sub-``int`` operands are
computed in the unsigned type of their width (at least 32 bits) and converted back, so C's
overflow and promotion rules never apply. Python floor division and modulo of signed integers,
and clamping of integers, are helper functions; division and modulo by zero (and the overflowing
``MIN // -1``) give 0. Shift amounts are taken modulo the bit width. Floats the target only
stores (see :meth:`Dialect.compute_elem`) are widened, computed and rounded back per operation;
``FLOOR_DIV`` and ``MOD`` of an ``f16`` the target computes natively are computed in ``f32`` and
rounded once, as the IR defines them (a half quotient would be rounded before its floor).
This module builds expression text only; statements and control flow are the emitter's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import CompilationError
from ..ir import (
    ATOMIC_COMBINE,
    COMPARE_OPS,
    FLOAT_BINARY,
    FLOAT_TESTS,
    FLOAT_UNARY,
    Const,
    Elem,
    Op,
    Operand,
)
from .bits import BIT_OPS, bit_helper
from .dialect import OPERATORS, Dialect
from .prelude import Prelude, bare

__all__ = ["Arg", "ExprLowering"]

#: An operand, or C text already of the operand element's value type.
Arg = Operand | str

#: C99 spellings that differ from the operation's name.
_SPELLED: dict[Op, str] = {
    Op.ROUND: "rint",
    Op.ABS: "fabs",
    Op.MIN: "fmin",
    Op.MAX: "fmax",
    Op.POW: "pow",
    Op.FMA: "fma",
}
#: C99 math function of each operation computed by one call.
_MATH = {op: op.value for op in (FLOAT_UNARY | FLOAT_BINARY | FLOAT_TESTS) - {Op.RECIP}} | _SPELLED
#: Composite operations an ``f16`` computes in ``f32`` even where the target has half arithmetic.
_F16_IN_F32 = frozenset({Op.FLOOR_DIV, Op.MOD})


class ExprLowering:
    """Turns value operations into C expressions for one dialect, registering the helper
    functions they call in ``prelude``. ``name_of`` gives the C name of a non-constant operand."""

    __slots__ = ("d", "name_of", "prelude")

    def __init__(self, dialect: Dialect, prelude: Prelude, name_of: Callable[[Operand], str]):
        self.d = dialect
        self.prelude = prelude
        self.name_of = name_of

    # -- operands ---------------------------------------------------------------------------

    def text(self, a: Arg) -> str:
        """``a`` as an atom of its element's value type."""
        if isinstance(a, str):
            return a
        if isinstance(a, Const):
            literal = self.d.literal(a.value, a.elem)
            return f"({literal})" if literal.startswith("-") else literal
        return self.name_of(a)

    def wide(self, a: Arg, elem: Elem) -> str:
        """``a`` (of ``elem``) as a value of the dialect's compute element for ``elem``."""
        compute = self.d.compute_elem(elem)
        if compute is elem:
            return self.text(a)
        if isinstance(a, Const):  # exact: a constant of elem is representable in compute
            literal = self.d.literal(a.value, compute)
            return f"({literal})" if literal.startswith("-") else literal
        return self.d.widen(elem, self.text(a))

    def literal(self, value: int | float | bool, elem: Elem) -> str:
        return self.text(Const(value, elem))

    # -- operations -------------------------------------------------------------------------

    def apply(self, op: Op, elem: Elem, args: Sequence[Arg]) -> str:
        """The expression of ``op`` on operands of ``elem`` (for SELECT: the values' element)."""
        if op is Op.ASSIGN:
            return self.text(args[0])
        if op is Op.SELECT:
            cond, a, b = (self.text(x) for x in args)
            return self.d.select(cond, a, b)
        if elem.is_float:
            return self._float(op, elem, args)
        return self._integer(op, elem, args)

    def bitcast(self, a: Arg, source: Elem, target: Elem) -> str:
        """``a``'s bits (of ``source``) as a value of ``target``, a type of the same width."""
        return self.d.bits_to_value(target, self.d.value_to_bits(source, self.text(a)))

    def cast(self, a: Arg, source: Elem, target: Elem) -> str:
        """``a`` (of ``source``) converted to ``target`` with the IR's CAST rules."""
        d = self.d
        if source is target:
            return self.text(a)
        if target is Elem.BOOL:
            if source.is_float:
                return d.nonzero(d.compute_elem(source), self.wide(a, source))
            return d.nonzero(source, self.text(a))
        if source.is_float:
            value, compute = self.wide(a, source), d.compute_elem(source)
            if target.is_int:
                return d.float_to_int(value, compute, target)
            if d.compute_elem(target) is not target:
                return d.narrow(target, value, compute)
            return d.convert(target, value, compute)
        if d.compute_elem(target) is not target:
            return d.narrow(target, self.text(a), source)
        return d.convert(target, self.text(a), source)

    def atomic_update(self, op: Op, elem: Elem, cur: str, v: str, cmp: str) -> str:
        """The value atomic ``op`` (other than a load or a store) writes over the element
        ``cur``, of its last operand ``v`` (and the compared one ``cmp`` of ``ATOMIC_CAS``,
        which compares values); the wrapping counters follow CUDA's ``atomicInc``/``Dec``."""
        if op is Op.ATOMIC_SWAP:
            return v
        if op is Op.ATOMIC_CAS:
            return self.d.select(self.apply(Op.EQ, elem, [cur, cmp]), v, cur)
        zero, one = self.literal(0, elem), self.literal(1, elem)
        if op is Op.ATOMIC_INC_WRAP:
            return self.d.select(f"{cur} >= {v}", zero, f"{cur} + {one}")
        if op is Op.ATOMIC_DEC_WRAP:
            return self.d.select(f"({cur} == {zero} || {cur} > {v})", v, f"{cur} - {one}")
        return self.apply(ATOMIC_COMBINE[op], elem, [cur, v])

    # -- floats -----------------------------------------------------------------------------

    def _float(self, op: Op, elem: Elem, args: Sequence[Arg]) -> str:
        compute = self.d.compute_elem(elem)
        if compute is Elem.F16 and op in _F16_IN_F32:
            compute = Elem.F32
            w = [self.cast(a, elem, compute) for a in args]
        else:
            w = [self.wide(a, elem) for a in args]
        if op in COMPARE_OPS:
            return self.d.compare(op, compute, w[0], w[1])
        if op in FLOAT_TESTS:
            return self.d.math_call(_MATH[op], compute, w)
        value = self._float_value(op, compute, w)
        return value if compute is elem else self.d.narrow(elem, bare(value), compute)

    def _float_value(self, op: Op, elem: Elem, w: list[str]) -> str:
        d = self.d
        if op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV):
            return f"({w[0]} {OPERATORS[op]} {w[1]})"
        if op is Op.FLOOR_DIV:
            return d.math_call("floor", elem, [d.quotient(elem, w[0], w[1])])
        if op is Op.MOD:
            floor = d.math_call("floor", elem, [d.quotient(elem, w[0], w[1])])
            return f"({w[0]} - {d.mul_exact(floor, w[1], elem)})"
        if op is Op.NEG:
            return d.float_negation(elem, w[0])
        if op is Op.RECIP:
            return f"({d.literal(1.0, elem)} / {w[0]})"
        if op is Op.CLAMP:
            low = d.math_call("fmax", elem, w[:2])
            return d.math_call("fmin", elem, [low, w[2]])
        if op in _MATH:
            return d.math_call(_MATH[op], elem, w)
        raise CompilationError(f"{op} is not defined on {elem}")

    # -- integers and bool ------------------------------------------------------------------

    def _integer(self, op: Op, elem: Elem, args: Sequence[Arg]) -> str:
        d, t = self.d, [self.text(a) for a in args]
        if op in COMPARE_OPS:
            return d.compare(op, elem, t[0], t[1])
        if op in (Op.AND, Op.OR):
            return f"({t[0]} {OPERATORS[op]} {t[1]})"
        if op is Op.NOT:
            return f"(!{t[0]})"
        if not elem.is_int:
            raise CompilationError(f"{op} is not defined on {elem}")
        native = d.int_native(op, elem)
        if native is not None:
            return native.format(*t)
        if op in BIT_OPS:
            return f"{bit_helper(d, self.prelude, op, elem)}({', '.join(t)})"
        unsigned = Elem.U64 if elem.bits == 64 else Elem.U32
        wraps = elem.is_signed or elem.bits < 32

        def u(x: str) -> str:
            return d.convert(unsigned, x)

        if op in (Op.ADD, Op.SUB, Op.MUL):
            if not wraps:
                return f"({t[0]} {OPERATORS[op]} {t[1]})"
            return d.convert(elem, f"({u(t[0])} {OPERATORS[op]} {u(t[1])})")
        if op is Op.NEG:
            zero = self.literal(0, unsigned)
            return d.convert(elem, f"({zero} - {u(t[0])})") if wraps else f"({zero} - {t[0]})"
        if op is Op.ABS:
            if not elem.is_signed:
                return t[0]
            negated = self._integer(Op.NEG, elem, t)
            return d.select(f"{t[0]} < {self.literal(0, elem)}", negated, t[0])
        if op in (Op.FLOOR_DIV, Op.MOD):
            return self._division(op, elem, args, t)
        if op in (Op.MIN, Op.MAX):
            return self.d.int_extremum(op, elem, t[0], t[1])
        if op is Op.CLAMP:
            return f"{self._clamp_helper(elem)}({', '.join(t)})"
        if op in (Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
            return f"({t[0]} {OPERATORS[op]} {t[1]})"
        if op is Op.BIT_NOT:
            value = d.bit_not(elem, t[0])
            return d.convert(elem, value) if elem.bits < 32 else value
        if op in (Op.SHL, Op.SHR):
            amount = args[1]
            if isinstance(amount, Const):
                shift = str(int(amount.value) % elem.bits)
            else:
                shift = d.shift_amount(elem, f"({t[1]} & {elem.bits - 1})")
            if op is Op.SHR:
                return f"({t[0]} >> {shift})"
            return d.convert(elem, f"({u(t[0])} << {shift})") if wraps else f"({t[0]} << {shift})"
        raise CompilationError(f"{op} is not defined on {elem}")

    def _division(self, op: Op, elem: Elem, args: Sequence[Arg], t: list[str]) -> str:
        if elem.is_signed:
            helper = self._floordiv_helper(elem) if op is Op.FLOOR_DIV else self._mod_helper(elem)
            return f"{helper}({t[0]}, {t[1]})"
        divisor = args[1]
        if isinstance(divisor, Const) and divisor.value != 0:
            return f"({t[0]} {OPERATORS[op]} {t[1]})"
        zero = self.literal(0, elem)
        return self.d.select(f"{t[1]} == {zero}", zero, f"{t[0]} {OPERATORS[op]} {t[1]}")

    def _floordiv_helper(self, elem: Elem) -> str:
        name = f"ruda_floordiv_{elem}"
        if name in self.prelude:
            return name
        ctype, zero, one = self.d.type_name(elem), self.literal(0, elem), self.literal(1, elem)
        body = [
            f"if (b == {zero}) {{",
            f"    return {zero};",
            "}",
            f"if (b == {self.literal(-1, elem)}) {{",
            f"    return {self._integer(Op.NEG, elem, ['a'])};",
            "}",
            f"{self.d.declare(ctype, ('q', 'a / b'))};",
            f"if (a % b != {zero} && (a < {zero}) != (b < {zero})) {{",
            f"    q = q - {one};",
            "}",
            "return q;",
        ]
        params = [(ctype, "a"), (ctype, "b")]
        return self.prelude.add(name, self.d.function(ctype, name, params, body))

    def _mod_helper(self, elem: Elem) -> str:
        name = f"ruda_mod_{elem}"
        if name in self.prelude:
            return name
        ctype, zero = self.d.type_name(elem), self.literal(0, elem)
        body = [
            f"if (b == {zero} || b == {self.literal(-1, elem)}) {{",
            f"    return {zero};",
            "}",
            f"{self.d.declare(ctype, ('r', 'a % b'))};",
            f"if (r != {zero} && (r < {zero}) != (b < {zero})) {{",
            "    r = r + b;",
            "}",
            "return r;",
        ]
        params = [(ctype, "a"), (ctype, "b")]
        return self.prelude.add(name, self.d.function(ctype, name, params, body))

    def _clamp_helper(self, elem: Elem) -> str:
        name = f"ruda_clamp_{elem}"
        if name in self.prelude:
            return name
        ctype = self.d.type_name(elem)
        body = [  # min(max(x, lo), hi) is hi for lo > hi, said first: Intel's OpenCL compiler
            "if (lo > hi) {",  # turns the plain form into its clamp, undefined for lo > hi
            "    return hi;",
            "}",
            f"{self.d.declare(ctype, ('m', self.d.int_extremum(Op.MAX, elem, 'x', 'lo')))};",
            f"return {self.d.int_extremum(Op.MIN, elem, 'm', 'hi')};",
        ]
        params = [(ctype, "x"), (ctype, "lo"), (ctype, "hi")]
        return self.prelude.add(name, self.d.function(ctype, name, params, body))

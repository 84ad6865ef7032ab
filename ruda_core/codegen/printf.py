"""``PRINT`` in C: one ``printf`` call per print, so a unit's record is never split.

Values are passed as :mod:`ruda_core.ir.printing` converts them: a ``bool`` as the string
``"True"``/``"False"`` for ``%s``; integers narrower than 64 bits as ``int``/``unsigned int``,
64-bit ones as the dialect's 64-bit type with its length modifier
(:attr:`Dialect.printf_length`); floats as ``float`` (``f16``, ``bf16`` and ``f32`` widened
exactly) or ``double``, a NaN with its sign cleared. The format is one string literal whose
bytes outside printable ASCII are octal escapes, and ``?`` is escaped so that no trigraph
forms. Where the dialect allows only string literals as ``%s`` arguments (OpenCL C), a print
of bools is one ``printf`` per combination of their values, each with literal arguments, at
most :data:`_MAX_BOOLS` bools per print. This module builds text only.
"""

from __future__ import annotations

from ..errors import UnsupportedFeature
from ..ir import Elem, Instr, Operand
from .dialect import Dialect
from .expr import ExprLowering

__all__ = ["c_string", "print_statement"]

#: The most bool values one print() takes where string arguments must be literals (each doubles
#: the printf calls generated).
_MAX_BOOLS = 4
_ESCAPES = {"\\": "\\\\", '"': '\\"', "?": "\\?", "\n": "\\n", "\t": "\\t"}


def c_string(text: str) -> str:
    """``text`` (UTF-8) as a C string literal."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def print_statement(d: Dialect, expr: ExprLowering, ins: Instr) -> str:
    """The C statement of a verified ``PRINT`` instruction.

    :raises UnsupportedFeature: when the target has no ``printf``.
    """
    if d.printf is None:
        raise UnsupportedFeature(f"{d.name} has no printf, so print() cannot run on this device")
    values: list[Operand] = list(ins.args)  # type: ignore[arg-type]  # verified scalars
    passed = [_passed(v.elem) for v in values]
    fmt = ins.format.printf(passed, lambda e: d.printf_length.get(e, ""))  # type: ignore[union-attr]
    args = [_argument(d, expr, v, p) for v, p in zip(values, passed, strict=True)]
    if not d.printf_literal_strings:
        return f"{d.printf}({', '.join([c_string(fmt), *args])});"
    # a %s argument must be a string literal: one call per combination of the bools' values
    bools = [k for k, v in enumerate(values) if v.elem is Elem.BOOL]
    if len(bools) > _MAX_BOOLS:
        raise UnsupportedFeature(
            f"{d.name} prints at most {_MAX_BOOLS} bool values in one print(); split the call"
        )

    def calls(at: int) -> str:
        if at == len(bools):
            return f"{d.printf}({', '.join([c_string(fmt), *args])})"
        k = bools[at]
        cond, args[k] = expr.text(values[k]), '"True"'
        yes = calls(at + 1)
        args[k] = '"False"'
        no = calls(at + 1)
        return f"({cond} ? {yes} : {no})"

    return f"{calls(0)};"


def _passed(elem: Elem) -> Elem:
    """The element a value of ``elem`` is passed to printf as."""
    if elem is Elem.BOOL or elem.bits == 64:
        return elem
    if elem.is_float:
        return Elem.F32
    return Elem.I32 if elem.is_signed else Elem.U32


def _argument(d: Dialect, expr: ExprLowering, value: Operand, passed: Elem) -> str:
    elem = value.elem
    if elem is Elem.BOOL:
        return f'({expr.text(value)} ? "True" : "False")'
    if not elem.is_float:
        text = expr.text(value)
        return text if elem is passed else f"({d.type_name(passed)}){text}"
    text = expr.wide(value, elem)
    if d.compute_elem(elem) is not passed:
        text = f"({d.type_name(passed)}){text}"
    casts = d.bit_casts.get(passed)
    if casts is None:
        isnan = d.math_call("isnan", passed, [text])
        return f"({isnan} ? {d.math_call('fabs', passed, [text])} : {text})"
    # the sign of a NaN cleared with bits: some device math libraries keep it through fabs
    bits_elem = Elem.U64 if passed.bits == 64 else Elem.U32
    from_bits, to_bits = casts
    magnitude = f"({to_bits.format(text)} & {d.literal((1 << (passed.bits - 1)) - 1, bits_elem)})"
    infinity = d.literal(0x7FF0000000000000 if passed.bits == 64 else 0x7F800000, bits_elem)
    return f"({magnitude} > {infinity} ? {from_bits.format(magnitude)} : {text})"

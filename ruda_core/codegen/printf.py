"""``PRINT`` in C: one ``printf`` call per print, so a unit's record is never split.

Values are passed as :mod:`ruda_core.ir.printing` converts them: a ``bool`` as the string
``"True"``/``"False"`` for ``%s``; integers narrower than 64 bits as ``int``/``unsigned int``,
64-bit ones as the dialect's 64-bit type with its length modifier
(:attr:`Dialect.printf_length`); floats as ``float`` (``f16``, ``bf16`` and ``f32`` widened
exactly) or ``double``, a NaN with its sign cleared. The format is one string literal whose
bytes outside printable ASCII are octal escapes, and ``?`` is escaped so that no trigraph
forms. This module builds text only.
"""

from __future__ import annotations

from ..errors import UnsupportedFeature
from ..ir import Elem, Instr, Operand
from .dialect import Dialect
from .expr import ExprLowering

__all__ = ["c_string", "print_statement"]

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
    return f"{d.printf}({', '.join([c_string(fmt), *args])});"


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
    isnan = d.math_call("isnan", passed, [text])
    return f"({isnan} ? {d.math_call('fabs', passed, [text])} : {text})"

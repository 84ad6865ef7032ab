"""``print(...)`` in kernels: Python's call turned into one ``PRINT`` instruction.

Arguments are joined by ``sep`` and followed by ``end`` (both compile-time strings, Python's
defaults ``" "`` and ``"\\n"``). Compile-time values (string and number literals, ``Comptime``
values, module constants) become literal text, formatted by Python at build time: ``str(v)``,
or ``format(v, spec)`` inside an f-string. A run-time scalar becomes a value of the
instruction, written with the default conversion of its type or with its f-string spec
(:func:`conversion`); :mod:`ruda_core.ir.printing` fixes the exact text. Everything else (an
array, a spec Python and printf do not share) is a :class:`CompilationError` at the call.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ..ir import MAX_PRINT_VALUES, Conversion, Instr, Op, Operand, PrintFormat
from .coerce import operand
from .scope import Fields, PyVal, Value, is_array

if TYPE_CHECKING:
    from .expressions import ExprBuilder

__all__ = ["build_print", "conversion"]

_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?"
    r"(?P<width>\d+)?(?P<group>[,_])?(?:\.(?P<precision>\d+))?(?P<kind>[a-zA-Z%])?",
    re.DOTALL,
)
_PRINTABLE = (str, int, float, bool, type(None), tuple)


def conversion(spec: str) -> Conversion | str:
    """The printf conversion of a Python format ``spec`` (the text after ``:`` in ``{x:spec}``),
    or why none writes the same text."""
    m = _SPEC.fullmatch(spec)
    if m is None:
        return f"'{spec}' is not a format spec"
    if m["fill"] not in (None, " "):
        return "a fill character other than a space has no printf form"
    if m["align"] in ("^", "="):
        return f"the alignment '{m['align']}' has no printf form; use '<' or '>'"
    if m["zero"] and m["align"]:
        return "zero padding with an explicit alignment has no printf form; write {x:08d}"
    for key, what in (("z", "'z'"), ("alt", "'#'"), ("group", "digit grouping")):
        if m[key]:
            return f"{what} has no printf form"
    flags = "-" if m["align"] == "<" else ""
    flags += m["sign"] if m["sign"] in ("+", " ") else ""
    flags += "0" if m["zero"] else ""
    return Conversion(
        flags=flags,
        width=int(m["width"]) if m["width"] else None,
        precision=int(m["precision"]) if m["precision"] else None,
        kind=m["kind"] or "",
    )


def build_print(b: ExprBuilder, node: ast.Call) -> None:
    """Append the ``PRINT`` of ``node``, a call of ``print`` checked by the syntax pass."""
    sep = _keyword_text(b, node, "sep", " ")
    end = _keyword_text(b, node, "end", "\n")
    text: list[str] = [""]
    conversions: list[Conversion] = []
    values: list[Operand] = []

    def add(value: Value, spec: str | None, at: ast.AST) -> None:
        if isinstance(value, PyVal):
            text[-1] += _compile_time_text(b, value.value, spec, at)
            return
        if is_array(value):
            b.fail(f"print() writes scalars; index the array '{value}', e.g. {value}[i]", at)
        op = operand(b, value, at)
        conv = Conversion() if spec is None else conversion(spec)
        problem = conv if isinstance(conv, str) else conv.problem(op.elem)
        if problem is not None:
            shown = f"the format spec '{spec}'" if spec is not None else "print()"
            b.fail(f"{shown} cannot write this {op.elem} value: {problem}", at)
        values.append(op)
        conversions.append(conv)  # type: ignore[arg-type]  # a Conversion: problem is None
        text.append("")

    for k, arg in enumerate(node.args):
        if k:
            text[-1] += sep
        if not isinstance(arg, ast.JoinedStr):
            add(b.expr(arg), None, arg)
            continue
        for part in arg.values:
            if isinstance(part, ast.FormattedValue):
                spec = part.format_spec
                spec_text = "".join(v.value for v in spec.values) if spec is not None else None  # type: ignore[attr-defined]
                add(b.expr(part.value), spec_text, part)
            else:
                text[-1] += part.value  # type: ignore[attr-defined]  # a str Constant
    text[-1] += end
    if len(values) > MAX_PRINT_VALUES:
        b.fail(
            f"print() writes at most {MAX_PRINT_VALUES} run-time values (CUDA's printf limit), "
            f"got {len(values)}; split it into several prints",
            node,
        )
    fmt = PrintFormat(tuple(text), tuple(conversions))
    b.append(Instr(Op.PRINT, None, tuple(values), b.loc, fmt))


def _keyword_text(b: ExprBuilder, node: ast.Call, name: str, default: str) -> str:
    for kw in node.keywords:
        if kw.arg == name:
            value = b.expr(kw.value)
            if isinstance(value, PyVal) and value.value is None:
                return default
            if not isinstance(value, PyVal) or not isinstance(value.value, str):
                b.fail(f"print()'s {name}= must be a compile-time string", kw)
            return value.value
    return default


def _compile_time_text(b: ExprBuilder, value: object, spec: str | None, at: ast.AST) -> str:
    if isinstance(value, Fields):
        names = ", ".join(name for name, _ in value.values)
        b.fail(
            f"print() writes scalars, not a {value.cls.__name__}; print its fields ({names})", at
        )
    if not isinstance(value, _PRINTABLE):
        b.fail(f"print() cannot write {value!r}: it writes strings, numbers and scalars", at)
    if spec is None:
        return str(value)
    try:
        return format(value, spec)
    except (ValueError, TypeError) as exc:
        b.fail(f"cannot format the compile-time value {value!r} with '{spec}': {exc}", at)

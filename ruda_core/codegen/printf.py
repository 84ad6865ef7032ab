"""``PRINT`` in C: one ``printf`` call per print, so a unit's record is never split, or one
record in a buffer where the dialect records prints (below).

Values are passed as :mod:`ruda_core.ir.printing` converts them: a ``bool`` as the string
``"True"``/``"False"`` for ``%s``; integers narrower than 64 bits as ``int``/``unsigned int``,
64-bit ones as the dialect's 64-bit type with its length modifier
(:attr:`Dialect.printf_length`); floats as ``float`` (``f16``, ``bf16`` and ``f32`` widened
exactly) or ``double``, a NaN with its sign cleared. The format is one string literal whose
bytes outside printable ASCII are octal escapes, and ``?`` is escaped so that no trigraph
forms.

A dialect with :attr:`Dialect.print_records` writes no ``printf``: each print appends a *record*
(laid out as :data:`~ruda_core.ir.printing.RECORD_HEADER_WORDS` says) to the launch's print
buffer, whose word 0 counts the words taken (one atomic add per record) and word 1 is its
capacity in words; a record
that does not fit is dropped, and the count tells the host how many words were asked for. The
host formats the records with :func:`record_format` (Intel's CPU OpenCL writes ``printf`` one
character at a time under a lock shared by its threads: a million lines took 40 s). This module
builds text only.
"""

from __future__ import annotations

from ..errors import UnsupportedFeature
from ..ir import Elem, Instr, KernelDefinition, Op, Operand, walk
from ..ir.printing import RECORD_TERMINATOR, value_words
from .dialect import Dialect, MemSpace
from .expr import ExprLowering

__all__ = [
    "c_string",
    "print_sites",
    "print_statement",
    "record_format",
    "record_statement",
    "word_halves",
]

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


def print_sites(definition: KernelDefinition) -> tuple[Instr, ...]:
    """The ``PRINT`` instructions of ``definition`` in program order: a record's site indexes
    this tuple."""
    return tuple(
        stmt for stmt in walk(definition.body) if isinstance(stmt, Instr) and stmt.op is Op.PRINT
    )


def record_format(ins: Instr) -> tuple[str, tuple[Elem, ...]]:
    """The Python ``%`` format of a verified ``PRINT`` (C's ``printf`` text for its values) and
    the elements its record holds the values as."""
    passed = tuple(_passed(v.elem) for v in ins.args)
    fmt = ins.format.printf(passed, lambda e: "")  # type: ignore[union-attr]  # a PRINT's
    return fmt, passed


def record_statement(
    d: Dialect,
    expr: ExprLowering,
    ins: Instr,
    site: int,
    where: tuple[str, str, str, str],
) -> list[str]:
    """The statements that append the record of a verified ``PRINT`` at index ``site`` of
    :func:`print_sites`, in the dialect's syntax (its conversions, selects, declarations and
    :meth:`~Dialect.record_word`). ``where`` holds the names of the print buffer and of the
    base of the kernel's site numbers, and the linear cube's and linear unit's expressions."""
    buffer, base, cube, unit = where
    u32, u64 = Elem.U32, Elem.U64
    values: list[Operand] = list(ins.args)  # type: ignore[arg-type]  # verified scalars
    words = [f"{base} + {d.literal(site, u32)}", d.convert(u32, f"({cube})")]
    words.append(d.convert(u32, f"({unit})"))
    for value in values:
        passed = _passed(value.elem)
        if value.elem is Elem.BOOL:
            words.append(d.select(expr.text(value), d.literal(1, u32), d.literal(0, u32)))
            continue
        text = _argument(d, expr, value, passed)
        if passed.is_float:
            casts = d.bit_casts.get(passed)
            if casts is None:
                raise UnsupportedFeature(f"{d.name} cannot record the bits of a {passed} value")
            text = casts[1].format(text)
        if value_words(passed) == 2:
            words += word_halves(d, f"({d.convert(u64, f'({text})')})")
        else:
            words.append(d.convert(u32, f"({text})"))
    add = d.atomic_native(Op.ATOMIC_ADD, u32, MemSpace.GLOBAL)
    if add is None:
        raise UnsupportedFeature(f"{d.name} has no 32-bit atomic add to record prints with")
    n = d.literal(len(words), u32)
    at = f"{buffer}_at"
    taken = add.format(ptr=f"&{buffer}[0]", v=n)
    capacity = d.record_word(buffer, d.literal(1, u32))
    lines = [
        "{",
        f"    {d.declare(d.type_name(u32), (at, taken))};",
        f"    if ({at} + {n} <= {capacity}) {{",
    ]
    for k, word in enumerate(words):
        lines.append(f"        {d.record_word(buffer, f'{at} + {d.literal(2 + k, u32)}', word)};")
    # the one record that starts within the capacity and runs past it marks where the records
    # that fit end (the host reads no further)
    end = d.record_word(buffer, f"{at} + {d.literal(2, u32)}", d.literal(RECORD_TERMINATOR, u32))
    return [*lines, f"    }} else if ({at} < {capacity}) {{", f"        {end};", "    }", "}"]


def word_halves(d: Dialect, x: str) -> tuple[str, str]:
    """The low and high ``u32`` words of ``x``, an atom of a 64-bit unsigned value."""
    u32 = Elem.U32
    return d.convert(u32, x), d.convert(u32, f"({x} >> {d.literal(32, u32)})")


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
        return text if elem is passed else d.convert(passed, text)
    text = expr.wide(value, elem)
    if d.compute_elem(elem) is not passed:
        text = d.convert(passed, text)
    casts = d.bit_casts.get(passed)
    if casts is None:
        isnan = d.math_call("isnan", passed, [text])
        return f"({isnan} ? {d.math_call('fabs', passed, [text])} : {text})"
    # the sign of a NaN cleared with bits: some device math libraries keep it through fabs
    bits_elem = Elem.U64 if passed.bits == 64 else Elem.U32
    from_bits, to_bits = casts
    magnitude = f"({to_bits.format(text)} & {d.literal((1 << (passed.bits - 1)) - 1, bits_elem)})"
    infinity = d.literal(0x7FF0000000000000 if passed.bits == 64 else 0x7F800000, bits_elem)
    return d.select(f"{magnitude} > {infinity}", from_bits.format(magnitude), text)

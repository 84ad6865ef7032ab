"""The format of a ``PRINT`` instruction and the exact text it writes.

A ``PRINT`` writes, for each unit that executes it, one record:
``text[0] + conv0(v0) + text[1] + ... + conv_n-1(v_n-1) + text[n]``. Each conversion means what
the C99 ``printf`` conversion of :meth:`Conversion.spec` means, applied to the value converted
as follows:

========================  ==============================  ======================================
value                     default conversion              converted to
========================  ==============================  ======================================
``bool``                  ``%s``: ``True`` / ``False``    the text (no flags, width or precision)
``i8`` … ``i64``          ``%d``                          a 32- or 64-bit signed integer
``u8`` … ``u64``          ``%u``                          a 32- or 64-bit unsigned integer
``f16 bf16 f32 f64``      ``%g``                          the exact value as a double; a NaN of
                                                          either sign as a positive NaN (``nan``)
========================  ==============================  ======================================

A conversion may set flags (``-`` left-justify, ``+`` or space for the sign of a positive number,
``0`` zero padding), a width, a precision (floats only) and its letter: ``d`` for integers
(``u`` is written for unsigned ones), ``x X o`` for unsigned integers, ``f F e E g G`` for
floats. Python's ``%`` operator has these meanings too, so the NumPy device formats with it.
This module imports nothing of ruda but the element types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .types import Elem

__all__ = [
    "FLOAT_KINDS",
    "MAX_PRINT_VALUES",
    "RECORD_HEADER_WORDS",
    "RECORD_TERMINATOR",
    "Conversion",
    "PrintFormat",
    "value_words",
]

#: The most run-time values one print may write (CUDA's ``printf`` limit on arguments).
MAX_PRINT_VALUES = 32
#: Conversion letters of floats.
FLOAT_KINDS = frozenset("fFeEgG")
#: Conversion letters of unsigned integers only (printf writes the bits of the value).
_UNSIGNED_KINDS = frozenset("xXo")
_FLAG_ORDER = "-+ 0"
#: ``u32`` words before the values of a print *record*, the form in which a target without a
#: fast ``printf`` writes a print into a buffer for the host to format: the print's site (its
#: place among the kernel's prints, in program order), the linear cube and the linear unit.
#: Each value follows as the ``printf`` argument it would have been, as its bits: one word,
#: or two (low word first) for a 64-bit one; a bool as 0 or 1.
RECORD_HEADER_WORDS = 3
#: The site word of the record whose place in the buffer runs past its capacity: that record is
#: not written, and the records before it are all that fit (the words after it, up to the
#: capacity, hold nothing).
RECORD_TERMINATOR = 0xFFFFFFFF


def value_words(elem: Elem) -> int:
    """``u32`` words of a value of ``elem`` (as passed to ``printf``) in a print record."""
    return 2 if elem.bits == 64 else 1


@dataclass(frozen=True, slots=True)
class Conversion:
    """How one value is written: printf's ``flags`` (any of ``-+ 0``, in that order),
    ``width``, ``precision`` and conversion letter ``kind`` (``""``: the value's default)."""

    flags: str = ""
    width: int | None = None
    precision: int | None = None
    kind: str = ""

    def problem(self, elem: Elem) -> str | None:
        """Why this conversion cannot write a value of ``elem``, or ``None`` when it can."""
        if "".join(f for f in _FLAG_ORDER if f in self.flags) != self.flags:
            return f"the flags {self.flags!r} are not some of '-+ 0' in that order"
        if any(n is not None and not 0 <= n <= 4096 for n in (self.width, self.precision)):
            return "a width or precision is between 0 and 4096"
        if elem is Elem.BOOL:
            plain = self == Conversion()
            return None if plain else "a bool takes no format spec (it prints True or False)"
        if elem.is_float:
            if self.kind not in FLOAT_KINDS | {""}:
                return f"the conversion '{self.kind}' does not apply to {elem}"
            if self.kind == "" and self.precision is not None:
                return f"a precision needs a conversion letter (f, e or g) for {elem}"
            return None
        if self.precision is not None:
            return f"{elem} takes no precision"
        if not elem.is_signed and ("+" in self.flags or " " in self.flags):
            return f"printf writes no sign for the unsigned {elem}; drop '+' and ' '"
        if self.kind in _UNSIGNED_KINDS and elem.is_signed:
            return f"'{self.kind}' writes unsigned integers; cast {elem} to an unsigned type first"
        if self.kind not in _UNSIGNED_KINDS | {"", "d"}:
            return f"the conversion '{self.kind}' does not apply to {elem}"
        return None

    def spec(self, elem: Elem, length: str = "") -> str:
        """The printf conversion specification for a value of ``elem``, with the ``length``
        modifier the target needs for it (``"l"``, ``"ll"`` …)."""
        if elem is Elem.BOOL:
            return "%s"
        if elem.is_float:
            letter = self.kind or "g"
        else:
            letter = self.kind if self.kind in _UNSIGNED_KINDS else "d" if elem.is_signed else "u"
        width = "" if self.width is None else str(self.width)
        precision = "" if self.precision is None else f".{self.precision}"
        return f"%{self.flags}{width}{precision}{length}{letter}"


@dataclass(frozen=True, slots=True)
class PrintFormat:
    """The literal ``text`` around the values of a print (one more piece than values) and each
    value's :class:`Conversion`."""

    text: tuple[str, ...]
    conversions: tuple[Conversion, ...]

    def __post_init__(self) -> None:
        if len(self.text) != len(self.conversions) + 1:
            raise ValueError(
                f"a print of {len(self.conversions)} values has {len(self.conversions) + 1} "
                f"pieces of text, not {len(self.text)}"
            )

    def printf(self, elems: Sequence[Elem], length: Callable[[Elem], str]) -> str:
        """The whole printf format string for values of ``elems`` (``%`` in the text doubled);
        ``length`` gives the length modifier of each element."""
        parts = [self.text[0].replace("%", "%%")]
        for conv, elem, text in zip(self.conversions, elems, self.text[1:], strict=True):
            parts += [conv.spec(elem, length(elem)), text.replace("%", "%%")]
        return "".join(parts)

    def __str__(self) -> str:
        parts = [self.text[0]]
        for conv, text in zip(self.conversions, self.text[1:], strict=True):
            width = "" if conv.width is None else str(conv.width)
            precision = "" if conv.precision is None else f".{conv.precision}"
            spec = f"{conv.flags}{width}{precision}{conv.kind}"
            parts += ["{" + (":" + spec if spec else "") + "}", text]
        return repr("".join(parts))

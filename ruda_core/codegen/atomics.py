"""Atomics on global and shared arrays: native where the dialect has them, otherwise a
compare-and-swap loop over the 32- or 64-bit word holding the element.

Every atomic returns the element's old value. ``ATOMIC_LOAD`` is a volatile read of the element's
bits; ``ATOMIC_STORE`` is a swap whose result is dropped. The loop reads the word, computes the
new element with the same expression as the plain operation (so wrapping, ``fmin``/``fmax`` and
narrow-float rounding match), splices it into the word and retries until the word was unchanged.
8- and 16-bit elements are updated inside their aligned 32-bit word (little-endian lanes).
``ATOMIC_CAS`` compares values (``-0.0 == 0.0``; NaN never matches), not bit patterns. The
wrapping counters (``u32`` only) compute CUDA's ``atomicInc``/``atomicDec`` rules in the loop.
This module builds expressions and helper functions only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir import Elem, Op
from .dialect import BITS_ELEM, MemSpace
from .expr import ExprLowering
from .prelude import bare

__all__ = ["AtomicLowering"]


class AtomicLowering:
    """Atomic operations for one emission; helper loops go to ``expr``'s prelude."""

    __slots__ = ("d", "expr")

    def __init__(self, expr: ExprLowering) -> None:
        self.expr = expr
        self.d = expr.d

    def expression(
        self, op: Op, elem: Elem, space: MemSpace, ptr: str, values: Sequence[str]
    ) -> str:
        """The C expression performing atomic ``op`` on the ``elem`` at address ``ptr``, whose
        value is the old element. ``values`` are the operands after the index, as text."""
        d = self.d
        if op is Op.ATOMIC_LOAD:
            bits = d.type_name(BITS_ELEM[elem.nbytes])
            return d.bits_to_value(elem, f"*({d.qualified(space, bits, volatile=True)}*){ptr}")
        kind = Op.ATOMIC_SWAP if op is Op.ATOMIC_STORE else op
        native = d.atomic_native(kind, elem, space)
        if native is not None:
            return native.format(ptr=ptr, cmp=values[0], v=values[-1])
        return f"{self._cas_loop(kind, elem, space)}({', '.join([ptr, *values])})"

    def _cas_loop(self, op: Op, elem: Elem, space: MemSpace) -> str:
        name = f"ruda_{op.value}_{elem}_{space.value}"
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        ctype = d.type_name(elem)
        word_elem = Elem.U64 if elem.nbytes == 8 else Elem.U32
        word, u32 = d.type_name(word_elem), d.type_name(Elem.U32)
        pointer = d.atomic_word_pointer(word_elem, space)
        cas = d.atomic_cas_word(word_elem, space).format(ptr="word", cmp="old", v="want")
        new_bits = d.value_to_bits(elem, bare(self.expr.atomic_update(op, elem, "cur", "v", "cmp")))
        if elem.nbytes >= 4:
            body = [f"{pointer} word = ({pointer})p;"]
            current = d.bits_to_value(elem, "old")
            want = new_bits
        else:
            uintptr = d.uintptr
            low = lit((1 << elem.bits) - 1, Elem.U32)
            body = [
                f"{pointer} word = ({pointer})(({uintptr})p & ~({uintptr})3);",
                f"{u32} shift = ({u32})(({uintptr})p & 3) * {lit(8, Elem.U32)};",
                f"{u32} mask = {low} << shift;",
            ]
            bits = d.type_name(BITS_ELEM[elem.nbytes])
            current = d.bits_to_value(
                elem, f"({bits})(old >> shift)" if elem.is_float else "(old >> shift)"
            )
            want = f"(old & ~mask) | ((({u32}){new_bits} << shift) & mask)"
        body += [
            f"{word} old = *word;",
            "for (;;) {",
            f"    {ctype} cur = {current};",
            f"    {word} want = {want};",
            f"    {word} seen = {cas};",
            "    if (seen == old) {",
            "        return cur;",
            "    }",
            "    old = seen;",
            "}",
        ]
        params = [(f"{d.qualified(space, d.storage_type(elem, space))}*", "p")]
        if op is Op.ATOMIC_CAS:
            params.append((ctype, "cmp"))
        params.append((ctype, "v"))
        return self.expr.prelude.add(name, d.function(ctype, name, params, body))

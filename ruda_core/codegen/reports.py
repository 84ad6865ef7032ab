"""``REPORT_OOB`` in a dialect's syntax (see :mod:`ruda_core.ir.bounds`): the first report of a
launch exchanges the report buffer's flag for 1 and, having found 0 there, writes the buffer's
number and the index's and the length's low and high words. This module builds text only.
"""

from __future__ import annotations

from typing import cast

from ..errors import CompilationError, UnsupportedFeature
from ..ir import Const, Elem, Instr, KernelDefinition, Op, Operand, Param
from ..ir.bounds import REPORT_PARAM
from .dialect import Dialect, MemSpace
from .expr import ExprLowering
from .printf import word_halves

__all__ = ["report_param", "report_statement"]


def report_param(definition: KernelDefinition) -> Param:
    """The report buffer parameter the bounds pass appended in ``VALIDATE`` mode.

    :raises CompilationError: the definition has none (a ``REPORT_OOB`` outside that mode).
    """
    report = next((p for p in definition.array_params if p.name == REPORT_PARAM), None)
    if report is None:
        raise CompilationError(f"report_oob without the '{REPORT_PARAM}' parameter")
    return report


def report_statement(
    d: Dialect, expr: ExprLowering, ins: Instr, buffer: str, at: str | None = None
) -> list[str]:
    """The statements of a verified ``REPORT_OOB`` into the report buffer named ``buffer``,
    whose words start at element ``at`` of it where it is bound at an offset (None: at 0); its
    words are written through :meth:`~ruda_core.codegen.dialect.Dialect.record_word`."""
    u32 = Elem.U32
    swap = d.atomic_native(Op.ATOMIC_SWAP, u32, MemSpace.GLOBAL)
    if swap is None:
        raise UnsupportedFeature(f"{d.name} has no 32-bit atomic exchange to report with")

    def word(k: int) -> str:
        return d.literal(k, u32) if at is None else f"{at} + {d.literal(k, u32)}"

    buffer_no, index, length = cast(tuple[Operand, Operand, Operand], ins.args)  # verified
    words = [expr.text(buffer_no), *_halves(d, expr, index), *_halves(d, expr, length)]
    flag = swap.format(ptr=f"&{buffer}[{word(0)}]", v=d.literal(1, u32))
    lines = [f"if ({flag} == {d.literal(0, u32)}) {{"]
    lines += [f"    {d.record_word(buffer, word(k), w)};" for k, w in enumerate(words, start=1)]
    return [*lines, "}"]


def _halves(d: Dialect, expr: ExprLowering, value: Operand) -> tuple[str, str]:
    """The low and high ``u32`` words of a 64-bit value (a constant's split here: a shader
    compiler may refuse to convert a 64-bit literal)."""
    u32 = Elem.U32
    if isinstance(value, Const):
        n = int(value.value)
        return d.literal(n & 0xFFFFFFFF, u32), d.literal(n >> 32, u32)
    return word_halves(d, expr.text(value))

"""The helper functions of one generated translation unit.

Helpers (Python floor division, compare-and-swap loops, plane reductions …) are emitted once
each, only when a kernel uses them, in the order they were first requested; a helper requests
its own dependencies before it registers itself, so every helper is defined before its first use.
This module formats text only; it knows no operation and no target (a dialect writes each
helper's definition: :meth:`~ruda_core.codegen.dialect.Dialect.function`).
"""

from __future__ import annotations

__all__ = ["Prelude", "bare"]


class Prelude:
    """An ordered, duplicate-free set of helper definitions. One per emission."""

    __slots__ = ("_texts",)

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._texts

    def add(self, name: str, text: str) -> str:
        """Register ``text`` as the definition of ``name`` unless already present; return
        ``name``."""
        self._texts.setdefault(name, text)
        return name

    def render(self) -> list[str]:
        """The definitions in registration order, separated by blank lines."""
        lines: list[str] = []
        for text in self._texts.values():
            lines.extend(text.splitlines())
            lines.append("")
        return lines


def bare(expr: str) -> str:
    """``expr`` without one pair of enclosing parentheses, where they enclose all of it (for
    text that becomes a function argument or a statement's whole expression)."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return expr
    depth = 0
    for k, ch in enumerate(expr):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and k < len(expr) - 1:
            return expr
    return expr[1:-1]

"""The helper functions of one generated translation unit.

Helpers (Python floor division, compare-and-swap loops, plane reductions …) are emitted once
each, only when a kernel uses them, in the order they were first requested; a helper requests
its own dependencies before it registers itself, so every helper is defined before its first use.
This module formats text only; it knows no operation and no target.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Prelude", "function"]


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


def function(prefix: str, ret: str, name: str, params: Sequence[str], body: Sequence[str]) -> str:
    """The text of a function definition. ``body`` lines are indented by their own leading
    spaces plus one level."""
    lines = [f"{prefix} {ret} {name}({', '.join(params)}) {{"]
    lines.extend(f"    {line}" for line in body)
    lines.append("}")
    return "\n".join(lines)

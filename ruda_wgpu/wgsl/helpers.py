"""The WGSL helper functions of the operations WGSL lacks or a driver gets wrong, read from
``helpers.wgsl`` (which says why each is written out), each with the module variable it uses
where it uses one: :data:`HELPERS` by name, and :func:`referenced`, those a module calls (WGSL
declares functions and variables in any order). A block of lines between ``// repeat N`` and
``// end repeat`` is written out ``N`` times: lavapipe stops a unit's loops after 65 535 turns
in all, so the helpers' loops take several steps a turn.
Imports no driver.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib.resources import files

__all__ = ["HELPERS", "referenced"]

_FUNCTION = re.compile(r"^(?:var<.*;\n)?fn (ruda_\w+)\(.*?^}$", re.M | re.S)
_REPEAT = re.compile(r"^ *// repeat (\d+)\n(.*?)^ *// end repeat\n", re.M | re.S)
_CALLED = re.compile(r"\b(ruda_\w+)\(")


def _functions(text: str) -> dict[str, str]:
    """The functions of a WGSL text, by name, with their repeated blocks written out."""
    text = _REPEAT.sub(lambda m: m[2] * int(m[1]), text)
    return {m[1]: m[0] for m in _FUNCTION.finditer(text)}


#: Every helper's definition, by its name.
HELPERS = _functions(files(__package__).joinpath("helpers.wgsl").read_text(encoding="utf-8"))


def referenced(texts: Iterable[str]) -> list[str]:
    """The definitions of the helpers that ``texts`` call, and of those they call."""
    found: dict[str, str] = {}
    pending = [name for text in texts for name in _CALLED.findall(text)]
    while pending:
        name = pending.pop()
        if name in HELPERS and name not in found:
            found[name] = HELPERS[name]
            pending += _CALLED.findall(HELPERS[name])
    return sorted(found.values())

"""What one launch derives from its unit positions, kept for its later batches.

Every batch of a launch computes the same values from its unit positions (``UNIT_POS >= d``,
``UNIT_POS - d``, their masks and their runs of units) as the batches before it of the same
size. A :class:`Derived` belongs to one launch (its ``LaunchShape``) and keeps them, so that a
later batch finds the very object an earlier one made instead of computing it and tiling one
cube's pattern over the batch anew. Values are never mutated after creation, so sharing them is
safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DERIVED_BYTES", "Derived"]

#: The most bytes of arrays one launch keeps (see :meth:`Derived.get`): beyond, derived values
#: are computed each time.
DERIVED_BYTES = 32 << 20


class Derived:
    """Values keyed by the values they come from and by the operation. Each entry keeps its
    sources alive, so their ``id`` names them while it lasts. Holds at most ``DERIVED_BYTES``
    of the values' ``nbytes`` (a unit vector counts as if materialised); a value that does not
    fit is returned without being kept. Belongs to one launch, which runs on one thread."""

    __slots__ = ("_found", "_left")

    def __init__(self) -> None:
        self._found: dict[tuple[object, ...], tuple[tuple[object, ...], Any]] = {}
        self._left = DERIVED_BYTES

    def get(self, sources: tuple[object, ...], key: object, make: Callable[[], Any]) -> Any:
        """The value ``make()`` computes from ``sources`` for ``key``: computed at the first
        call, then the same object."""
        name = (*map(id, sources), key)
        found = self._found.get(name)
        if found is not None:
            return found[1]
        value = make()
        size = int(getattr(value, "nbytes", 0))
        if size <= self._left:
            self._left -= size
            self._found[name] = (sources, value)
        return value

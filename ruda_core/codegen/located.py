"""What an emitter's errors name: the kernel being emitted and the statement it is at."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..errors import CompilationError, UnsupportedFeature
from ..ir import KernelDefinition, SourceLoc

__all__ = ["Located"]

_T = TypeVar("_T")


class Located:
    """A mixin for one emission's state: ``defn`` is the kernel and ``loc`` the source location
    of the statement being emitted (None before the first)."""

    defn: KernelDefinition
    loc: SourceLoc | None

    def where(self) -> str:
        """The kernel and the current location, for an error message."""
        loc = self.loc or self.defn.source
        return f"kernel '{self.defn.name}'" + (f" ({loc})" if loc is not None else "")

    def guarded(self, action: Callable[[], _T]) -> _T:
        """``action()``, with errors re-raised naming the kernel and the current location."""
        try:
            return action()
        except UnsupportedFeature as exc:
            raise UnsupportedFeature(f"{self.where()}: {exc}") from exc
        except CompilationError as exc:
            loc = self.loc or self.defn.source
            raise CompilationError(
                f"{self.where()}: {exc}",
                file=loc.file if loc else None,
                line=loc.line if loc else None,
            ) from exc

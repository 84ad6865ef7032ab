"""``@func``: device functions that kernels (and other device functions) call.

A device function is inlined at every call: its arguments bind to its parameters by the usual
Python rules (positional, keyword, defaults), arrays by reference and scalars by value. An
annotation is optional; when given it is checked at each call: a scalar type or element variable
converts a literal and requires a typed argument of that type (an element variable binds, for
this call, to the argument's type), ``Array[T]``/``Tensor[T]`` require such an array, and
``Comptime`` a compile-time value. A return annotation (``-> f32``) types the result.

``return`` may appear anywhere in a device function, also inside loops; a function that returns
a value on some path must return one on every path. Recursion is a CompilationError.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..errors import CompilationError
from .syntax import ParsedFunction, evaluated_annotations, parse_function

__all__ = ["Func", "func"]


class Func:
    """A device function (made by :func:`func`). Calling it on the host is a TypeError."""

    __slots__ = ("_annotations", "fn", "parsed", "signature")

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn = fn
        self.parsed: ParsedFunction = parse_function(fn, "@func")
        self.signature = inspect.signature(fn)
        self._annotations: dict[str, Any] | None = None

    @property
    def annotations(self) -> dict[str, Any]:
        """The evaluated annotations (parameters and ``return``), read at the first call.

        :raises CompilationError: when an annotation cannot be evaluated.
        """
        if self._annotations is None:
            try:
                self._annotations = evaluated_annotations(self.fn)
            except Exception as exc:  # any error of the user's annotation expressions
                raise self.parsed.error(f"cannot evaluate the annotations: {exc}") from None
        return self._annotations

    @property
    def __name__(self) -> str:
        return self.parsed.name

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise TypeError(
            f"@func '{self.parsed.name}' can only be called inside a @kernel or @func body"
        )

    def __repr__(self) -> str:
        return f"<@func {self.parsed.name}>"


def func(fn: Callable[..., object]) -> Func:
    """Declare a device function.

    :raises CompilationError: at once, when its source uses syntax kernels do not accept.
    """
    if isinstance(fn, Func):
        return fn
    if not callable(fn):
        raise CompilationError(f"@func applies to a function, not {fn!r}")
    return Func(fn)

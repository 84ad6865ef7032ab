"""Launch arguments for array and tensor parameters: :class:`ArrayArg` and :class:`TensorArg`.

Both are validated at construction (non-negative lengths, extents and strides below 2**32,
shape and strides of one rank) and hold a handle without copying anything; the launch checks
them against the kernel's parameters. A ``RudaTensor`` may be passed where either is expected.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import LaunchConfigError
from ..ir import Elem
from ..runtime.layout import Strided
from ..runtime.memory import Binding
from .types import as_elem

__all__ = ["ArrayArg", "HandleLike", "TensorArg"]

_U32_LIMIT = 1 << 32


class HandleLike(Protocol):
    """What a launch needs of a handle: its size and a binding, both fixed for the handle (an
    :class:`ArrayArg` reads them once, when it is made)."""

    @property
    def nbytes(self) -> int: ...

    def binding(self) -> Binding: ...


def _count(value: object, what: str) -> int:
    try:
        n = operator.index(value)  # type: ignore[arg-type]  # any int-like
    except TypeError:
        raise LaunchConfigError(f"{what} must be an int, got {value!r}") from None
    if not 0 <= n < _U32_LIMIT:
        raise LaunchConfigError(f"{what} is {n}; it must be in 0..2**32-1")
    return n


def _elem(value: object) -> Elem | None:
    if value is None:
        return None
    try:
        return as_elem(value)
    except TypeError as exc:
        raise LaunchConfigError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class ArrayArg:
    """An ``Array[T]`` argument: ``length`` elements of ``handle``.

    :param elem: the element type of the data (a scalar type, ``Elem`` or dtype); when given,
        it must match the parameter's and it specialises element-generic kernels.
    :raises LaunchConfigError: for a negative length or one of 2**32 or more, or a ``handle``
        without ``nbytes`` and ``binding()``.
    """

    handle: HandleLike
    length: int
    elem: Elem | None = None
    #: ``handle.binding()`` and ``handle.nbytes``, read once here: a launch reads these
    _binding: Binding = field(init=False, repr=False, compare=False)
    _nbytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "length", _count(self.length, "ArrayArg length"))
        object.__setattr__(self, "elem", _elem(self.elem))
        try:
            binding, nbytes = self.handle.binding(), self.handle.nbytes
        except AttributeError:
            raise LaunchConfigError(
                f"ArrayArg takes a handle (with nbytes and binding()), got "
                f"{type(self.handle).__name__}; pass a RudaTensor itself as the argument"
            ) from None
        object.__setattr__(self, "_binding", binding)
        object.__setattr__(self, "_nbytes", nbytes)


@dataclass(frozen=True, slots=True)
class TensorArg(Strided):
    """A ``Tensor[T]`` argument: ``handle`` viewed with ``shape`` and ``strides`` (elements).

    Its rank specialises the kernel. The elements addressed are those at
    ``sum(i[d] * strides[d])``; ``t.len()`` in the kernel is one more than the largest such
    offset (0 for an empty tensor).

    :raises LaunchConfigError: for shape and strides of different lengths, or a negative value
        or one of 2**32 or more.
    """

    handle: HandleLike
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem | None = None

    def __post_init__(self) -> None:
        shape = tuple(_count(s, "a TensorArg extent") for s in self.shape)
        strides = tuple(_count(s, "a TensorArg stride") for s in self.strides)
        if len(shape) != len(strides):
            raise LaunchConfigError(
                f"TensorArg shape {shape} and strides {strides} have different lengths"
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "strides", strides)
        object.__setattr__(self, "elem", _elem(self.elem))

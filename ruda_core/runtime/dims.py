"""Launch geometry and checking modes: ``RudaCount``, ``RudaDim``, ``BoundsCheckMode`` (and
``ExecutionMode``, which the IR defines and this module re-exports).

``RudaDim`` is the number of units per cube (the CUDA block, the OpenCL local size);
``RudaCount`` the number of cubes (the CUDA grid, the OpenCL work-group count). Both are
validated at construction; device limits are checked once per launch by the client.
Wherever a launch takes them it also takes an ``int`` or a tuple of 1 to 3 ints
(:func:`launch_geometry`).
"""

from __future__ import annotations

import enum
import operator
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from ..errors import LaunchConfigError, SettingError
from ..ir.modes import ExecutionMode

if TYPE_CHECKING:
    from .memory.handle import Binding

__all__ = [
    "BoundsCheckMode",
    "CountLike",
    "DimLike",
    "ExecutionMode",
    "RudaCount",
    "RudaDim",
    "integral",
    "launch_geometry",
]

_U32_MAX = 0xFFFF_FFFF


def integral(value: object) -> int | None:
    """``value`` as an ``int`` when it is an integer (an ``int``, a NumPy integer, anything with
    ``__index__``) other than a ``bool``; None for anything else (a float, a bool, a string)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]  # any object; TypeError if not
    except TypeError:
        return None


def _check_axes(value: RudaDim | RudaCount, lowest: int = 1) -> None:
    """Store every axis of ``value`` as an ``int`` in ``lowest``..2**32-1, else raise."""
    for axis in ("x", "y", "z"):
        v = getattr(value, axis)
        if type(v) is not int:
            n = integral(v)
            if n is None:
                raise LaunchConfigError(
                    f"{value}: every axis must be an integer (an int or a NumPy integer), got "
                    f"{v!r} ({type(v).__name__})"
                )
            object.__setattr__(value, axis, n)  # frozen: normalised once, at construction
            v = n
        if v < lowest or v > _U32_MAX:
            raise LaunchConfigError(
                f"{value} has an axis outside {lowest}..2**32-1; use 1 for axes you do not need"
            )


@dataclass(frozen=True, slots=True)
class RudaDim:
    """Units per cube. Every axis is an integer (``int`` or NumPy, stored as ``int``) in
    1..2**32-1; the product must fit the device."""

    x: int = 1
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        _check_axes(self)

    @property
    def num_units(self) -> int:
        """Units in one cube (x * y * z)."""
        return self.x * self.y * self.z


@dataclass(frozen=True, slots=True)
class RudaCount:
    """Cubes per launch: static ``RudaCount(x, y, z)`` or dynamic ``RudaCount.dynamic(binding)``,
    whose three ``u32`` values are read from device memory when the launch executes. A zero
    axis, static or dynamic, launches nothing (``(n + d - 1) // d`` cubes for ``n = 0``)."""

    x: int = 1
    y: int = 1
    z: int = 1
    binding: Binding | None = None

    def __post_init__(self) -> None:
        if self.binding is None:
            _check_axes(self, lowest=0)  # a zero axis launches nothing, as a dynamic one does
        elif self.binding.nbytes < 12:
            raise LaunchConfigError(
                f"a dynamic RudaCount needs 3 u32 values (12 bytes); the binding has "
                f"{self.binding.nbytes}"
            )

    @classmethod
    def dynamic(cls, binding: Binding) -> RudaCount:
        """A count read from ``binding`` (3 u32 values: x, y, z) at execution time. A zero axis
        launches nothing."""
        return cls(0, 0, 0, binding)

    @property
    def is_dynamic(self) -> bool:
        return self.binding is not None

    @property
    def num_cubes(self) -> int:
        """Cubes in a static count (x * y * z)."""
        return self.x * self.y * self.z

    def __repr__(self) -> str:
        if self.binding is not None:
            return f"RudaCount.dynamic({self.binding!r})"
        return f"RudaCount({self.x}, {self.y}, {self.z})"


#: What a launch takes as its count: a ``RudaCount``, an ``int`` (x) or a tuple of 1 to 3 ints
CountLike: TypeAlias = "RudaCount | int | tuple[int, ...]"
#: What a launch takes as its dim: a ``RudaDim``, an ``int`` (x) or a tuple of 1 to 3 ints
DimLike: TypeAlias = "RudaDim | int | tuple[int, ...]"

#: converted geometry by the ``int`` or tuple of ints given, so that the same value gives the
#: same object: launchers recognise a geometry already admitted by identity
_COUNTS: dict[object, RudaCount] = {}
_DIMS: dict[object, RudaDim] = {}
_MEMO_SIZE = 1024


def launch_geometry(count: CountLike, dim: DimLike) -> tuple[RudaCount, RudaDim]:
    """``count`` and ``dim`` as a ``RudaCount`` and a ``RudaDim``: each is one already, an
    ``int`` (the x axis; y and z are 1) or a tuple of 1 to 3 ints (NumPy integers too). The
    same ``int`` or tuple gives the same object each time.

    :raises LaunchConfigError: naming ``count`` or ``dim``, for anything else or an axis out of
        range (count axes 0..2**32-1, dim axes 1..2**32-1).
    """
    if type(count) is not RudaCount:
        found = _COUNTS.get(count) if type(count) is int else None
        count = found if found is not None else _convert(count, RudaCount, _COUNTS, "count", 0)
    if type(dim) is not RudaDim:
        made = _DIMS.get(dim) if type(dim) is int else None
        dim = made if made is not None else _convert(dim, RudaDim, _DIMS, "dim", 1)
    return count, dim


_Geometry = TypeVar("_Geometry", RudaCount, RudaDim)


def _convert(
    value: object, kind: type[_Geometry], memo: dict[object, _Geometry], name: str, lowest: int
) -> _Geometry:
    """``value`` (an integer or a tuple of 1 to 3) as a ``kind``, remembered in ``memo`` when it
    is an exact ``int`` or a tuple of them (a ``bool`` or a float would find an equal key)."""
    if isinstance(value, kind):
        return value  # a subclass
    exact = type(value) is int or (type(value) is tuple and all(type(v) is int for v in value))
    if exact:
        found = memo.get(value)
        if found is not None:
            return found
    one = integral(value)
    axes = (one,) if one is not None else _axes(value)
    if axes is None or not all(lowest <= a <= _U32_MAX for a in axes):
        raise LaunchConfigError(
            f"{name} takes an int, a tuple of 1 to 3 ints or a {kind.__name__}, each axis in "
            f"{lowest}..2**32-1; got {value!r} ({type(value).__name__})"
            + ("; use 1 for axes you do not need" if axes is not None and lowest else "")
        )
    x, y, z = axes + (1,) * (3 - len(axes))
    made = kind(x, y, z)
    if exact:
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        made = memo.setdefault(value, made)
    return made


def _axes(value: object) -> tuple[int, ...] | None:
    """The axes of a tuple of 1 to 3 integers; None for anything else."""
    if type(value) is not tuple or not 1 <= len(value) <= 3:
        return None
    axes = tuple(integral(v) for v in value)
    return None if None in axes else axes  # type: ignore[return-value]  # no None left


class BoundsCheckMode(enum.Enum):
    """What ``launch_unchecked`` really does: ``auto`` = Unchecked, ``enforce`` = Checked,
    ``validate`` = Checked plus a ``ValidationError`` at the next sync.

    The mode comes from :meth:`configure`, else the ``RUDA_BOUNDS_CHECK`` environment variable,
    else ``auto``. The variable is read once, when the mode is first needed, and again after
    each :meth:`configure` (``configure(None)`` picks up a changed variable). ``launch`` is
    always Checked.
    """

    AUTO = "auto"
    ENFORCE = "enforce"
    VALIDATE = "validate"

    #: members are singletons: hashed by identity, in C (``Enum`` hashes the name in Python,
    #: and ``execution_mode`` looks the mode up at every ``launch_unchecked`` and portable op)
    __hash__ = object.__hash__

    @property
    def execution_mode(self) -> ExecutionMode:
        return _EXECUTION[self]

    @classmethod
    def current(cls) -> BoundsCheckMode:
        """The mode in force now (configured, else ``RUDA_BOUNDS_CHECK`` as last read, else
        ``auto``). A variable that is set but empty (or blank) counts as unset. Every
        ``launch_unchecked`` and portable op asks, so the answer is kept (``os.environ`` costs
        half a microsecond a read).

        :raises ValueError: when ``RUDA_BOUNDS_CHECK`` names no mode.
        """
        mode = _config.mode
        if mode is None:
            mode = _config.env
            if mode is None:
                mode = _config.env = cls._from_env()
        return mode

    @classmethod
    def _from_env(cls) -> BoundsCheckMode:
        raw = os.environ.get("RUDA_BOUNDS_CHECK", "").strip().lower() or "auto"
        try:
            return cls(raw)
        except ValueError:
            raise SettingError(
                f"RUDA_BOUNDS_CHECK={raw!r} is not a mode; use auto, enforce or validate"
            ) from None

    @classmethod
    def configure(cls, mode: BoundsCheckMode | str | None) -> None:
        """Set the process-wide mode (``None`` returns to the environment variable, read again
        at the next launch). Applies to launches made after the call."""
        with _config.lock:
            _config.mode = None if mode is None else cls(mode)
            _config.env = None


_EXECUTION = {
    BoundsCheckMode.AUTO: ExecutionMode.UNCHECKED,
    BoundsCheckMode.ENFORCE: ExecutionMode.CHECKED,
    BoundsCheckMode.VALIDATE: ExecutionMode.VALIDATE,
}


class _Config:
    __slots__ = ("env", "lock", "mode")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: what configure() set, else None
        self.mode: BoundsCheckMode | None = None
        #: the mode RUDA_BOUNDS_CHECK named when last read, None until it is read again
        self.env: BoundsCheckMode | None = None


_config = _Config()

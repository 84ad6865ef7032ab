"""Launch geometry and checking modes: ``RudaCount``, ``RudaDim``, ``BoundsCheckMode`` (and
``ExecutionMode``, which the IR defines and this module re-exports).

``RudaDim`` is the number of units per cube (the CUDA block, the OpenCL local size);
``RudaCount`` the number of cubes (the CUDA grid, the OpenCL work-group count). Both are
validated at construction; device limits are checked once per launch by the client.
"""

from __future__ import annotations

import enum
import operator
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import LaunchConfigError
from ..ir.modes import ExecutionMode

if TYPE_CHECKING:
    from .memory.handle import Binding

__all__ = ["BoundsCheckMode", "ExecutionMode", "RudaCount", "RudaDim", "integral"]

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
            raise ValueError(
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

"""Launch geometry and checking modes: ``RudaCount``, ``RudaDim``, ``BoundsCheckMode``,
``ExecutionMode``.

``RudaDim`` is the number of units per cube (the CUDA block, the OpenCL local size);
``RudaCount`` the number of cubes (the CUDA grid, the OpenCL work-group count). Both are
validated at construction; device limits are checked once per launch by the client.
"""

from __future__ import annotations

import enum
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import LaunchConfigError

if TYPE_CHECKING:
    from .memory.handle import Binding

__all__ = ["BoundsCheckMode", "ExecutionMode", "RudaCount", "RudaDim"]

_U32_MAX = 0xFFFF_FFFF


def _check_axes(what: object, x: int, y: int, z: int) -> None:
    for v in (x, y, z):
        if not isinstance(v, int) or isinstance(v, bool):
            raise LaunchConfigError(f"{what}: every axis must be an int, got {v!r}")
        if v < 1 or v > _U32_MAX:
            raise LaunchConfigError(
                f"{what} has an axis outside 1..2**32-1; use 1 for axes you do not need"
            )


@dataclass(frozen=True, slots=True)
class RudaDim:
    """Units per cube. Every axis is >= 1; the product must fit the device."""

    x: int = 1
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        _check_axes(self, self.x, self.y, self.z)

    @property
    def num_units(self) -> int:
        """Units in one cube (x * y * z)."""
        return self.x * self.y * self.z


@dataclass(frozen=True, slots=True)
class RudaCount:
    """Cubes per launch: static ``RudaCount(x, y, z)`` or dynamic ``RudaCount.dynamic(binding)``,
    whose three ``u32`` values are read from device memory when the launch executes."""

    x: int = 1
    y: int = 1
    z: int = 1
    binding: Binding | None = None

    def __post_init__(self) -> None:
        if self.binding is None:
            _check_axes(self, self.x, self.y, self.z)
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


class ExecutionMode(enum.Enum):
    """How a compiled kernel treats out-of-bounds accesses of its arrays."""

    CHECKED = "checked"  #: OOB reads return 0, OOB writes are dropped
    VALIDATE = "validate"  #: CHECKED, and the first OOB access is reported at the next sync
    UNCHECKED = "unchecked"  #: no checks; the caller guarantees all accesses are in bounds


class BoundsCheckMode(enum.Enum):
    """What ``launch_unchecked`` really does: ``auto`` = Unchecked, ``enforce`` = Checked,
    ``validate`` = Checked plus a ``ValidationError`` at the next sync.

    The mode comes from :meth:`configure`, else the ``RUDA_BOUNDS_CHECK`` environment variable,
    else ``auto``. ``launch`` is always Checked.
    """

    AUTO = "auto"
    ENFORCE = "enforce"
    VALIDATE = "validate"

    @property
    def execution_mode(self) -> ExecutionMode:
        return _EXECUTION[self]

    @classmethod
    def current(cls) -> BoundsCheckMode:
        """The mode in force now (configured, else ``RUDA_BOUNDS_CHECK``, else ``auto``). A
        variable that is set but empty (or blank) counts as unset.

        :raises ValueError: when ``RUDA_BOUNDS_CHECK`` names no mode.
        """
        configured = _config.mode
        if configured is not None:
            return configured
        raw = os.environ.get("RUDA_BOUNDS_CHECK", "").strip().lower() or "auto"
        try:
            return cls(raw)
        except ValueError:
            raise ValueError(
                f"RUDA_BOUNDS_CHECK={raw!r} is not a mode; use auto, enforce or validate"
            ) from None

    @classmethod
    def configure(cls, mode: BoundsCheckMode | str | None) -> None:
        """Set the process-wide mode (``None`` returns to the environment variable). Applies to
        launches made after the call."""
        with _config.lock:
            _config.mode = None if mode is None else cls(mode)


_EXECUTION = {
    BoundsCheckMode.AUTO: ExecutionMode.UNCHECKED,
    BoundsCheckMode.ENFORCE: ExecutionMode.CHECKED,
    BoundsCheckMode.VALIDATE: ExecutionMode.VALIDATE,
}


class _Config:
    __slots__ = ("lock", "mode")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mode: BoundsCheckMode | None = None


_config = _Config()

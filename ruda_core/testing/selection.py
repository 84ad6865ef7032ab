"""Which devices the conformance suite runs on, which backends it requires, and opening them.

Devices come from ``--ruda-device`` (repeatable, comma lists allowed), else the
``RUDA_TEST_DEVICES`` environment variable (``cpu,opencl:0``), else every device
``ruda_core.enumerate_all_devices()`` lists plus every device that failed its probe (whose tests
then skip with the driver's reason). ``RUDA_REQUIRE=cuda,opencl`` names backends that must be
present: a required backend that is missing or has no usable device is a test *failure*, and so
is a device named by option or variable that does not exist (a typo must not pass as a run
that skipped everything); any other device that cannot be opened is a *skip* whose reason
names the device and why. A device is opened at most once per test run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import ruda_core

from ..plugins import REFERENCE_BACKEND
from ..runtime import ComputeClient

__all__ = [
    "ENV_DEVICES",
    "ENV_REQUIRE",
    "DeviceSelection",
    "Unavailable",
    "backend_of",
    "parse_names",
    "required_backends",
]

ENV_DEVICES = "RUDA_TEST_DEVICES"
ENV_REQUIRE = "RUDA_REQUIRE"


def parse_names(values: Iterable[str]) -> list[str]:
    """Split comma lists, strip, lowercase and de-duplicate, keeping the order."""
    names: list[str] = []
    for value in values:
        for part in value.split(","):
            name = part.strip().lower()
            if name and name not in names:
                names.append(name)
    return names


def required_backends() -> frozenset[str]:
    """Backends named by ``RUDA_REQUIRE``."""
    return frozenset(parse_names([os.environ.get(ENV_REQUIRE, "")]))


def backend_of(device: str) -> str:
    """The backend id of a device string (``"opencl:0"`` -> ``"opencl"``)."""
    return device.partition(":")[0]


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Why a device cannot be tested, and whether that is a failure (its backend is required)."""

    device: str
    reason: str
    required: bool
    #: the device was named for the run and does not exist (also a failure)
    named: bool = False

    def message(self) -> str:
        if self.named:
            return f"{self.device} does not exist: {self.reason}"
        if self.required:
            return (
                f"{self.device} cannot be opened, but {ENV_REQUIRE} requires backend "
                f"'{backend_of(self.device)}': {self.reason}"
            )
        return f"{self.device} is not available: {self.reason}"


@dataclass(slots=True)
class DeviceSelection:
    """The test run's devices (``names``) and their clients, opened lazily."""

    names: list[str]
    required: frozenset[str]
    #: Set when the default device list could not be enumerated (shown by the suite's checks).
    enumeration_error: str = ""
    #: whether ``names`` were named for the run rather than found
    named: bool = False
    _opened: dict[str, ComputeClient | Unavailable] = field(default_factory=dict)

    @classmethod
    def from_options(cls, devices: Sequence[str]) -> DeviceSelection:
        """The selection for ``--ruda-device`` values (empty: environment, then everything)."""
        required = required_backends()
        names = parse_names(devices) or parse_names([os.environ.get(ENV_DEVICES, "")])
        if names:
            return cls(names, required, named=True)
        try:
            found = [str(d) for d in ruda_core.enumerate_all_devices()]
        except Exception as exc:  # e.g. RUDA_BACKENDS names a broken backend: reported, not fatal
            error = f"enumerate_all_devices() failed: {type(exc).__name__}: {exc}"
            available = [str(d) for s in ruda_core.backends() if s.available for d in s.devices]
            return cls(available or [REFERENCE_BACKEND], required, error)
        unusable = [str(u.device) for s in ruda_core.backends() for u in s.unusable]
        return cls(found + unusable, required)

    def open(self, name: str) -> ComputeClient | Unavailable:
        """The client of ``name``, or why it cannot be had (remembered for the test run)."""
        outcome = self._opened.get(name)
        if outcome is None:
            try:
                outcome = ruda_core.client(name)
            except Exception as exc:  # any failure to open is reported per device, never raised
                reason = f"{type(exc).__name__}: {exc}"
                backend = backend_of(name)
                named = self.named and isinstance(exc, ValueError)  # no such device
                required = named or (backend in self.required and not _has_usable_device(backend))
                outcome = Unavailable(name, reason, required, named)
            self._opened[name] = outcome
        return outcome


def _has_usable_device(backend: str) -> bool:
    return any(s.name == backend and s.devices for s in ruda_core.backends())

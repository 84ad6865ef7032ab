"""Profiling results: :class:`ProfileDuration` separates submission, execution and transfer."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["ProfileDuration", "TimingMethod"]


class TimingMethod(enum.Enum):
    """How the execution time was measured."""

    DEVICE = "device"  #: device events/timestamps bracketing the work
    SYSTEM = "system"  #: host wall clock around a full sync (includes queueing)


@dataclass(frozen=True, slots=True)
class ProfileDuration:
    """Times of one profiled region, in nanoseconds.

    :param submission_ns: host time spent enqueueing (the profiled function's own run time).
    :param execution_ns: time the device spent on the region's kernels.
    :param transfer_ns: time spent on host<->device copies in the region.
    :param method: how ``execution_ns`` was measured.
    """

    name: str
    submission_ns: int
    execution_ns: int
    transfer_ns: int
    method: TimingMethod

    @property
    def total_ns(self) -> int:
        return self.execution_ns + self.transfer_ns

"""``LaunchLimits``: the checks a client makes of a launch before anything is enqueued, against
one device's limits and the task's own bounds. Imports no driver."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import LaunchConfigError, TooManyResources
from ..ir import WARPGROUP_UNITS
from .compiler import WIDE_LIMIT, RudaTask
from .dims import RudaCount, RudaDim
from .properties import DeviceProperties, Feature, Features

__all__ = ["LaunchLimits", "wide_launch_error"]


class LaunchLimits:
    """The launch limits of the device named ``device`` (as users name it: ``opencl:0``)."""

    __slots__ = ("_device", "_props", "sizes")

    def __init__(self, device: str, props: DeviceProperties, features: Features) -> None:
        self._device = device
        self._props = props
        across = features.has(Feature.PLANES_ACROSS_ROWS)
        #: the most units per cube, per axis of a cube, and cubes per axis, the shared memory
        #: per cube, and the width a row of a cube of several rows must be a multiple of for
        #: plane operations (1: any width, where planes run on across rows): what
        #: ``ComputeClient.admit`` compares a launch with before it calls :meth:`check`
        self.sizes = (
            props.max_units_per_ruda,
            props.max_ruda_dim,
            props.max_ruda_count,
            props.max_shared_memory_nbytes,
            1 if across else props.plane_dim,
        )

    def check(
        self, task: RudaTask, count: RudaCount, dim: RudaDim, scalars: Sequence[np.generic]
    ) -> None:
        """Check a launch's geometry and shared memory against the device's limits, its cube
        against the task's bounds (:attr:`~.compiler.RudaTask.max_units` and ``min_units``),
        a warpgroup kernel's cube against whole warpgroups, a plane kernel's cube of several
        rows against rows of whole planes (unless the device has
        ``Feature.PLANES_ACROSS_ROWS``), and the units of a task with
        :attr:`~.compiler.RudaTask.wide_positions` against :data:`~.compiler.WIDE_LIMIT`.

        :raises TooManyResources: for a launch over a limit.
        :raises LaunchConfigError: for a cube outside the task's bounds, a warpgroup kernel's
            cube that is not whole warpgroups, or a plane kernel's cube of several rows that are
            not whole planes where the device may form planes within rows.
        """
        max_units, max_dim, max_count, max_shared, plane = self.sizes
        shared = task.shared_bytes + task.dynamic_shared_bytes(scalars)
        if (
            dim.x * dim.y * dim.z > max_units
            or dim.x > max_dim[0]
            or dim.y > max_dim[1]
            or dim.z > max_dim[2]
            or count.x > max_count[0]
            or count.y > max_count[1]
            or count.z > max_count[2]
            or shared > max_shared
        ):
            raise TooManyResources(self._describe(task, count, dim, shared))
        if task.min_units > 1 and dim.num_units != task.min_units:
            units = task.min_units
            raise LaunchConfigError(
                f"kernel {task.name} states cube_units({units}): it is built for cubes of "
                f"exactly {units} units, and {dim} is {dim.num_units} units. Use a RudaDim of "
                f"{units} units"
            )
        if dim.num_units > task.max_units:
            bound = task.max_units
            raise LaunchConfigError(
                f"kernel {task.name} states launch_bounds({bound}): it is built for cubes of at "
                f"most {bound} units, and {dim} is {dim.num_units} units. Use a RudaDim of at "
                f"most {bound} units (more cubes cover the rest), or raise its launch_bounds"
            )
        if dim.y * dim.z > 1 and dim.x % plane and task.uses_planes:
            raise LaunchConfigError(
                f"kernel {task.name} uses plane operations on {dim}, a cube of several rows of "
                f"{dim.x} units: {self._device} may form planes within each row, so each row "
                f"must be whole planes. Make RudaDim.x a multiple of the plane width {plane}, "
                f"or launch one row of RudaDim({dim.num_units}) units (its last plane may be "
                "partial)"
            )
        wide = wide_launch_error(task, count, dim)
        if wide is not None:
            raise wide
        if task.uses_warpgroups and dim.num_units % WARPGROUP_UNITS:
            raise LaunchConfigError(
                f"kernel {task.name} uses warpgroup matrices, which need cubes of whole "
                f"warpgroups of {WARPGROUP_UNITS} units; {dim} is {dim.num_units} units. "
                f"Use a RudaDim whose units are a multiple of {WARPGROUP_UNITS}"
            )

    def _describe(self, task: RudaTask, count: RudaCount, dim: RudaDim, shared: int) -> str:
        props, dev = self._props, self._device
        if dim.num_units > props.max_units_per_ruda:
            return (
                f"{dim} is {dim.num_units} units; {dev} allows {props.max_units_per_ruda} per "
                "cube. Shrink RudaDim or raise RudaCount"
            )
        if any(d > m for d, m in zip((dim.x, dim.y, dim.z), props.max_ruda_dim, strict=True)):
            return f"{dim} exceeds {dev}'s per-axis limit {props.max_ruda_dim}"
        if shared > props.max_shared_memory_nbytes:
            sized = " (with the sizes given at this launch)" if task.dynamic_shared else ""
            return (
                f"kernel {task.name} needs {shared} bytes of shared memory{sized}; {dev} "
                f"allows {props.max_shared_memory_nbytes} per cube. Use a smaller SharedMemory"
            )
        return f"{count!r} exceeds {dev}'s cube-count limit {props.max_ruda_count}"


def wide_launch_error(task: RudaTask, count: RudaCount, dim: RudaDim) -> TooManyResources | None:
    """The refusal of a launch of ``count`` cubes of ``dim`` units that holds
    :data:`~.compiler.WIDE_LIMIT` units or more, of a task with
    :attr:`~.compiler.RudaTask.wide_positions`; None where it may run."""
    units = count.x * count.y * count.z * dim.num_units
    if not task.wide_positions or units < WIDE_LIMIT:
        return None
    return TooManyResources(
        f"kernel {task.name} reads a position over the whole launch (ABSOLUTE_POS, "
        f"RUDA_POS, RUDA_COUNT …), a u32, and {count} x {dim} is {units} units: it would "
        f"wrap past {WIDE_LIMIT - 1}. Launch fewer cubes, each unit looping over "
        "several elements (grid_stride), or several launches over parts of the data"
    )

"""Running an IR definition through a device's client in a chosen :class:`ExecutionMode`, the way
users reach each mode: Checked through ``client.launch``; Unchecked and Validate through
``client.launch_unchecked`` under ``BoundsCheckMode`` ``auto`` and ``validate``.

Uploading, argument packing and reading back are :func:`ruda_core.testing.runner.run_definition`'s;
this module only picks the mode. A Validate run's report is the ``ValidationError`` of the
client's next ``sync``, which :func:`run_validated` takes, so that no report is left behind for
a later test.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ruda_core.ir import ExecutionMode, KernelDefinition
from ruda_core.runtime import BoundsCheckMode, ComputeClient, ValidationError
from ruda_core.testing.runner import TIMEOUT_S, run_definition

__all__ = ["bounds_mode", "run", "run_validated", "validation_error"]

Dim3 = int | tuple[int, int, int]

_BOUNDS = {
    ExecutionMode.UNCHECKED: BoundsCheckMode.AUTO,
    ExecutionMode.CHECKED: BoundsCheckMode.ENFORCE,
    ExecutionMode.VALIDATE: BoundsCheckMode.VALIDATE,
}


@contextmanager
def bounds_mode(mode: ExecutionMode) -> Iterator[None]:
    """Inside the block ``launch_unchecked`` runs in ``mode``; after it, in the environment's
    mode again."""
    BoundsCheckMode.configure(_BOUNDS[mode])
    try:
        yield
    finally:
        BoundsCheckMode.configure(None)


def validation_error(client: ComputeClient) -> ValidationError | None:
    """The report of the validated launches since the client's last sync, if any (waits)."""
    try:
        client.sync().result(timeout=TIMEOUT_S)
    except ValidationError as exc:
        return exc
    return None


def run_validated(
    client: ComputeClient,
    defn: KernelDefinition,
    arrays: Sequence[np.ndarray],
    scalars: Sequence[object] = (),
    count: Dim3 = 1,
    dim: Dim3 = 1,
) -> tuple[list[np.ndarray], ValidationError | None]:
    """Run ``defn`` in Validate mode: every array afterwards, and the launch's report."""
    with bounds_mode(ExecutionMode.VALIDATE):
        out = run_definition(client, defn, arrays, scalars, count, dim, unchecked=True)
    return out, validation_error(client)


def run(
    client: ComputeClient,
    defn: KernelDefinition,
    arrays: Sequence[np.ndarray],
    scalars: Sequence[object] = (),
    count: Dim3 = 1,
    dim: Dim3 = 1,
    mode: ExecutionMode = ExecutionMode.UNCHECKED,
) -> list[np.ndarray]:
    """Run ``defn`` in ``mode`` as :func:`run_definition` does and return every array afterwards.

    :raises ValidationError: in Validate mode, when the launch accessed memory out of bounds
        (:func:`run_validated` gives the arrays as well).
    """
    if mode is ExecutionMode.CHECKED:
        return run_definition(client, defn, arrays, scalars, count, dim)
    if mode is ExecutionMode.VALIDATE:
        out, error = run_validated(client, defn, arrays, scalars, count, dim)
        if error is not None:
            raise error
        return out
    with bounds_mode(mode):
        return run_definition(client, defn, arrays, scalars, count, dim, unchecked=True)

"""Differential fuzzing: random well-typed kernels (:mod:`.random_kernels`) run on a device
and on the NumPy reference device, whose results must agree exactly.

:func:`check_program` runs a :class:`~.random_kernels.Program` on both devices (on the device
unchecked where every access stays in bounds) and raises an ``AssertionError`` naming the first
differing output, with the kernel's IR dump and the device's generated source (the server also
writes it to ``RUDA_DUMP_SOURCE`` when that is set); Hypothesis shrinks a failing program to a
minimal kernel, within the time :class:`ShrinkBudget` allows.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
from hypothesis import reject

from ..ir import KernelDefinition, Param, lower_bounds
from ..runtime import (
    BoundsCheckMode,
    ComputeClient,
    ExecutionMode,
    count_setting,
    seconds_setting,
)
from .random_kernels import RESULTS_PER_UNIT, Program
from .tolerance import mismatches

__all__ = [
    "ENV_EXAMPLES",
    "ENV_SHRINK_S",
    "ShrinkBudget",
    "check_program",
    "example_count",
    "generated_source",
]

#: Raises the number of examples the conformance module tries (default 20).
ENV_EXAMPLES = "RUDA_DIFFERENTIAL_EXAMPLES"
#: Seconds Hypothesis may spend shrinking a failure (see :class:`ShrinkBudget`).
ENV_SHRINK_S = "RUDA_DIFFERENTIAL_SHRINK_S"


def example_count(default: int = 20) -> int:
    """Examples per device: ``RUDA_DIFFERENTIAL_EXAMPLES``, else ``default``.

    :raises SettingError: it is not a whole number of at least 1.
    """
    return count_setting(ENV_EXAMPLES, default, "random kernels to run on each device")


def generated_source(
    client: ComputeClient, definition: KernelDefinition, mode: ExecutionMode = ExecutionMode.CHECKED
) -> str:
    """The source ``client``'s compiler generates for a launch of ``definition`` in ``mode``."""
    server = client.server
    lowered = lower_bounds(definition, mode)
    return server.compiler.compile(lowered, server.compile_options(), mode).source


class ShrinkBudget:
    """Bounds the time Hypothesis spends shrinking a failure on a slow-compiling device.

    Outcomes are remembered per program, by the SHA-256 of its text (ten thousand programs take
    about 2 MiB so, where their text took about 65 MiB); once ``seconds`` have passed since the
    first failure, programs not run before are rejected (``hypothesis.reject``) instead of
    compiled, so the shrinker settles on the smallest failure found so far and replays it from
    memory.
    ``RUDA_DIFFERENTIAL_SHRINK_S`` overrides the default of 60 seconds.
    """

    def __init__(self, seconds: float | None = None) -> None:
        what = "shrinking a failure"
        self.seconds = seconds if seconds is not None else seconds_setting(ENV_SHRINK_S, 60.0, what)
        self.first_failure: float | None = None
        self._outcomes: dict[bytes, AssertionError | None] = {}

    def check(self, client: ComputeClient, reference: ComputeClient, program: Program) -> None:
        """:func:`check_program`, remembered; may call ``hypothesis.reject()``."""
        key = hashlib.sha256(f"{client.device}|{program!r}".encode()).digest()
        if key not in self._outcomes:
            if (
                self.first_failure is not None
                and time.monotonic() - self.first_failure > self.seconds
            ):
                reject()
            try:
                check_program(client, reference, program)
                self._outcomes[key] = None
            except AssertionError as exc:
                self._outcomes[key] = exc
                if self.first_failure is None:
                    self.first_failure = time.monotonic()
        outcome = self._outcomes[key]
        if outcome is not None:
            raise outcome


def check_program(client: ComputeClient, reference: ComputeClient, program: Program) -> None:
    """Run ``program`` on ``client`` and ``reference`` and require equal outputs, after each
    of its launches (a second one with other scalars where it has one). A program in bounds
    runs on ``client`` through ``launch_unchecked`` (which ``BoundsCheckMode`` decides),
    Checked elsewhere and on ``reference``.

    :raises AssertionError: naming the first differing output, with the program (its launch,
        IR dump, inputs and scalars) and the device's generated source.
    """
    mode = BoundsCheckMode.current().execution_mode if program.in_bounds else ExecutionMode.CHECKED
    launches = [program.scalars, *([program.relaunch] if program.relaunch is not None else [])]
    for n, scalars in enumerate(launches, start=1):
        want = program.run(reference, scalars=scalars)
        got = program.run(client, program.in_bounds, scalars)
        _compare(client, program, got, want, f"launch {n} of {len(launches)}", mode)


def _compare(
    client: ComputeClient,
    program: Program,
    got: list[np.ndarray],
    want: list[np.ndarray],
    launch: str,
    mode: ExecutionMode,
) -> None:
    """Require the outputs ``got`` after ``launch`` on ``client`` equal to ``want``, the
    reference's."""
    defn = program.definition
    params: list[Param] = list(defn.array_params)
    for k in program.outputs:
        bad = np.nonzero(mismatches(got[k], want[k], params[k].elem))[0]
        if len(bad):
            first = int(bad[0])
            unit = first // RESULTS_PER_UNIT if params[k].name.startswith("out_") else "?"
            raise AssertionError(
                f"{client.device} differs from the reference in {params[k].name} after "
                f"{launch}: {len(bad)} of {len(got[k])} values, first at [{first}]: got "
                f"{got[k][first]!r}, want {want[k][first]!r} (unit {unit})\n"
                f"--- program (launch, IR, inputs, scalars) ---\n{program!r}\n"
                f"--- source generated for {client.device} ({mode.value}) ---\n"
                + generated_source(client, defn, mode)
            )

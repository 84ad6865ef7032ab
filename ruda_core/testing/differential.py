"""Differential fuzzing: random well-typed kernels (:mod:`.random_kernels`) run on a device
and on the NumPy reference device, whose results must agree exactly.

:func:`check_program` runs a :class:`~.random_kernels.Program` on both devices (on the device
unchecked where every access stays in bounds) and raises an ``AssertionError`` naming the first
differing output, with the kernel's IR dump and the device's generated source (the server also
writes it to ``RUDA_DUMP_SOURCE`` when that is set); Hypothesis shrinks a failing program to a
minimal kernel, within the time :class:`ShrinkBudget` allows. With ``RUDA_FUZZ_FAILURES`` set,
each failing program is written to that folder as it fails (:func:`keep_failure`), so that a
run cut short before its report still leaves them; :func:`replay_failure` runs one again.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import time
import warnings
from pathlib import Path

import numpy as np
from hypothesis import reject

from ..errors import RudaWarning
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
    "ENV_FAILURES",
    "ENV_SHRINK_S",
    "ShrinkBudget",
    "check_program",
    "example_count",
    "generated_source",
    "keep_failure",
    "replay_failure",
]

#: Raises the number of examples the conformance module tries (default 20).
ENV_EXAMPLES = "RUDA_DIFFERENTIAL_EXAMPLES"
#: Seconds Hypothesis may spend shrinking a failure (see :class:`ShrinkBudget`).
ENV_SHRINK_S = "RUDA_DIFFERENTIAL_SHRINK_S"
#: A folder each failing program is written to as it fails (see :func:`keep_failure`).
ENV_FAILURES = "RUDA_FUZZ_FAILURES"


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
        self._outcomes: dict[str, AssertionError | None] = {}
        #: where failing programs are written (``RUDA_FUZZ_FAILURES``); None: nowhere
        self.folder = os.environ.get(ENV_FAILURES) or None

    def check(self, client: ComputeClient, reference: ComputeClient, program: Program) -> None:
        """:func:`check_program`, remembered; may call ``hypothesis.reject()``. A program that
        fails (by a difference or an error) is written to :attr:`folder` first."""
        key = _program_key(client, program)
        if key not in self._outcomes:
            if (
                self.first_failure is not None
                and time.monotonic() - self.first_failure > self.seconds
            ):
                reject()
            try:
                check_program(client, reference, program)
                self._outcomes[key] = None
            except Exception as exc:
                self._keep(client, program, exc)
                if not isinstance(exc, AssertionError):
                    raise
                self._outcomes[key] = exc
                if self.first_failure is None:
                    self.first_failure = time.monotonic()
        outcome = self._outcomes[key]
        if outcome is not None:
            raise outcome

    def _keep(self, client: ComputeClient, program: Program, error: Exception) -> None:
        """:func:`keep_failure` into :attr:`folder`; a folder that cannot hold it is warned
        about once, and the test goes on without it."""
        if self.folder is None:
            return
        try:
            keep_failure(self.folder, client, program, error)
        except OSError as exc:
            warnings.warn(
                f"{ENV_FAILURES}={self.folder!r}: cannot write failing programs there "
                f"({exc.strerror or exc}); the test goes on without them. Name a folder you "
                "can write",
                RudaWarning,
                stacklevel=2,
            )
            self.folder = None


def _program_key(client: ComputeClient, program: Program) -> str:
    """The SHA-256 of ``program``'s text on ``client``'s device, in hex: its identity."""
    return hashlib.sha256(f"{client.device}|{program!r}".encode()).hexdigest()


def keep_failure(
    folder: str | Path, client: ComputeClient, program: Program, error: Exception
) -> Path:
    """Write ``program``, pickled, and what it failed with (its message: the differing output,
    the IR and the generated source, see :func:`check_program`) into ``folder`` (made where
    missing), as ``<device>-<digest>.pickle`` and ``.txt``; returns the pickle's path.

    :raises OSError: the folder cannot be made or written.
    """
    digest = _program_key(client, program)[:16]
    base = Path(folder) / f"{str(client.device).replace(':', '')}-{digest}"
    base.parent.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".txt").write_text(f"{type(error).__name__}: {error}\n")
    path = base.with_suffix(".pickle")
    path.write_bytes(pickle.dumps(program))
    return path


def replay_failure(
    path: str | Path, client: ComputeClient, reference: ComputeClient | None = None
) -> None:
    """Run the program :func:`keep_failure` wrote to ``path`` on ``client`` against
    ``reference`` (the reference device by default), as :func:`check_program` does. The file is
    a pickle: replay only files you wrote.

    :raises AssertionError: the outputs still differ (or whatever error the program raises).
    """
    from ..plugins import client as open_client

    program = pickle.loads(Path(path).read_bytes())
    if not isinstance(program, Program):
        raise TypeError(f"{path} holds a {type(program).__name__}, not a fuzzer program")
    check_program(client, reference if reference is not None else open_client(), program)


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

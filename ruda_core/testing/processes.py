"""Running ruda in other processes, for what must hold across them: :func:`fingerprints_elsewhere`
asks a new interpreter for device fingerprints, :func:`run_script` runs a script to its exit,
:func:`in_forked_child` runs a function in a child made by ``os.fork()`` and says how it ended,
even when it hangs.

Children open devices by name through ``ruda_core.client``; nothing here knows a backend.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .runner import TIMEOUT_S

__all__ = ["ChildOutcome", "fingerprints_elsewhere", "in_forked_child", "run_script"]

_FINGERPRINTS = """
import json, sys
import ruda_core
print(json.dumps({d: ruda_core.client(d).properties_fingerprint() for d in sys.argv[1:]}))
"""


def fingerprints_elsewhere(
    devices: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``properties_fingerprint()`` of each of ``devices``, as a new Python process (this
    interpreter, this environment plus ``env``) computes it. Waits for the process.

    :raises RuntimeError: with the child's stderr when it fails.
    """
    child = subprocess.run(
        [sys.executable, "-c", _FINGERPRINTS, *devices],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(f"the fingerprint process failed ({child.returncode}):\n{child.stderr}")
    result: dict[str, str] = json.loads(child.stdout.splitlines()[-1])
    return result


def run_script(source: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the Python ``source``, written into ``folder`` (kernels need a source file), in a
    new interpreter (this one, this environment) with ``args`` as its ``sys.argv[1:]``, to its
    exit; its output is captured as text."""
    script = folder / "script.py"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """How a function ended in a forked child: its ``value`` (``repr``), or the ``error`` it
    raised (type name, message and traceback), or ``hung`` past the deadline."""

    value: str | None = None
    error: tuple[str, str, str] | None = None
    hung: bool = False

    def describe(self) -> str:
        if self.hung:
            return "the child hung"
        if self.error is not None:
            return f"the child raised {self.error[0]}: {self.error[1]}\n{self.error[2]}"
        return f"the child returned {self.value}"


def in_forked_child(fn: Callable[[], object], timeout_s: float = 30.0) -> ChildOutcome:
    """Run ``fn`` in a child forked from this process and wait at most ``timeout_s`` seconds for
    it to end (a child still running then is killed). The child never returns into the
    caller's code: it leaves with ``os._exit`` whatever ``fn`` does. POSIX only."""
    reader, writer = os.pipe()
    with warnings.catch_warnings():
        # JAX, imported by another test of the process, warns at every fork about its own
        # threads, which the child never uses
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        pid = os.fork()
    if pid == 0:  # the child
        os.close(reader)
        try:
            result: tuple[str, object] = ("value", repr(fn()))
        except BaseException as exc:  # reported to the parent, whatever it is
            result = ("error", (type(exc).__name__, str(exc), traceback.format_exc()))
        os.write(writer, pickle.dumps(result))
        os._exit(0)
    os.close(writer)
    try:
        return _wait_for_child(pid, reader, timeout_s)
    finally:
        os.close(reader)


def _wait_for_child(pid: int, reader: int, timeout_s: float) -> ChildOutcome:
    deadline = time.monotonic() + timeout_s
    data = b""
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([reader], [], [], max(left, 0))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return ChildOutcome(hung=True)
        chunk = os.read(reader, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    if not data:
        return ChildOutcome(error=("SystemExit", "the child ended without a result", ""))
    kind, payload = pickle.loads(data)
    if kind == "value":
        return ChildOutcome(value=payload)
    return ChildOutcome(error=payload)

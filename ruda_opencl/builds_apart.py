"""``ApartBuilder``: OpenCL builds in a child process, for a runtime whose compiler may end the
process that builds.

Intel's CPU runtime aborts in its vectoriser on some kernels, every time: a loop whose turns
differ between work-items (inside ``if ABSOLUTE_POS == 0``, say) that stores a value carried
from the turn before (intel-opencl-rt 2026.2.0: ``vplan-vec``, then ``SIGABRT``, or
``SIGALRM`` from LLVM's crash handler). Built in the user's process, such a kernel ends the
program without an error. So the driver of such a device sends each build to a child, which
answers with the program's binary or the build's error; the driver loads the binary (tens of
milliseconds, against the build's tenths of a second to seconds). A build that ends the child
raises :class:`CompilationError` naming how it ended and the compiler's last words, and the
next build starts a new child.

One child per builder (a driver's), started at its first build (about half a second: it
imports PyOpenCL and lists the devices, whose order is stable), and anew in a forked process;
builds from several threads take turns. The child inherits the environment and this process's
module search path, so the settings made before the first OpenCL call
(:mod:`ruda_opencl.intel_cpu`) hold there too; it writes its answers on a copy of its standard
output, whose descriptor 1 goes to standard error, so that nothing a library prints mixes with
them, and its standard error goes to a file read only when it ends. A child whose parent is
gone sees its input end and exits. A build interrupted while it waits for the child (Ctrl-C, a
signal handler that raises) stops the child, so that its late answer is never taken for the
next build's.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Sequence
from typing import IO, Any

from ruda_core.runtime import CompilationError

__all__ = ["BUILD_TIMEOUT_S", "ApartBuilder"]

#: Seconds a build may take in the child before it is ended (Intel's largest ruda kernels
#: build in under ten on a 2-core box).
BUILD_TIMEOUT_S = 600.0
_LENGTH = struct.Struct("<Q")


def _send(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    """The next message, or None where the stream ends first (the writer has ended)."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    size = _LENGTH.unpack(head)[0]
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


class ApartBuilder:
    """Builds programs for devices of :func:`~ruda_opencl.driver.all_devices` in a child
    process (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._pid = os.getpid()
        self._inherited: subprocess.Popen[bytes] | None = None
        #: stops the running child: at its end, or when the builder goes
        self._stopper: weakref.finalize[Any, Any] | None = None

    def build(
        self,
        index: int,
        source: str,
        options: Sequence[str],
        name: str,
        where: tuple[str | None, int | None],
    ) -> bytes:
        """The binary of ``source`` built with ``options`` for device ``index``.

        :raises CompilationError: as :func:`~ruda_opencl.driver.build_program` raises it; or,
            where the build ends the child or outlasts :data:`BUILD_TIMEOUT_S`, naming that and
            the compiler's last lines of output.
        """
        with self._lock:
            child = self._running()
            assert child.stdin is not None and child.stdout is not None
            timed_out = False
            try:
                _send(child.stdin, (index, source, tuple(options), name, where))
                ready, _, _ = select.select([child.stdout], [], [], BUILD_TIMEOUT_S)
                timed_out = not ready
                answer = None if timed_out else _receive(child.stdout)
            except OSError:  # the child ended before it read the request
                answer = None
            except BaseException:  # interrupted (Ctrl-C, a time limit's signal) mid-exchange
                self._abandon()
                raise
            if answer is None:
                raise CompilationError(
                    f"kernel {name} did not build: {self._ended(timed_out)}",
                    file=where[0],
                    line=where[1],
                )
        kind, payload = answer
        if kind == "error":
            raise CompilationError(payload, file=where[0], line=where[1])
        return bytes(payload)

    def _running(self) -> subprocess.Popen[bytes]:
        """The child, started where there is none, it has ended, or this process is a fork
        (whose parent's child stays the parent's: it is kept, untouched)."""
        if self._pid != os.getpid():
            self._inherited, self._child = self._child, None
            if self._stopper is not None:  # the parent's child: the parent stops it
                self._stopper.detach()
        if self._child is None or self._child.poll() is not None:
            self._log = tempfile.TemporaryFile()  # noqa: SIM115  # closed with the child
            # the child imports ruda_opencl from where this process did
            path = os.pathsep.join(p for p in sys.path if p)
            self._child = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                env={**os.environ, "PYTHONPATH": path},
            )
            self._pid = os.getpid()
            self._stopper = weakref.finalize(self, _stop, self._child, self._log)
        return self._child

    def _abandon(self) -> None:
        """Stop the child in the middle of a build: the answer it may still send, or the rest
        of a request it may never get whole, would otherwise be taken by the next build as its
        own (the binary of another kernel, launched in its place)."""
        child, stop = self._child, self._stopper
        self._child = None
        if child is not None:
            child.kill()
        if stop is not None:
            stop()

    def _ended(self, timed_out: bool) -> str:
        """How the child ended (ending it first where the build ``timed_out``) and its last
        lines of output."""
        child, log, stop = self._child, self._log, self._stopper
        assert child is not None and log is not None and stop is not None
        self._child = None
        if timed_out:
            child.kill()
            child.wait()
            how = f"the OpenCL compiler did not finish within {BUILD_TIMEOUT_S:.0f} s"
        else:
            code = child.wait()
            cause = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            how = f"the OpenCL compiler ended the process that built it ({cause})"
        log.seek(0)
        lines = [line for line in log.read().decode(errors="replace").splitlines() if line]
        stop()
        last = "\n".join(lines[-12:])
        return (
            f"{how}: a fault of the driver's compiler (ruda builds for this driver in a child "
            "process, so this program goes on). Write the kernel another way (a loop of the same "
            "count in every unit, say) or run it on another device"
            + (f"\n--- the compiler's last output ---\n{last}" if last else "")
        )


def _stop(child: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """End ``child`` where it runs (it exits at the end of its input) and close its pipes and
    its log."""
    for stream in (child.stdin, child.stdout, log):
        if stream is not None:
            with contextlib.suppress(OSError):  # a request the child never read: it has ended
                stream.close()
    try:
        child.wait(5)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _serve() -> None:
    """The child: build what arrives on standard input, answer on standard output."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import pyopencl as cl

    from .driver import all_devices, build_program

    contexts: dict[int, Any] = {}
    while (request := _receive(sys.stdin.buffer)) is not None:
        index, source, options, name, where = request
        device = all_devices()[index]
        if index not in contexts:
            contexts[index] = cl.Context([device])
        try:
            program = build_program(contexts[index], device, source, options, name, where)
        except CompilationError as exc:
            _send(answers, ("error", str(exc)))
        else:
            _send(answers, ("binary", bytes(program.binaries[0])))


if __name__ == "__main__":
    _serve()

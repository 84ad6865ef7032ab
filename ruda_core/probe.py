"""Device probes: a device counts as usable only after tiny kernels have built and run on it.

A driver can list a device whose compiler cannot build for this machine (PoCL on a CPU newer
than its LLVM, say); listing it as available would only move the failure to the user's first
sync. :func:`run` opens the device, launches the kernels of :mod:`ruda_core.probe_kernel`
in turn (a tiny one; the one of places, whose barriers cut a loop into regions, that a
compiler can build and still get wrong; the wide one where the device has u64, last, since a
compiler that cannot build it may take a minute to fail), reads the results back and checks
them; the first failure becomes the device's one-line reason.

Verdicts persist in ``DiskCache(CacheKind.PROBES)`` keyed by the backend, the device, the driver's
identity of it (``BackendInfo.identify``: driver and device versions, read without opening the
device), the values of the variables the driver reads when it opens one (``BackendInfo.settings``)
and of the core's (``RUDA_MEMORY_LIMIT``), and the digest of ruda's code (its version included);
a verdict that a setting ruda cannot use decided is not stored. So a warm start reads a file
instead of building a kernel. Such a device is probed once, in a child process (those of
one enumeration side by side, as many at once as the machine has cores), so that a
driver that crashes or leaves its compiler broken (PoCL 3 aborts the process at exit after a
failed build) cannot take the caller down: a child that dies without a verdict makes the
device unusable with the way it died, and one that outlives the time limit
(:func:`probe_timeout`) is ended, naming the step it was in. A backend without ``identify`` is
probed in the calling process, in every process. ``ruda devices --reprobe``
(:func:`forget_verdicts`) drops every stored verdict.

This module runs kernels and keeps verdicts; it never looks a backend up. The child process
enters through :func:`ruda_core.plugins.probe_child`, which finds the device again through the
backend's entry point, runs :func:`run` with :func:`report_step` and prints the verdict with
:func:`report`.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import IO, cast

import numpy as np

from .errors import SettingError
from .runtime.backend import Runtime
from .runtime.cache import CacheKind, DiskCache, EntryOrigin, code_fingerprint, digest
from .runtime.cache_inventory import clear
from .runtime.memory.management import LIMIT_VARIABLE
from .runtime.settings import seconds_setting

__all__ = [
    "PROBE_TIMEOUT_S",
    "Request",
    "Verdict",
    "forget_verdicts",
    "probe_timeout",
    "report",
    "report_step",
    "run",
    "verdicts",
]

#: How long a device's probe may take (``RUDA_PROBE_TIMEOUT_S`` sets another limit): in its
#: child process, from the start to the verdict; in the calling process, per kernel read back.
#: A working driver builds and runs the three tiny kernels in a few seconds; PoCL 3 on a CPU its
#: LLVM does not know can spend one to two minutes on the wide one before it crashes (PoCL 3.0
#: gets the kernel of places wrong before it).
PROBE_TIMEOUT_S = 30.0
_TIMEOUT_VARIABLE = "RUDA_PROBE_TIMEOUT_S"
#: Set in a probe's child process: a device its driver looks up while it opens (a driver that
#: asks for the reference device, say) is probed there, in the child, not in a grandchild
_CHILD_VARIABLE = "RUDA_PROBE_CHILD"
_LENGTH = 64
#: the cube of the kernel of places (which PoCL 3.0 and Intel's CPU runtime got wrong at 4
#: units) and the values it places: three whole blocks and a partial one
_PLACING_UNITS = 4
_PLACES = 7 * _PLACING_UNITS - 1
_PLACE_VALUES = np.arange(_PLACES, dtype=np.uint32)
#: the probe's steps, as reasons name them
_FIRST, _WIDE = "the probe kernel", "the probe kernel on lines of eight u64"
_PLACING = "the probe kernel placing values through shared memory"
#: what the child process runs: the entry point that finds the device and calls :func:`run`
_CHILD_ENTRY = "from ruda_core.plugins import probe_child; probe_child({argv!r})"
#: How often the children of :func:`_run_apart` are looked at, in seconds
_POLL_S = 0.02


#: The core's settings read when a device opens, part of every verdict's key beside the
#: driver's: a memory limit too small for the probe's buffers makes every device unusable.
_OPENING_SETTINGS = (LIMIT_VARIABLE,)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a device built and ran the probe kernel, and if not, why (one line).
    ``lasting`` is False where a setting ruda cannot use decided it, not the device: such a
    verdict is never stored, so the device is probed again once the setting is mended."""

    usable: bool
    reason: str = ""
    lasting: bool = True


def _expected() -> np.ndarray:
    return np.arange(_LENGTH, dtype=np.uint32) * 3 + 1


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"


def run(
    runtime: type[Runtime], device: Hashable, begin: Callable[[str], None] = lambda step: None
) -> Verdict:
    """Open ``device`` and run the probe kernels on it; ``begin(step)`` is called as each step
    begins (the child reports it, for a verdict on a crash)."""
    from .ir import Elem
    from .lang import ArrayArg
    from .probe_kernel import ruda_probe, ruda_probe_places, ruda_probe_wide
    from .runtime import RudaCount, RudaDim

    step = _FIRST
    begin(step)
    limit = probe_timeout()
    try:
        client = runtime.client(device)
        dim = max(1, min(32, client.properties().max_units_per_ruda))
        out = client.empty(_LENGTH * 4)
        count = RudaCount(-(-_LENGTH // dim))
        ruda_probe.launch(client, count, RudaDim(dim), ArrayArg(out, _LENGTH), 3.0)
        got = np.frombuffer(client.read_async([out]).result(limit)[0], np.uint32)
        places = wide = None
        if np.array_equal(got, _expected()):
            step = _PLACING
            begin(step)
            units = min(_PLACING_UNITS, dim)
            out = client.create_from_slice(np.zeros(_PLACES, np.uint32))
            ruda_probe_places.launch(
                client, RudaCount(2), RudaDim(units), ArrayArg(out, _PLACES), UNITS=units
            )
            places = np.frombuffer(client.read_async([out]).result(limit)[0], np.uint32)
        passed = places is not None and np.array_equal(places, _PLACE_VALUES)
        if passed and client.features().supports(Elem.U64):
            step = _WIDE
            begin(step)
            x = client.create_from_slice(np.arange(_LENGTH, dtype=np.uint64))
            out = client.empty(_LENGTH * 8)
            lines = _LENGTH // 8
            wide_dim = RudaDim(max(1, min(lines, dim)))
            wide_count = RudaCount(-(-lines // wide_dim.x))
            ruda_probe_wide.launch(
                client, wide_count, wide_dim, ArrayArg(x, _LENGTH), ArrayArg(out, _LENGTH)
            )
            wide = np.frombuffer(client.read_async([out]).result(limit)[0], np.uint64)
    except TimeoutError:
        return Verdict(False, f"{step} did not finish within {limit:g} s")
    except Exception as exc:  # whatever the driver raises is the reason it is unusable
        reason = _one_line(exc)
        lasting = not isinstance(exc, SettingError)
        return Verdict(False, reason if step == _FIRST else f"{step}: {reason}", lasting)
    for written, expected, what in (
        (got, _expected(), _FIRST),
        (places, _PLACE_VALUES, _PLACING),
        (wide, _expected().astype(np.uint64), _WIDE),
    ):
        if written is not None and not np.array_equal(written, expected):
            wrong = int(np.count_nonzero(written != expected))
            return Verdict(False, f"{what} ran but wrote {wrong} of {expected.size} values wrong")
    return Verdict(True)


class _Child:
    """:func:`run` in a child process, which finds the device again through the backend's
    entry point. Its output is read as it comes (:meth:`read`, called when ``selector`` finds
    some), so that a child that writes much never waits on a parent busy with another."""

    def __init__(
        self, backend: str, device: Hashable, limit: float, selector: selectors.BaseSelector
    ) -> None:
        path = os.pathsep.join(p for p in sys.path if p)
        env = {**os.environ, "PYTHONPATH": path, _CHILD_VARIABLE: "1"}
        code = _CHILD_ENTRY.format(argv=[backend, str(device)])
        self.limit = limit
        self.deadline = time.monotonic() + limit
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.selector = selector
        self.output: dict[IO[bytes], bytearray] = {}
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
                self.output[pipe] = bytearray()
                selector.register(pipe, selectors.EVENT_READ, self)

    def read(self, pipe: IO[bytes]) -> bool:
        """Take what the child wrote to ``pipe`` (closed at its end); whether some was there."""
        try:
            data = os.read(pipe.fileno(), 1 << 16)
        except BlockingIOError:  # nothing now
            return False
        if data:
            self.output[pipe] += data
            return True
        self.selector.unregister(pipe)
        pipe.close()
        return False

    def verdict(self) -> Verdict | None:
        """The child's verdict once it has ended and closed its output, or outlived its time
        limit (it is then ended); None while it runs. A child that dies before its verdict
        gives the way it died as the reason."""
        code = self.process.poll()
        reading = any(not pipe.closed for pipe in self.output)
        if (code is None or reading) and time.monotonic() < self.deadline:
            return None
        self.end()
        out, err = (data.decode(errors="replace") for data in self.output.values())
        step = _child_said(out)
        if isinstance(step, Verdict):
            return step
        if code is None:
            return Verdict(
                False,
                f"the probe process did not finish within {self.limit:g} s, in {step} (a "
                f"slower machine may set {_TIMEOUT_VARIABLE} higher and run `ruda devices "
                "--reprobe`)",
            )
        if code < 0:
            try:
                how = f"died of {signal.Signals(-code).name}"
            except ValueError:  # a signal Python has no name for
                how = f"died of signal {-code}"
        else:
            how = f"exited with status {code}"
        said = [line.strip() for line in err.splitlines() if "error" in line.lower()]
        return Verdict(False, f"the probe process {how} in {step}{f': {said[-1]}' if said else ''}")

    def end(self) -> None:
        """Kill the child if it still runs and reap it; take what is left of its output, and
        close it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in self.output:
            while not pipe.closed and self.read(pipe):
                pass
            if not pipe.closed:
                self.selector.unregister(pipe)
                pipe.close()


def _run_apart(requests: Sequence[tuple[str, Hashable]]) -> list[Verdict]:
    """The verdicts of ``(backend, device)`` pairs, each probed in a child process
    (:class:`_Child`): side by side, as many at once as the machine has cores, each within
    the time limit from its own start. Children still running when the caller is interrupted
    are ended."""
    limit = probe_timeout()
    slots = os.cpu_count() or 1
    waiting = list(enumerate(requests))
    running: dict[int, _Child] = {}
    found: dict[int, Verdict] = {}
    with selectors.DefaultSelector() as selector:
        try:
            while waiting or running:
                while waiting and len(running) < slots:
                    k, (backend, device) = waiting.pop(0)
                    running[k] = _Child(backend, device, limit, selector)
                for key, _ in selector.select(_POLL_S):
                    cast(_Child, key.data).read(cast(IO[bytes], key.fileobj))
                for k, child in list(running.items()):
                    verdict = child.verdict()
                    if verdict is not None:
                        found[k] = verdict
                        del running[k]
        finally:
            for child in running.values():
                child.end()
    return [found[k] for k in range(len(requests))]


def _child_said(stdout: str) -> Verdict | str:
    """The verdict a probe's child printed, else the last step it began."""
    step = "loading the backend"
    for line in stdout.splitlines():  # each line is printed before any crash
        try:
            entry = json.loads(line) if line.startswith("{") else {}
        except ValueError:  # a driver's own output
            continue
        if "usable" in entry:
            return Verdict(bool(entry["usable"]), str(entry["reason"]), entry.get("lasting", True))
        step = str(entry.get("step", step))
    return step


def probe_timeout() -> float:
    """The probe's time limit in seconds: ``RUDA_PROBE_TIMEOUT_S``, else
    :data:`PROBE_TIMEOUT_S`.

    :raises SettingError: for a variable that is not a positive number of seconds.
    """
    return seconds_setting(_TIMEOUT_VARIABLE, PROBE_TIMEOUT_S, "a device's probe")


def report(found: Verdict) -> None:
    """Print ``found`` as the one JSON line the parent of a probe's child process reads."""
    said = {"usable": found.usable, "reason": found.reason, "lasting": found.lasting}
    print(json.dumps(said), flush=True)


def _key(backend: str, device: Hashable, identity: str, settings: Sequence[str]) -> str:
    values = [(name, os.environ.get(name, "").strip()) for name in (*_OPENING_SETTINGS, *settings)]
    return digest("probe", backend, str(device), identity, values, code_fingerprint("ruda_core"))


def identity_of(device: Hashable, identify: Callable[[Hashable], str] | None) -> str | None:
    """The driver's identity of ``device`` (``BackendInfo.identify``); None where the driver
    gives none or its ``identify`` raises."""
    try:
        return identify(device) if identify is not None else None
    except Exception:  # whatever the driver raises: no identity, the device is probed anew
        return None


@dataclass(frozen=True, slots=True)
class Request:
    """One device to give a verdict on: its backend's name and runtime, the device, the
    driver's identity of it (:func:`identity_of`) and the environment variables the driver
    reads when it opens one (``BackendInfo.settings``)."""

    backend: str
    runtime: type[Runtime]
    device: Hashable
    identity: str | None
    settings: Sequence[str] = ()


def verdicts(requests: Sequence[Request]) -> list[Verdict]:
    """Each device's verdict, in order: stored for its identity and the values of its
    driver's settings and of the core's read when a device opens (the memory limit), else
    probed now (and stored where it is lasting; never where the identity is None). The devices
    probed in child processes are probed side by side (:func:`_run_apart`); those without an
    identity, in this process, one after another. Processes sharing the cache take turns to
    probe a device (:meth:`DiskCache.turn`): those that start together probe it once."""
    found: list[Verdict | None] = [None] * len(requests)
    cache = DiskCache(CacheKind.PROBES)
    keys: dict[int, str] = {}
    for k, r in enumerate(requests):
        if r.identity is not None:
            keys[k] = _key(r.backend, r.device, r.identity, r.settings)
            found[k] = _stored(cache, keys[k])
    with contextlib.ExitStack() as turns:
        missing = {k: key for k, key in keys.items() if found[k] is None}
        if missing and os.environ.get(_CHILD_VARIABLE) != "1":
            # one after another in the order of their keys, so that no two processes wait for
            # each other, each waited for at most as long as probing them all may take
            wait = probe_timeout() * len(missing)
            for key in sorted(missing.values()):
                turns.enter_context(cache.turn(key, wait))
            for k, key in missing.items():  # a process that held a turn before may have probed
                found[k] = _stored(cache, key)
        _probe(requests, keys, found, cache)
    return [cast(Verdict, verdict) for verdict in found]


def _probe(
    requests: Sequence[Request],
    keys: dict[int, str],
    found: list[Verdict | None],
    cache: DiskCache,
) -> None:
    """Probe the devices of ``requests`` without a verdict in ``found``, filling it; store the
    lasting verdicts of those with a key in ``keys``."""
    fresh = [k for k in range(len(requests)) if found[k] is None]
    apart = [k for k in fresh if k in keys] if os.environ.get(_CHILD_VARIABLE) != "1" else []
    ran = _run_apart([(requests[k].backend, requests[k].device) for k in apart])
    for k, verdict in zip(apart, ran, strict=True):
        found[k] = verdict
    for k in fresh:
        r = requests[k]
        verdict = found[k] = found[k] or run(r.runtime, r.device)
        if k in keys and verdict.lasting:
            record = json.dumps({"usable": verdict.usable, "reason": verdict.reason}).encode()
            cache.put(keys[k], record, EntryOrigin(r.backend, str(r.device), "probe verdict"))


def _stored(cache: DiskCache, key: str) -> Verdict | None:
    """The verdict stored under ``key``; None where there is none or it cannot be read (it
    is probed again and overwritten)."""
    stored = cache.get(key)
    if stored is None:
        return None
    try:
        entry = json.loads(stored)
        return Verdict(bool(entry["usable"]), str(entry["reason"]))
    except (ValueError, KeyError, TypeError):
        return None


def forget_verdicts() -> None:
    """Drop every stored verdict; the next enumeration probes every device again."""
    clear([CacheKind.PROBES])


def report_step(step: str) -> None:
    """Print the step :func:`run` begins, in a probe's child process: the reason given if the
    child dies in it."""
    print(json.dumps({"step": step}), flush=True)

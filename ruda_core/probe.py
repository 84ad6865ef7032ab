"""Device probes: a device counts as usable only after a tiny kernel has built and run on it.

A driver can list a device whose compiler cannot build for this machine (PoCL on a CPU newer
than its LLVM, say); listing it as available would only move the failure to the user's first
sync. :func:`verdict` opens the device, launches the kernel of :mod:`ruda_core.probe_kernel`,
reads the result back and checks it; any failure becomes the device's one-line reason.

Verdicts persist in ``DiskCache(CacheKind.PROBES)`` keyed by the backend, the device, the driver's
identity of it (``BackendInfo.identify``: driver and device versions, read without opening the
device), ruda's version and the digest of ruda's code, so a warm start reads a file instead of
building a kernel. A backend without ``identify`` is probed in every process. ``ruda devices
--reprobe`` (:func:`forget_verdicts`) drops every stored verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from .runtime.backend import Runtime
from .runtime.cache import CacheKind, DiskCache, EntryOrigin, code_fingerprint, digest
from .runtime.cache_inventory import clear

__all__ = ["PROBE_TIMEOUT_S", "Verdict", "forget_verdicts", "verdict"]

#: How long the probe kernel may take to build, run and be read back.
PROBE_TIMEOUT_S = 120.0
_LENGTH = 64


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a device built and ran the probe kernel, and if not, why (one line)."""

    usable: bool
    reason: str = ""


def _expected() -> np.ndarray:
    return np.arange(_LENGTH, dtype=np.uint32) * 3 + 1


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"


def _run(runtime: type[Runtime], device: Hashable) -> Verdict:
    from .lang import ArrayArg
    from .probe_kernel import ruda_probe
    from .runtime import RudaCount, RudaDim

    try:
        client = runtime.client(device)
        dim = max(1, min(32, client.properties().max_units_per_ruda))
        out = client.empty(_LENGTH * 4)
        count = RudaCount(-(-_LENGTH // dim))
        ruda_probe.launch(client, count, RudaDim(dim), ArrayArg(out, _LENGTH), 3.0)
        got = np.frombuffer(client.read_async([out]).result(PROBE_TIMEOUT_S)[0], np.uint32)
    except TimeoutError:
        return Verdict(False, f"the probe kernel did not finish within {PROBE_TIMEOUT_S:.0f} s")
    except Exception as exc:  # whatever the driver raises is the reason it is unusable
        return Verdict(False, _one_line(exc))
    if not np.array_equal(got, _expected()):
        wrong = int(np.count_nonzero(got != _expected()))
        return Verdict(False, f"the probe kernel ran but wrote {wrong} of {_LENGTH} values wrong")
    return Verdict(True)


def _key(backend: str, device: Hashable, identity: str) -> str:
    from . import __version__

    return digest(
        "probe", backend, str(device), identity, __version__, code_fingerprint("ruda_core")
    )


def verdict(
    backend: str,
    runtime: type[Runtime],
    device: Hashable,
    identify: Callable[[Hashable], str] | None,
) -> Verdict:
    """The device's verdict: stored for its identity, else probed now (and stored).

    An ``identify`` that raises counts as no identity: the device is probed and nothing is
    stored.
    """
    try:
        identity = identify(device) if identify is not None else None
    except Exception:
        identity = None
    if identity is None:
        return _run(runtime, device)
    cache = DiskCache(CacheKind.PROBES)
    key = _key(backend, device, identity)
    stored = cache.get(key)
    if stored is not None:
        try:
            entry = json.loads(stored)
            return Verdict(bool(entry["usable"]), str(entry["reason"]))
        except (ValueError, KeyError, TypeError):
            pass  # an unreadable entry is probed again and overwritten
    found = _run(runtime, device)
    record = json.dumps({"usable": found.usable, "reason": found.reason}).encode()
    cache.put(key, record, EntryOrigin(backend, str(device), "probe verdict"))
    return found


def forget_verdicts() -> None:
    """Drop every stored verdict; the next enumeration probes every device again."""
    clear([CacheKind.PROBES])

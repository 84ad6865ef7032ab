"""Driver plugins: the hook specification and the per-plugin-isolated loader.

A driver is a module named by an entry point of the group ``ruda.backends``. It implements
``ruda_backend_info`` (marked with :data:`hookimpl`) and returns a :class:`BackendInfo`. Loading
imports only these light modules; driver libraries (cupy, pyopencl) are imported by the
backend's ``probe``, which runs on first enumeration or ``client()`` lookup of that backend.

Each plugin is loaded and probed in its own ``try``: a broken or driverless plugin becomes a
:class:`BackendStatus` with a reason and never stops the others. ``RUDA_STRICT_PLUGINS=1``
makes any failure a :class:`PluginError`. ``RUDA_BACKENDS=cuda,opencl`` selects backends (the
NumPy reference backend ``cpu`` always loads); a selected backend that fails raises
:class:`BackendUnavailable` naming the variable.
"""

from __future__ import annotations

import enum
import importlib.metadata
import inspect
import os
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pluggy

from .runtime.backend import Runtime
from .runtime.client import ComputeClient
from .runtime.errors import BackendUnavailable, PluginError

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_API_VERSION",
    "BackendInfo",
    "BackendStatus",
    "NoDevice",
    "Status",
    "backends",
    "client",
    "conformance_xfails",
    "enumerate_all_devices",
    "hookimpl",
    "hookspec",
    "reload",
]

ENTRY_POINT_GROUP = "ruda.backends"
#: The plugin API this ruda implements; a plugin declaring another is refused.
PLUGIN_API_VERSION = 1
ALWAYS_LOADED = "cpu"

hookspec = pluggy.HookspecMarker("ruda")


class NoDevice(PluginError):
    """Raised by a probe whose driver works but finds no usable device; the message is the
    reason shown to users."""


hookimpl = pluggy.HookimplMarker("ruda")


@dataclass(frozen=True, slots=True)
class BackendInfo:
    """What a driver plugin declares about itself.

    :param name: backend id, lowercase: the prefix of its device strings (``"cuda"``).
    :param version: the backend's version string.
    :param api_version: the plugin API it implements (:data:`PLUGIN_API_VERSION`).
    :param runtime: the backend's :class:`Runtime` subclass; its ``device`` class must accept
        a device index as its only argument.
    :param probe: imports the driver and returns the devices present; raises
        ``ModuleNotFoundError`` when the driver library is not installed, :class:`NoDevice`
        when it finds no device, any other exception when it is unusable.
    :param install_hint: how to install what is missing, e.g. ``"pip install 'ruda[cuda]'"``.
    """

    name: str
    version: str
    api_version: int
    runtime: type[Runtime]
    probe: Callable[[], Sequence[Hashable]]
    install_hint: str = ""


class _Spec:
    """The hook specification of ruda driver plugins."""

    @hookspec(firstresult=True)
    def ruda_backend_info(self) -> BackendInfo | None:
        """Describe the backend this plugin provides: name, version, plugin API, Runtime class,
        probe.

        Called once per process, at the first enumeration or ``ruda_core.client()`` lookup, for
        every plugin in the ``ruda.backends`` group; each plugin's result is used on its own.
        Must not import a driver or open a device: do that in the probe, so that listing
        backends works on machines without drivers.

        :returns: the plugin's :class:`BackendInfo`, or None to offer nothing.
        """

    @hookspec
    def ruda_conformance_xfails(self) -> Mapping[str, str] | None:
        """Known failures of this backend in the conformance suite (``ruda_core.testing``).

        Called only by the conformance suite's pytest plugin, once per session, through
        :func:`conformance_xfails`; never while backends are loaded or probed. The overrides
        apply to the devices of this plugin's backend only. Each key is an ``fnmatch`` pattern
        over a test's conformance name, ``<module>::<test>[<params>]`` without the device, e.g.
        ``"test_plane::test_plane_reductions[f16]"`` or ``"test_ops_float::*[f64-*]"``; each
        value is the reason, which must say why the backend cannot conform (a driver bug and
        its tracker, a hardware limit). A matching test is marked ``xfail(strict=True)``: it
        still runs, and an override that starts passing fails the suite, so stale ones are
        removed. The suite's guard test fails for an empty reason or a pattern that matches no
        test. An implementation must not open a device or import a driver.

        :returns: ``{pattern: reason}``, or None for no overrides.
        """


class Status(enum.Enum):
    AVAILABLE = "available"
    NOT_INSTALLED = "not installed"
    IMPORT_FAILED = "import failed"
    NO_DEVICE = "no device"


@dataclass(frozen=True, slots=True)
class BackendStatus:
    """One backend as enumeration saw it."""

    name: str
    version: str
    status: Status
    reason: str = ""
    devices: tuple[Hashable, ...] = ()
    distribution: str = ""
    entry_point: str = ""
    runtime: type[Runtime] | None = field(default=None, repr=False)

    @property
    def available(self) -> bool:
        return self.status is Status.AVAILABLE


class _Registry:
    """Loaded plugins and probe results of this process."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.loaded: dict[str, BackendStatus | BackendInfo] | None = None
        self.probed: dict[str, BackendStatus] = {}
        #: backend name -> (distribution, entry point value) of each loaded plugin
        self.origins: dict[str, tuple[str, str]] = {}

    def load(self) -> dict[str, BackendStatus | BackendInfo]:
        with self.lock:
            if self.loaded is None:
                self.loaded = _load_entry_points(self.origins)
            return self.loaded

    def status(self, name: str) -> BackendStatus:
        with self.lock:
            if name not in self.probed:
                entry = self.load()[name]
                if isinstance(entry, BackendStatus):
                    self.probed[name] = entry
                else:
                    dist, value = self.origins.get(name, ("", ""))
                    self.probed[name] = replace(_probe(entry), distribution=dist, entry_point=value)
            return self.probed[name]


_registry = _Registry()


def _strict() -> bool:
    return os.environ.get("RUDA_STRICT_PLUGINS", "") not in ("", "0")


def _selected() -> set[str] | None:
    raw = os.environ.get("RUDA_BACKENDS", "").strip()
    if not raw:
        return None
    return {n.strip().lower() for n in raw.split(",") if n.strip()} | {ALWAYS_LOADED}


def _load_entry_points(
    origins: dict[str, tuple[str, str]],
) -> dict[str, BackendStatus | BackendInfo]:
    manager = pluggy.PluginManager("ruda")
    manager.add_hookspecs(_Spec)
    found: dict[str, BackendStatus | BackendInfo] = {}
    selected = _selected()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if selected is not None and ep.name not in selected:
            continue
        dist = ep.dist.name if ep.dist is not None else ""
        where = f"entry point {ep.name} = {ep.value} of distribution {dist or '?'}"
        try:
            module = ep.load()
            manager.register(module, name=f"{dist}:{ep.name}")
            manager.check_pending()
            info = _validate(manager.hook.ruda_backend_info.get_hookimpls()[-1].function(), ep.name)
        except Exception as exc:
            if _strict():
                raise PluginError(f"{where} failed to load: {exc}") from exc
            found[ep.name] = BackendStatus(
                ep.name,
                "",
                Status.IMPORT_FAILED,
                f"{where} failed to load: {type(exc).__name__}: {exc}",
                distribution=dist,
                entry_point=ep.value,
            )
            continue
        finally:
            for plugin in manager.get_plugins():
                manager.unregister(plugin)
        found[info.name] = info
        origins[info.name] = (dist, ep.value)
    if selected is not None:
        for name in selected - set(found):
            found[name] = BackendStatus(
                name,
                "",
                Status.NOT_INSTALLED,
                f"RUDA_BACKENDS names {name!r}, but no "
                f"installed distribution provides a {ENTRY_POINT_GROUP!r} entry point of that name",
            )
    return found


def _validate(info: object, entry_name: str) -> BackendInfo:
    if not isinstance(info, BackendInfo):
        raise PluginError(f"ruda_backend_info returned {info!r}, not a BackendInfo")
    if info.api_version != PLUGIN_API_VERSION:
        raise PluginError(
            f"backend {info.name!r} implements plugin API {info.api_version}; this ruda "
            f"implements {PLUGIN_API_VERSION}. Install matching versions"
        )
    if not (isinstance(info.runtime, type) and issubclass(info.runtime, Runtime)):
        raise PluginError(f"backend {info.name!r}: runtime {info.runtime!r} is not a Runtime")
    if inspect.isabstract(info.runtime):
        missing = ", ".join(sorted(info.runtime.__abstractmethods__))
        raise PluginError(
            f"backend {info.name!r}: {info.runtime.__name__} does not define {missing}"
        )
    if info.name != entry_name:
        raise PluginError(f"entry point {entry_name!r} declares backend name {info.name!r}")
    return info


def _probe(info: BackendInfo) -> BackendStatus:
    base = BackendStatus(info.name, info.version, Status.AVAILABLE, runtime=info.runtime)
    try:
        devices = tuple(info.probe())
    except ModuleNotFoundError as exc:
        hint = f": {info.install_hint}" if info.install_hint else ""
        status = replace(base, status=Status.NOT_INSTALLED, reason=f"{exc}{hint}")
    except NoDevice as exc:
        status = replace(base, status=Status.NO_DEVICE, reason=str(exc))
    except Exception as exc:
        status = replace(base, status=Status.IMPORT_FAILED, reason=f"{type(exc).__name__}: {exc}")
    else:
        if devices:
            return replace(base, devices=devices)
        status = replace(base, status=Status.NO_DEVICE, reason="the driver reports no device")
    if _strict():
        raise PluginError(f"backend {info.name!r}: {status.status.value}: {status.reason}")
    return status


def conformance_xfails() -> dict[str, dict[str, str]]:
    """Every loaded backend's conformance overrides: ``{backend: {pattern: reason}}``.

    Calls each plugin's ``ruda_conformance_xfails`` hook, if it has one; backends that failed
    to load contribute nothing.

    :raises PluginError: when a hook fails or returns something other than a mapping of
        strings, naming the plugin.
    """
    loaded = {n for n, e in _registry.load().items() if isinstance(e, BackendInfo)}
    manager = pluggy.PluginManager("ruda")
    manager.add_hookspecs(_Spec)
    found: dict[str, dict[str, str]] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in loaded or ep.name in found:
            continue
        module = ep.load()  # already imported when the backend loaded
        manager.register(module, name=f"xfails:{ep.name}")
        try:
            impls = manager.hook.ruda_conformance_xfails.get_hookimpls()
            result = impls[-1].function() if impls else None
        except Exception as exc:
            raise PluginError(f"{ep.name}: ruda_conformance_xfails failed: {exc!r}") from exc
        finally:
            manager.unregister(module)
        if result is None:
            continue
        if not isinstance(result, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in result.items()
        ):
            raise PluginError(
                f"{ep.name}: ruda_conformance_xfails returned {result!r}; return a mapping of "
                "test-name patterns to reasons"
            )
        found[ep.name] = dict(result)
    return found


def reload() -> None:
    """Forget loaded plugins and probe results; the next call re-reads the entry points (after
    installing a driver package in a running process, say). Existing clients stay valid."""
    with _registry.lock:
        _registry.loaded = None
        _registry.probed.clear()


def backends() -> list[BackendStatus]:
    """Every backend's status (available / not installed / import failed / no device), with its
    reason and devices. Probes each backend once per process."""
    names = sorted(_registry.load(), key=lambda n: (n != ALWAYS_LOADED, n))
    return [_registry.status(n) for n in names]


def enumerate_all_devices() -> list[Hashable]:
    """Every device of every installed, working backend (``str(d)`` gives ``"cuda:0"``)."""
    selected = _selected()
    devices: list[Hashable] = []
    for status in backends():
        if selected is not None and not status.available and status.name in selected:
            raise BackendUnavailable(
                f"RUDA_BACKENDS selects {status.name!r}, which is {status.status.value}: "
                f"{status.reason}. Remove it from RUDA_BACKENDS or fix the driver"
            )
        devices.extend(status.devices)
    return devices


def client(device: str | Hashable = "cpu") -> ComputeClient:
    """The client of a device given as ``"cpu"``, ``"cuda:0"``, ``"opencl:1"`` or a device
    object (shorthand for ``Runtime.client(device)``).

    :raises BackendUnavailable: when the backend is missing or unusable (says why).
    :raises ValueError: for a malformed string or an index beyond the devices present (the
        message lists what exists).
    """
    if not isinstance(device, str):
        for status in backends():
            if status.runtime is not None and isinstance(device, status.runtime.device):
                return status.runtime.client(device)
        raise ValueError(f"{device!r} is not a device of any loaded backend")
    name, _, index_text = device.strip().lower().partition(":")
    loaded = _registry.load()
    if name not in loaded:
        known = ", ".join(str(d) for d in enumerate_all_devices())
        raise ValueError(f"unknown device {device!r}; devices present: {known}")
    status = _registry.status(name)
    if not status.available:
        raise BackendUnavailable(f"backend {name!r} is {status.status.value}: {status.reason}")
    try:
        index = int(index_text) if index_text else 0
    except ValueError:
        raise ValueError(f"{device!r}: the part after ':' must be a device index") from None
    if not 0 <= index < len(status.devices):
        known = ", ".join(str(d) for d in status.devices)
        raise ValueError(f"{device!r} does not exist; {name} devices present: {known}")
    runtime = status.runtime
    if runtime is None:  # unreachable for an available backend; keeps the type checker honest
        raise BackendUnavailable(f"backend {name!r} has no runtime")
    return runtime.client(status.devices[index])

"""Driver plugins: the hook specification and the per-plugin-isolated loader.

A driver is a module named by an entry point of the group ``ruda.backends``. It implements
``ruda_backend_info`` (marked with :data:`hookimpl`) and returns a :class:`BackendInfo`. Loading
imports only these light modules; driver libraries (cupy, pyopencl) are imported by the
backend's ``probe``, which runs on first enumeration or ``client()`` lookup of that backend.

Each plugin is loaded and probed in its own ``try``: a broken or driverless plugin becomes a
:class:`BackendStatus` with a reason and never stops the others. A device the driver lists is
*available* only after a tiny kernel has built and run on it (:mod:`ruda_core.probe`, verdicts
cached per driver and device identity); one that fails is listed as *unusable* with the driver's
reason, left out of :func:`enumerate_all_devices`, and :func:`client` raises that reason.
``RUDA_STRICT_PLUGINS=1`` makes any failure a :class:`PluginError`.
``RUDA_BACKENDS=cuda,opencl`` selects backends (the NumPy reference backend,
:data:`REFERENCE_BACKEND`, always loads); a selected backend that fails raises
:class:`BackendUnavailable` naming the variable.

A backend whose memory other libraries can share by address declares its DLPack device type
(``BackendInfo.dlpack_device_type``); :func:`client_for_dlpack` and :func:`devices_sharing` find
devices by it, so no code outside a backend needs to know which backend that is. The probe's
child process enters through :func:`probe_child`.
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

from . import probe
from .errors import BackendUnavailable, InteropError, PluginError
from .interop.dlpack import describe_device
from .runtime.backend import Runtime
from .runtime.client import ComputeClient
from .runtime.properties import DeviceProperties
from .runtime.settings import switch_setting

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_API_VERSION",
    "REFERENCE_BACKEND",
    "BackendInfo",
    "BackendStatus",
    "KnownFailure",
    "NoDevice",
    "Status",
    "UnusableDevice",
    "backends",
    "client",
    "client_for_dlpack",
    "conformance_xfails",
    "devices_sharing",
    "enumerate_all_devices",
    "hookimpl",
    "hookspec",
    "native_ops",
    "probe_child",
    "reload",
]

ENTRY_POINT_GROUP = "ruda.backends"
#: The plugin API this ruda implements; a plugin declaring another is refused.
PLUGIN_API_VERSION = 1
#: The entry-point name of the NumPy reference backend: it always loads, is listed first and
#: is the device :func:`client` opens when none is named. ``RUDA_BACKENDS`` is applied to
#: entry-point names before any plugin module is imported, so this backend is known by that
#: name rather than by a flag it would declare once loaded.
REFERENCE_BACKEND = "cpu"

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
    :param identify: a stable identity of one probed device and the driver stack serving it
        (names and versions, never free memory), read without opening the device; it keys the
        cached probe verdict. None: the device is probed in every process.
    :param settings: the environment variables the driver reads when it opens a device
        (``RUDA_CPU_PLANE_DIM``): their values key the cached verdict beside the identity, so
        that a device found unusable under one value (a width out of range) is probed again
        under another.
    :param dlpack_device_type: the DLPack device type of this backend's memory (1: CPU, 2:
        CUDA), whose device index is the backend's device index; None when its memory is not
        shared by address. Foreign arrays of that type are imported onto this backend.
    """

    name: str
    version: str
    api_version: int
    runtime: type[Runtime]
    probe: Callable[[], Sequence[Hashable]]
    install_hint: str = ""
    identify: Callable[[Hashable], str] | None = None
    dlpack_device_type: int | None = None
    settings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KnownFailure:
    """A conformance test some or all of a backend's devices are known to fail, and why: a
    value of ``ruda_conformance_xfails``. A plain string there is the reason of a failure
    known on every device of the backend.

    :param reason: why the device cannot conform (a driver bug and its tracker, a hardware
        limit), shown in the test's xfail.
    :param devices: the devices it is known on, in words (``"lavapipe (adapter llvmpipe)"``),
        shown with the reason; required with ``applies``, empty without it.
    :param applies: whether the device under test is one of them, given its
        :class:`~ruda_core.runtime.DeviceProperties` (``name`` is the device's or adapter's
        name, ``vendor`` the platform or driver); called when a matching test is set up, once
        the device is open. None: every device of the backend.
    :param cases: the parts known to fail, for a test that checks several parts and names
        each one that fails (the float operations' table names its operations: ``"sin"``):
        the test then fails where another part fails, and is an expected failure where only
        these do. Empty: the whole test is an expected failure.
    :raises PluginError: for ``applies`` that is not callable, a ``devices`` that does not go
        with it, or ``cases`` that is not a frozenset of names.
    """

    reason: str
    devices: str = ""
    applies: Callable[[DeviceProperties], bool] | None = None
    cases: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not isinstance(self.devices, str):
            raise PluginError(
                f"KnownFailure({self.reason!r}, devices={self.devices!r}): the reason and the "
                "devices must be strings"
            )
        if self.applies is not None and not callable(self.applies):
            raise PluginError(
                f"KnownFailure({self.reason!r}): applies={self.applies!r} is not callable; pass "
                "a function of the device's DeviceProperties, or None for every device"
            )
        if not isinstance(self.cases, frozenset) or not all(
            isinstance(case, str) and case for case in self.cases
        ):
            raise PluginError(
                f"KnownFailure({self.reason!r}): cases={self.cases!r} is not a frozenset of "
                "the names of the test's parts"
            )
        if (self.applies is None) != (not self.devices.strip()):
            raise PluginError(
                f"KnownFailure({self.reason!r}, devices={self.devices!r}): name the devices "
                "in words exactly when applies= scopes the failure to some devices"
            )

    def applies_to(self, properties: DeviceProperties) -> bool:
        """Whether a device with ``properties`` is known to fail the test."""
        return self.applies is None or bool(self.applies(properties))


class _Spec:
    """The hook specification of ruda driver plugins."""

    @hookspec
    def ruda_backend_info(self) -> BackendInfo | None:
        """Describe the backend this plugin provides: name, version, plugin API, Runtime class,
        probe.

        Called once per process, at the first enumeration or ``ruda_core.client()`` lookup, for
        every plugin in the ``ruda.backends`` group, each on its own (a plugin's answer never
        stands for another's).
        Must not import a driver or open a device: do that in the probe, so that listing
        backends works on machines without drivers.

        :returns: the plugin's :class:`BackendInfo`, or None to offer nothing.
        """

    @hookspec
    def ruda_conformance_xfails(self) -> Mapping[str, str | KnownFailure] | None:
        """Known failures of this backend in the conformance suite (``ruda_core.testing``).

        Called only by the conformance suite's pytest plugin, once per session, through
        :func:`conformance_xfails`; never while backends are loaded or probed. The overrides
        apply to the devices of this plugin's backend only. Each key is an ``fnmatch`` pattern
        over a test's conformance name, ``<module>::<test>[<params>]`` without the device, e.g.
        ``"test_plane::test_plane_reductions[f16]"`` or ``"test_ops_float::*[f64-*]"``; each
        value is the reason, which must say why the backend cannot conform (a driver bug and
        its tracker, a hardware limit), or a :class:`KnownFailure`, whose ``applies`` scopes
        the failure to the devices it is known on (one adapter of several, a driver version),
        judged from the device's properties when the test is set up. A matching test on a
        device it applies to is marked ``xfail(strict=True)``: it still runs, and an override
        that starts passing fails the suite, so stale ones are removed. The suite's guard test
        fails for an empty reason or a pattern that matches no test. An implementation must not
        open a device or import a driver; a missing capability is a :class:`Feature` the
        device leaves out, never a known failure.

        :returns: ``{pattern: reason or KnownFailure}``, or None for no overrides.
        """

    @hookspec
    def ruda_native_ops(self) -> Mapping[str, object] | None:
        """Native implementations of ``ruda_core.ops`` operations on this backend's runtime:
        ``{operation name: implementation}``, each providing what its operation asks for
        (``"layer_norm"``: a :class:`ruda_core.ops.layer_norm.NativeLayerNorm`, such as a
        module defining its four functions).

        Called through :func:`native_ops` by :mod:`ruda_core.ops.native`, at the first call of
        an operation on a client of this backend's runtime, at most once per operation and
        process; never while backends are loaded or probed. The client exists by then, so the
        implementation may import the backend's own modules and its driver.

        :returns: ``{operation name: implementation}``, or None for none.
        """


def _new_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager("ruda")
    manager.add_hookspecs(_Spec)
    return manager


class Status(enum.Enum):
    """A backend's state at enumeration. The value is its label (``ruda devices``, JSON);
    :attr:`predicate` says it of the backend in a sentence."""

    AVAILABLE = "available"
    NOT_INSTALLED = "not installed"
    IMPORT_FAILED = "failed to import"
    NO_DEVICE = "no device"
    UNUSABLE = "unusable"

    @property
    def predicate(self) -> str:
        """What the status says after a backend's name: ``backend 'x' failed to import``."""
        return _PREDICATES[self]


_PREDICATES = {
    Status.AVAILABLE: "is available",
    Status.NOT_INSTALLED: "is not installed",
    Status.IMPORT_FAILED: "failed to import",
    Status.NO_DEVICE: "has no device",
    Status.UNUSABLE: "is unusable",
}


@dataclass(frozen=True, slots=True)
class UnusableDevice:
    """A device the driver lists but that failed the probe, the probe's reason, and what the
    device is as its driver identifies it (``BackendInfo.identify``; "" where it does not):
    which driver stack ``opencl:1`` is, for instance."""

    device: Hashable
    reason: str
    identity: str = ""


@dataclass(frozen=True, slots=True)
class BackendStatus:
    """One backend as enumeration saw it: ``devices`` are the usable ones, ``unusable`` those
    that failed the probe. A backend with devices but none usable is ``Status.UNUSABLE``."""

    name: str
    version: str
    status: Status
    reason: str = ""
    devices: tuple[Hashable, ...] = ()
    unusable: tuple[UnusableDevice, ...] = ()
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
        #: every plugin that loaded, registered under its backend name
        self.manager = _new_manager()

    def load(self) -> dict[str, BackendStatus | BackendInfo]:
        with self.lock:
            if self.loaded is None:
                self.manager = _new_manager()
                self.loaded = _load_entry_points(self.manager, self.origins)
            return self.loaded

    def status(self, name: str) -> BackendStatus:
        return self.statuses([name])[0]

    def statuses(self, names: Sequence[str]) -> list[BackendStatus]:
        """The status of each backend of ``names``: listed and probed at the first call, the
        devices of all the backends that call lists probed side by side."""
        with self.lock:
            listed: dict[str, tuple[BackendInfo, BackendStatus]] = {}
            try:
                for name in names:
                    if name in self.probed:
                        continue
                    entry = self.load()[name]
                    if isinstance(entry, BackendStatus):
                        self.probed[name] = entry
                        continue
                    dist, value = self.origins.get(name, ("", ""))
                    status = replace(_list(entry), distribution=dist, entry_point=value)
                    # a driver may look up a backend probed with it while the devices are
                    # probed: it sees its devices listed
                    self.probed[name] = status
                    listed[name] = (entry, status)
                self.probed.update(_probe_devices(list(listed.values())))
            except BaseException:  # a strict refusal, an interrupt: not the verdict
                for name in listed:
                    del self.probed[name]
                raise
            return [self.probed[name] for name in names]


_registry = _Registry()


def _strict() -> bool:
    on, off = "a backend that is not available is an error", "it is listed with its reason"
    return switch_setting("RUDA_STRICT_PLUGINS", on, off)


def _selected() -> set[str] | None:
    raw = os.environ.get("RUDA_BACKENDS", "").strip()
    if not raw:
        return None
    return {n.strip().lower() for n in raw.split(",") if n.strip()} | {REFERENCE_BACKEND}


def _call_one(manager: pluggy.PluginManager, hook: str, plugin: object) -> object:
    """``plugin``'s own answer to ``hook`` (None when it does not implement it or answers None):
    the hook called through pluggy with every other plugin left out."""
    others = [p for p in manager.get_plugins() if p is not plugin]
    results = manager.subset_hook_caller(hook, remove_plugins=others)()
    return results[0] if results else None


def _load_entry_points(
    manager: pluggy.PluginManager, origins: dict[str, tuple[str, str]]
) -> dict[str, BackendStatus | BackendInfo]:
    found: dict[str, BackendStatus | BackendInfo] = {}
    selected = _selected()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if (selected is not None and ep.name not in selected) or ep.name in found:
            continue  # for two distributions of one backend name, the first on the path wins
        dist = ep.dist.name if ep.dist is not None else ""
        where = f"entry point {ep.name} = {ep.value} of distribution {dist or '?'}"
        module: object = None
        try:
            module = ep.load()
            manager.register(module, name=ep.name)
            manager.check_pending()
            info = _validate(_call_one(manager, "ruda_backend_info", module), ep.name)
        except Exception as exc:
            if module is not None and manager.is_registered(module):
                manager.unregister(module)
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
    if info.name != info.name.lower() or ":" in info.name:
        raise PluginError(
            f"backend name {info.name!r} must be lower case without ':' (device names are "
            "'<backend>:<index>', and ruda_core.client lowercases the names it is given)"
        )
    return info


def _foreign_device(info: BackendInfo, devices: tuple[Hashable, ...]) -> str:
    """Why a device the probe of ``info`` listed is none of its backend's ("" where all are):
    an object of another class, or one whose name ``ruda_core.client`` cannot find again."""
    cls = info.runtime.device
    for d in devices:
        if not isinstance(d, cls) or str(d).partition(":")[0] != info.name:
            return (
                f"its probe listed {d!r} ({type(d).__name__}, named {str(d)!r}), not a "
                f"{cls.__name__} named '{info.name}' or '{info.name}:<index>'"
            )
    return ""


def _list(info: BackendInfo) -> BackendStatus:
    """The backend with the devices its driver lists, not yet probed."""
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
        foreign = _foreign_device(info, devices)
        if foreign:
            status = replace(base, status=Status.IMPORT_FAILED, reason=foreign)
        elif devices:
            return replace(base, devices=devices)
        else:
            status = replace(base, status=Status.NO_DEVICE, reason="the driver reports no device")
    if _strict():
        raise PluginError(f"backend {info.name!r} {status.status.predicate}: {status.reason}")
    return status


def _probe_devices(
    listed: Sequence[tuple[BackendInfo, BackendStatus]],
) -> dict[str, BackendStatus]:
    """Each listed backend's status with its devices' probe verdicts (:func:`probe.verdicts`,
    all the backends' devices at once), by name: usable devices stay in ``devices``."""
    requests = [
        probe.Request(
            info.name,
            info.runtime,
            device,
            probe.identity_of(device, info.identify),
            info.settings,
        )
        for info, status in listed
        for device in status.devices
    ]
    found = list(zip(requests, probe.verdicts(requests), strict=True))
    statuses = {}
    for info, status in listed:
        mine = [(r, verdict) for r, verdict in found if r.backend == info.name]
        usable = tuple(r.device for r, verdict in mine if verdict.usable)
        unusable = tuple(
            UnusableDevice(r.device, verdict.reason, r.identity or "")
            for r, verdict in mine
            if not verdict.usable
        )
        reasons = "; ".join(f"{u.device}: {u.reason}" for u in unusable)
        if unusable and _strict():
            raise PluginError(f"backend {info.name!r} has unusable devices: {reasons}")
        probed = replace(status, devices=usable, unusable=unusable)
        if unusable and not usable:
            probed = replace(probed, status=Status.UNUSABLE, reason=reasons)
        statuses[info.name] = probed
    return statuses


def conformance_xfails() -> dict[str, dict[str, KnownFailure]]:
    """Every loaded backend's conformance overrides: ``{backend: {pattern: KnownFailure}}``
    (a reason declared as a plain string is a failure known on every device of the backend).

    Calls each plugin's ``ruda_conformance_xfails`` hook, if it has one; backends that failed
    to load contribute nothing.

    :raises PluginError: when a hook fails or returns something other than a mapping of
        strings to strings or :class:`KnownFailure` values, naming the plugin.
    """
    loaded = _registry.load()
    manager = _registry.manager
    found: dict[str, dict[str, KnownFailure]] = {}
    for name, entry in loaded.items():
        plugin = manager.get_plugin(name)
        if not isinstance(entry, BackendInfo) or plugin is None:
            continue
        try:
            result = _call_one(manager, "ruda_conformance_xfails", plugin)
        except Exception as exc:
            raise PluginError(f"{name}: ruda_conformance_xfails failed: {exc!r}") from exc
        if result is None:
            continue
        if not isinstance(result, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str | KnownFailure) for k, v in result.items()
        ):
            raise PluginError(
                f"{name}: ruda_conformance_xfails returned {result!r}; return a mapping of "
                "test-name patterns to reasons or KnownFailure values"
            )
        found[name] = {
            pattern: v if isinstance(v, KnownFailure) else KnownFailure(v)
            for pattern, v in result.items()
        }
    return found


def native_ops(runtime: type[Runtime]) -> dict[str, object]:
    """The native operations that the plugin of the loaded backend whose runtime is ``runtime``
    supplies through its ``ruda_native_ops`` hook; empty for a runtime no loaded backend
    declares or a plugin without the hook.

    :raises PluginError: when the hook fails or returns something other than a mapping keyed
        by operation names, naming the plugin.
    """
    loaded = _registry.load()
    manager = _registry.manager
    for name, entry in loaded.items():
        plugin = manager.get_plugin(name)
        if not isinstance(entry, BackendInfo) or entry.runtime is not runtime or plugin is None:
            continue
        try:
            result = _call_one(manager, "ruda_native_ops", plugin)
        except Exception as exc:
            raise PluginError(f"{name}: ruda_native_ops failed: {exc!r}") from exc
        if result is None:
            return {}
        if not isinstance(result, Mapping) or not all(isinstance(k, str) for k in result):
            raise PluginError(
                f"{name}: ruda_native_ops returned {result!r}; return a mapping of operation "
                "names to implementations"
            )
        return dict(result)
    return {}


def reload(*, reprobe: bool = False) -> None:
    """Forget loaded plugins and probe results; the next call re-reads the entry points (after
    installing a driver package in a running process, say). Existing clients stay valid.
    ``reprobe`` also drops the stored device verdicts, so every device is probed again."""
    with _registry.lock:
        if reprobe:
            probe.forget_verdicts()
        _registry.loaded = None
        _registry.probed.clear()


def backends() -> list[BackendStatus]:
    """Every backend's status (available / not installed / failed to import / no device /
    unusable), with its reason and devices. Probes each backend once per process."""
    names = sorted(_registry.load(), key=lambda n: (n != REFERENCE_BACKEND, n))
    return _registry.statuses(names)


def enumerate_all_devices() -> list[Hashable]:
    """Every device of every installed, working backend (``str(d)`` gives ``"cuda:0"``)."""
    selected = _selected()
    devices: list[Hashable] = []
    for status in backends():
        if selected is not None and not status.available and status.name in selected:
            raise BackendUnavailable(
                f"RUDA_BACKENDS selects {status.name!r}, which {status.status.predicate}: "
                f"{status.reason}. Remove it from RUDA_BACKENDS or fix the driver"
            )
        devices.extend(status.devices)
    return devices


def client(device: str | Hashable = REFERENCE_BACKEND) -> ComputeClient:
    """The client of a device given as ``"cpu"``, ``"cuda:0"``, ``"opencl:1"`` (a backend name
    alone means its first usable device) or a device object (shorthand for
    ``Runtime.client(device)``); by default the reference backend's device.

    :raises BackendUnavailable: when the backend is missing or unusable, or the device failed
        the probe (says why, in the driver's words).
    :raises ValueError: for a malformed string or an index beyond the devices present (the
        message lists what exists).
    """
    if not isinstance(device, str):
        for status in backends():
            if status.runtime is not None and isinstance(device, status.runtime.device):
                return status.runtime.client(_usable(status, device, str(device)))
        raise ValueError(f"{device!r} is not a device of any loaded backend")
    name, colon, index_text = device.strip().lower().partition(":")
    loaded = _registry.load()
    if name not in loaded:
        selected = _selected()
        if selected is not None and name not in selected:
            raise ValueError(
                f"unknown device {device!r}: RUDA_BACKENDS selects {', '.join(sorted(selected))}"
                f", which leaves out any backend {name!r}"
            )
        try:
            known = "devices present: " + ", ".join(str(d) for d in enumerate_all_devices())
        except PluginError as exc:  # a selected backend that fails: the name is still unknown
            known = f"listing the devices failed: {exc}"
        raise ValueError(f"unknown device {device!r}; {known}")
    status = _registry.status(name)
    try:
        index = int(index_text) if colon else None
    except ValueError:
        raise ValueError(f"{device!r}: the part after ':' must be a device index") from None
    wanted = {f"{name}:{index}"} | ({name} if index == 0 else set())
    listed = [*status.devices, *(u.device for u in status.unusable)]
    found = next((d for d in listed if str(d).lower() in wanted), None)
    if found is None and index is None and status.devices:
        found = status.devices[0]
    if found is None and status.available:
        known = ", ".join(str(d) for d in status.devices)
        raise ValueError(f"{device!r} does not exist; {name} devices present: {known}")
    if found is None or status.runtime is None:
        raise BackendUnavailable(f"backend {name!r} {status.status.predicate}: {status.reason}")
    return status.runtime.client(_usable(status, found, device))


def _usable(status: BackendStatus, device: Hashable, asked: str) -> Hashable:
    """``device``, unless it failed the probe: then its reason is raised."""
    for entry in status.unusable:
        if entry.device == device:
            what = f" ({entry.identity})" if entry.identity else ""
            raise BackendUnavailable(f"{asked}{what} is unusable: {entry.reason}")
    return device


def _sharing(dlpack_type: int) -> list[BackendStatus]:
    """The status of each loaded backend that declares ``dlpack_type``, in :func:`backends`
    order; only these are probed."""
    loaded = _registry.load()
    names = sorted(
        (
            name
            for name, entry in loaded.items()
            if isinstance(entry, BackendInfo) and entry.dlpack_device_type == dlpack_type
        ),
        key=lambda n: (n != REFERENCE_BACKEND, n),
    )
    return _registry.statuses(names)


def devices_sharing(dlpack_type: int) -> list[Hashable]:
    """The usable devices of every available backend whose memory is of DLPack device type
    ``dlpack_type`` (``2``: the CUDA GPUs, whichever backend drives them); empty when none."""
    return [device for status in _sharing(dlpack_type) for device in status.devices]


def client_for_dlpack(device: tuple[int, int]) -> ComputeClient:
    """The client of the device whose memory a DLPack ``(device type, index)`` names: device
    ``index`` of the first available backend declaring that type (the reference backend first,
    then by name).

    :raises InteropError: when no available backend declares the type (naming the backends
        that do and why they are unavailable), or its device of that index is missing or
        unusable.
    """
    kind, index = int(device[0]), int(device[1])
    where = describe_device((kind, index))
    declaring = _sharing(kind)
    available = [status for status in declaring if status.available]
    if not available:
        why = "; ".join(f"backend {s.name!r} {s.status.predicate}: {s.reason}" for s in declaring)
        raise InteropError(
            f"no ruda device uses memory of {where}"
            + (f" ({why})" if why else "; no installed backend shares memory of that type")
            + ". Copy the array to the host and use RudaTensor.from_numpy, or install the "
            "backend of that device"
        )
    name = available[0].name
    try:
        return client(f"{name}:{index}")
    except (BackendUnavailable, ValueError) as exc:
        raise InteropError(
            f"{where} is {name}:{index} for ruda, which cannot be opened: {exc}"
        ) from exc


def probe_child(argv: Sequence[str]) -> None:
    """The probe's child process (:mod:`ruda_core.probe`): find device ``argv[1]`` of backend
    ``argv[0]`` again through its entry point, probe it and print the verdict."""
    backend, name = argv
    info = _registry.load().get(backend)
    if not isinstance(info, BackendInfo):
        probe.report(probe.Verdict(False, f"backend {backend!r} did not load in the probe process"))
        return
    device = next((d for d in info.probe() if str(d) == name), None)
    if device is None:
        probe.report(probe.Verdict(False, f"the probe process found no device {name} of {backend}"))
        return
    probe.report(probe.run(info.runtime, device, probe.report_step))

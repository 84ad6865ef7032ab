"""Where tuning results are valid: :class:`RuntimeEnvironment`, :func:`runtime_environment` and
the process-wide deployment tags.

A runtime environment is the part of every tuning key that names the stack a result was measured
on: the runtime, the device, the device's properties fingerprint, the driver fingerprint, the
deployment tags and the ruda version. :func:`runtime_environment` computes it once per device
server and memoises it, so asking again never probes the driver.

Deployment tags describe what the stack cannot see for itself (a container image, a cluster, a
power cap). They are immutable once used: the first :func:`runtime_environment` call (every
tuning makes one) freezes them, and :func:`set_deployment_tags` with different tags afterwards
raises :class:`DeploymentTagsError`; an environment or a tuner never changes under a running
program. Setting the same tags again is allowed.

This module must not import a backend or touch a device except through the client it is given.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..runtime import ComputeClient, ComputeServer, DeploymentTagsError, DeviceId

__all__ = [
    "DeploymentTagsError",
    "RuntimeEnvironment",
    "TagValue",
    "deployment_tags",
    "runtime_environment",
    "set_deployment_tags",
]

#: What a deployment tag's value may be: values with a stable ``repr`` across processes.
TagValue = str | int | bool


@dataclass(frozen=True, slots=True)
class RuntimeEnvironment:
    """The identity of the stack a tuning result is valid on. Frozen and hashable; its ``repr``
    is stable across processes, so it can be part of a persistent key.

    :param runtime: ``Runtime.name(client)``.
    :param device_id: ``client.device_id()``.
    :param properties_fingerprint: ``client.properties_fingerprint()`` (hardware, capabilities).
    :param driver_fingerprint: ``Runtime.autotune_driver_fingerprint(client)``; None means the
        stack cannot be identified across processes, so results stay in this process.
    :param deployment_tags: the process's deployment tags, sorted by name.
    :param ruda_version: the version of ruda that measured the result.
    """

    runtime: str
    device_id: DeviceId
    properties_fingerprint: str
    driver_fingerprint: str | None
    deployment_tags: tuple[tuple[str, TagValue], ...]
    ruda_version: str

    @property
    def persistent(self) -> bool:
        """Whether results measured here may be stored on disk and reused by other processes."""
        return self.driver_fingerprint is not None


_lock = threading.Lock()
_tags: tuple[tuple[str, TagValue], ...] = ()
_frozen = False
_environments: weakref.WeakKeyDictionary[ComputeServer, RuntimeEnvironment] = (
    weakref.WeakKeyDictionary()
)


def set_deployment_tags(tags: Mapping[str, TagValue] | None = None, /, **more: TagValue) -> None:
    """Set the process's deployment tags (``tags`` and keywords together; they replace any set
    before). Call it once at start-up, before the first tuning.

    :raises DeploymentTagsError: when tags were already used (by a :func:`runtime_environment`
        call) and these differ from them; the tags in force are kept.
    :raises TypeError: for a name that is not a non-empty ``str`` or a value that is not a
        ``str``, ``int`` or ``bool``.
    """
    global _tags
    merged = {**(tags or {}), **more}
    for name, value in merged.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"a deployment tag name must be a non-empty str, got {name!r}")
        if not isinstance(value, str | int | bool):
            raise TypeError(
                f"deployment tag {name}={value!r} is a {type(value).__name__}; use a str, int "
                "or bool (a value whose repr is the same in every process)"
            )
    normalized = tuple(sorted(merged.items()))
    with _lock:
        if _frozen and normalized != _tags:
            raise DeploymentTagsError(
                f"deployment tags are already in use as {dict(_tags)} and cannot change to "
                f"{dict(normalized)}: existing runtime environments and tuning results keep the "
                "tags they were made with. Set the tags once, before the first tuning or "
                "runtime_environment() call"
            )
        _tags = normalized


def deployment_tags() -> Mapping[str, TagValue]:
    """The deployment tags in force (read-only). Reading them does not freeze them."""
    return MappingProxyType(dict(_tags))


def runtime_environment(client: ComputeClient) -> RuntimeEnvironment:
    """The runtime environment of ``client``'s device, computed on the first call for that
    device's server and memoised (later calls do not probe the driver). Thread-safe. The first
    call in the process freezes the deployment tags.
    """
    server = client.server
    env = _environments.get(server)
    if env is not None:
        return env
    global _frozen
    from .. import __version__  # the package's own version, defined before this module loads

    runtime = client.runtime
    identity = (
        runtime.name(client),
        client.device_id(),
        client.properties_fingerprint(),
        runtime.autotune_driver_fingerprint(client),
    )
    with _lock:  # the tags freeze here, together with the first environment that holds them
        env = _environments.get(server)
        if env is None:
            _frozen = True
            env = _environments[server] = RuntimeEnvironment(*identity, _tags, __version__)
        return env

"""Conformance names of tests, and the xfail overrides drivers declare against them.

A test's *conformance name* is ``<module>::<function>[<params>]`` without the device, e.g.
``test_ops_float::test_float_ops_match_reference[f16]``: the same on every device, so a
driver's overrides (``ruda_conformance_xfails`` in :mod:`ruda_core.plugins`) and the report
matrix can name it. An override's pattern matches a test when ``fnmatch`` accepts the full name
or the name without its ``[params]``; ``*`` and ``?`` are its only wildcards. Overrides apply
only to tests of :mod:`ruda_core.testing.conformance` on a device of the declaring backend, and
an override scoped to some devices (:class:`~ruda_core.plugins.KnownFailure` with ``applies``)
only on a device whose properties it accepts; the device is open by then (the plugin applies
overrides when a test is set up). An override naming the parts of a test that fail
(:attr:`~ruda_core.plugins.KnownFailure.cases`) is settled by the test itself
(:meth:`KnownCases.settle`).
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import pytest

from .. import plugins
from ..errors import PluginError
from ..plugins import KnownFailure
from ..runtime import DeviceProperties
from .selection import backend_of

__all__ = [
    "ANY_DEVICE",
    "CONFORMANCE_PACKAGE",
    "DEVICE_PARAM",
    "MATRIX_PROPERTY",
    "KnownCases",
    "Overrides",
    "conformance_functions",
    "conformance_name",
    "device_of",
    "matches",
    "matrix_cell",
    "node_cell",
]

CONFORMANCE_PACKAGE = "ruda_core.testing.conformance"
#: The parameter name that carries the device under test.
DEVICE_PARAM = "ruda_device"
#: The device the conformance matrix lists a test under that does not run per device.
ANY_DEVICE = "any"
#: The user property of a conformance test's reports that names its cell of the matrix
#: (:func:`matrix_cell`): set where the test is collected, it travels with the reports to
#: where they are gathered, the controller of a run spread over processes included.
MATRIX_PROPERTY = "ruda_conformance"


def device_of(item: pytest.Item) -> str | None:
    """The device a test item runs on, or None when it is not parametrised by device."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    value = callspec.params.get(DEVICE_PARAM)
    return value if isinstance(value, str) else None


def conformance_name(item: pytest.Item) -> str:
    """``<module>::<function>[<params without the device>]`` of a test item."""
    module = getattr(item, "module", None)
    base = module.__name__.rsplit(".", 1)[-1] if module is not None else item.path.stem
    name = f"{base}::{getattr(item, 'originalname', item.name)}"
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return name
    device = device_of(item)
    ident = callspec.id if device is None else _without_device(callspec.id, device)
    return f"{name}[{ident}]" if ident else name


def _without_device(ident: str, device: str) -> str:
    """A test id's parameters without its device (first or last among them)."""
    if ident == device:
        return ""
    if ident.endswith(f"-{device}"):
        return ident[: -len(device) - 1]
    if ident.startswith(f"{device}-"):
        return ident[len(device) + 1 :]
    return ident


def node_cell(nodeid: str, devices: Sequence[str]) -> tuple[str, str] | None:
    """The conformance name and device of a test known by its node id alone, among
    ``devices`` (None: it runs on none of them): a report pytest-xdist makes for a test whose
    worker process died carries no properties."""
    path, _, test = nodeid.partition("::")
    function, _, ident = test.partition("[")
    ident = ident.removesuffix("]")
    for device in devices:
        rest = _without_device(ident, device)
        if rest != ident or ident == device:
            name = f"{PurePath(path).stem}::{function}"
            return (f"{name}[{rest}]" if rest else name), device
    return None


def matrix_cell(item: pytest.Item) -> tuple[str, str]:
    """The conformance name and device (:data:`ANY_DEVICE` where it runs on none) of a test."""
    return conformance_name(item), device_of(item) or ANY_DEVICE


def is_conformance(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    return module is not None and module.__name__.startswith(CONFORMANCE_PACKAGE + ".")


def _glob(pattern: str) -> str:
    """``pattern`` with ``[`` and ``]`` literal: only ``*`` and ``?`` are wildcards."""
    return "".join({"[": "[[]", "]": "[]]"}.get(ch, ch) for ch in pattern)


def matches(pattern: str, name: str) -> bool:
    """Whether an override ``pattern`` applies to the conformance ``name`` (``*`` and ``?`` are
    the only wildcards)."""
    glob = _glob(pattern)
    return fnmatch.fnmatchcase(name, glob) or fnmatch.fnmatchcase(name.split("[", 1)[0], glob)


def conformance_functions() -> list[str]:
    """``<module>::<function>`` of every test function of the conformance package."""
    package = importlib.import_module(CONFORMANCE_PACKAGE)
    names = []
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{CONFORMANCE_PACKAGE}.{info.name}")
        for attr, value in vars(module).items():
            if attr.startswith("test_") and inspect.isfunction(value):
                names.append(f"{info.name}::{attr}")
    return sorted(names)


@dataclass(slots=True)
class Overrides:
    """The declared overrides of every backend, or the error that stopped collecting them."""

    by_backend: Mapping[str, Mapping[str, KnownFailure]]
    error: str = ""

    @classmethod
    def load(cls) -> Overrides:
        try:
            return cls(plugins.conformance_xfails())
        except PluginError as exc:
            return cls({}, str(exc))

    def known_for(self, item: pytest.Item, properties: DeviceProperties) -> KnownCases | None:
        """The known failure of ``item`` run on its device, whose properties are
        ``properties`` (see :meth:`known_failure`); None for a test that does not run per
        device or is not a conformance test."""
        device = device_of(item)
        if device is None or not is_conformance(item):
            return None
        return self.known_failure(backend_of(device), conformance_name(item), properties)

    def known_failure(
        self, backend: str, name: str, properties: DeviceProperties
    ) -> KnownCases | None:
        """The first valid override of ``backend`` that matches the conformance ``name`` and
        applies to a device with ``properties``, with its reason in words, else None.
        Overrides with an empty reason are never applied (the guard test reports them).

        :raises PluginError: when an override's ``applies`` raises, naming the backend and the
            pattern.
        """
        for pattern, failure in self.by_backend.get(backend, {}).items():
            reason = failure.reason.strip()
            if not reason or not matches(pattern, name):
                continue
            try:
                applies = failure.applies_to(properties)
            except Exception as exc:
                raise PluginError(
                    f"{backend}: the known failure {pattern!r} could not tell whether it "
                    f"applies to {properties.name!r}: {type(exc).__name__}: {exc}; fix its "
                    "applies= function"
                ) from exc
            if not applies:
                continue
            where = f" on {failure.devices}" if failure.devices else ""
            return KnownCases(f"{backend} declares a known failure{where}: {reason}", failure.cases)
        return None

    def problems(self) -> list[str]:
        """Every override without a reason or matching no conformance test."""
        functions = conformance_functions()
        found = [self.error] if self.error else []
        for backend, table in sorted(self.by_backend.items()):
            for pattern, failure in table.items():
                if not failure.reason.strip():
                    found.append(f"{backend}: override {pattern!r} has no reason")
                base = _glob(pattern.split("[", 1)[0])
                if not any(fnmatch.fnmatchcase(f, base) for f in functions):
                    found.append(
                        f"{backend}: override {pattern!r} matches no conformance test (names "
                        "look like 'test_memory::test_round_trip[0B]')"
                    )
        return found


@dataclass(frozen=True, slots=True)
class KnownCases:
    """A known failure of a test on the device it runs on: why, and the parts of the test it
    names (none: the whole test, an expected failure)."""

    reason: str = ""
    cases: frozenset[str] = field(default_factory=frozenset)

    def settle(self, failures: Mapping[str, str]) -> None:
        """End a test that checked several parts and found ``failures`` (the failing parts'
        names, each with its message): it fails where a part not known to fail failed, is an
        expected failure where only known parts failed, and fails as a stale declaration where
        parts are declared and none failed (as a strict xfail that passes would)."""
        unexpected = [message for case, message in failures.items() if case not in self.cases]
        if unexpected:
            pytest.fail("\n".join(unexpected), pytrace=False)
        if failures:
            pytest.xfail(f"{self.reason} ({', '.join(sorted(failures))} failed)")
        if self.cases:
            pytest.fail(
                f"{', '.join(sorted(self.cases))} passed, but declared expected failures: "
                f"{self.reason}",
                pytrace=False,
            )

"""The conformance suite's pytest plugin (opt-in).

Load it with ``pytest_plugins = ["ruda_core.testing.plugin"]`` in a root ``conftest.py`` or
``pytest -p ruda_core.testing.plugin --pyargs ruda_core.testing.conformance``. It provides:

* ``--ruda-device D`` (repeatable; ``RUDA_TEST_DEVICES=cpu,opencl:0``; default: every device
  ``ruda_core.enumerate_all_devices()`` lists) and ``RUDA_REQUIRE=cuda,opencl`` (a required
  backend that is missing or unusable fails instead of skipping), see :mod:`.selection`;
* the fixtures ``ruda_device`` (the device string, e.g. ``"opencl:0"``; every test using it or
  ``client`` runs once per selected device, with the device as its id), ``client`` (that
  device's ``ComputeClient``), ``reference`` (the NumPy reference device's client) and
  ``plane_reference`` (the reference device at the plane width of the device under test), all
  session-scoped, so they work with Hypothesis' ``@given``, and ``known_cases``, the parts of
  the test its device is known to fail (:class:`~.overrides.KnownCases`);
* the markers of :mod:`.markers` (``requires``, ``requires_elem``), checked before a test's
  fixtures are set up;
* a time limit for each device test (``--ruda-timeout S``, ``RUDA_TEST_TIMEOUT``; default
  900 s, 0: none): a test still running then fails where it waits (a future its driver never
  completes), and the device's later tests fail at once instead of hanging in turn (POSIX,
  where the tests run on the main thread);
* the xfail overrides drivers declare with the ``ruda_conformance_xfails`` hook, applied
  when a test is set up on a device they apply to (see :mod:`.overrides`);
* each conformance test's cell of the conformance matrix in its reports' user properties
  (:data:`~.overrides.MATRIX_PROPERTY`), which ``ruda conformance`` gathers;
* the Hypothesis profile ``ruda`` (derandomised: every run tries the same examples; no
  deadline), loaded unless ``--hypothesis-profile`` names another, so a test run never fails
  by chance; ``RUDA_FUZZ_NEW=1`` loads ``ruda-new`` instead, which draws new examples on every
  run (``--hypothesis-seed=N`` picks one other fixed set).

The plugin never imports a driver itself; opening a device is what imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Generator, Iterator
from types import FrameType

import pytest
from hypothesis import settings

import ruda_core

from ..plugins import REFERENCE_BACKEND
from ..runtime import ComputeClient, IndexedRuntime, SettingError, switch_setting
from .markers import MARK_ELEMS, MARK_FEATURES, missing
from .overrides import (
    DEVICE_PARAM,
    MATRIX_PROPERTY,
    KnownCases,
    Overrides,
    device_of,
    is_conformance,
    matrix_cell,
)
from .selection import ENV_DEVICES, ENV_REQUIRE, DeviceSelection, Unavailable

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ENV_FUZZ_NEW",
    "ENV_TIMEOUT",
    "HYPOTHESIS_PROFILE",
    "HYPOTHESIS_PROFILE_NEW",
    "client",
    "known_cases",
    "reference",
    "ruda_device",
]

#: The Hypothesis profile loaded by default: the same examples on every run.
HYPOTHESIS_PROFILE = "ruda"
#: The Hypothesis profile ``RUDA_FUZZ_NEW=1`` loads: new examples on every run.
HYPOTHESIS_PROFILE_NEW = "ruda-new"
#: Set to 1 to draw new examples on every run (the fixed set is the default).
ENV_FUZZ_NEW = "RUDA_FUZZ_NEW"
settings.register_profile(HYPOTHESIS_PROFILE, derandomize=True, deadline=None, print_blob=True)
settings.register_profile(HYPOTHESIS_PROFILE_NEW, derandomize=False, deadline=None, print_blob=True)

#: Seconds a device test may run (0: no limit), unless ``--ruda-timeout`` says.
ENV_TIMEOUT = "RUDA_TEST_TIMEOUT"
DEFAULT_TIMEOUT_S = 900.0

_SELECTION = pytest.StashKey[DeviceSelection]()
#: the devices that stopped answering, each with the test it stopped in
_STOPPED = pytest.StashKey[dict[str, str]]()
_OVERRIDES = pytest.StashKey[Overrides]()
_KNOWN_CASES = pytest.StashKey[KnownCases]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ruda", "ruda conformance suite")
    group.addoption(
        "--ruda-device",
        action="append",
        default=[],
        metavar="D",
        help=f"run device tests on D (repeatable, or a comma list; default: ${ENV_DEVICES}, "
        "else every device ruda_core.enumerate_all_devices() lists)",
    )
    group.addoption(
        "--ruda-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"fail a device test still running after S seconds, and its device's later tests "
        f"(default: ${ENV_TIMEOUT}, else {DEFAULT_TIMEOUT_S:g}; 0: no limit)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARK_FEATURES}(*features): the test needs these ruda Feature values"
    )
    config.addinivalue_line(
        "markers", f"{MARK_ELEMS}(*elems): the test needs these ruda element types"
    )
    _load_hypothesis_profile(config)
    config.stash[_SELECTION] = DeviceSelection.from_options(config.getoption("ruda_device"))
    config.stash[_STOPPED] = {}
    _limit_s(config)  # a malformed setting stops the run before any test


def _limit_s(config: pytest.Config) -> float:
    """The seconds a device test may run (0: no limit).

    :raises pytest.UsageError: for a ``RUDA_TEST_TIMEOUT`` that is no number.
    """
    given: float | None = config.getoption("ruda_timeout")
    if given is not None:
        return max(given, 0.0)
    text = os.environ.get(ENV_TIMEOUT, "").strip()
    try:
        return max(float(text), 0.0) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        raise pytest.UsageError(f"{ENV_TIMEOUT}={text!r} is not a number of seconds") from None


def _load_hypothesis_profile(config: pytest.Config) -> None:
    """Load ``ruda`` (or ``ruda-new`` under ``RUDA_FUZZ_NEW=1``) unless
    ``--hypothesis-profile`` names another. Runs before collection, so the ``@settings`` of
    every test module build on it.

    :raises pytest.UsageError: when ``RUDA_FUZZ_NEW`` is neither ``0`` nor ``1``.
    """
    if config.getoption("hypothesis_profile", default=None):
        return
    try:
        new = switch_setting(ENV_FUZZ_NEW, "new random examples on every run", "the fixed set")
    except SettingError as exc:
        raise pytest.UsageError(str(exc)) from None
    settings.load_profile(HYPOTHESIS_PROFILE_NEW if new else HYPOTHESIS_PROFILE)


def _selection(config: pytest.Config) -> DeviceSelection:
    return config.stash[_SELECTION]


def _overrides(config: pytest.Config) -> Overrides:
    if _OVERRIDES not in config.stash:
        config.stash[_OVERRIDES] = Overrides.load()
    return config.stash[_OVERRIDES]


def pytest_report_header(config: pytest.Config) -> list[str]:
    selection = _selection(config)
    lines = [f"ruda devices: {', '.join(selection.names)}"]
    if selection.required:
        lines.append(
            f"ruda required backends ({ENV_REQUIRE}): {', '.join(sorted(selection.required))}"
        )
    if selection.enumeration_error:
        lines.append(f"ruda: {selection.enumeration_error}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise every test that uses ``ruda_device`` (directly or through ``client``) over
    the selected devices; the device id comes last in the test id."""
    if DEVICE_PARAM in metafunc.fixturenames:
        names = _selection(metafunc.config).names
        metafunc.parametrize(DEVICE_PARAM, names, ids=names, indirect=True, scope="session")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Name each conformance test's cell of the matrix in its reports (:data:`MATRIX_PROPERTY`),
    in the process that collects it: a worker of ``pytest -n`` too, whose reports carry it to
    the controller."""
    for item in items:
        if is_conformance(item):
            item.user_properties.append((MATRIX_PROPERTY, matrix_cell(item)))


def _check_available(selection: DeviceSelection, name: str) -> ComputeClient:
    outcome = selection.open(name)
    if isinstance(outcome, Unavailable):
        if outcome.required:
            pytest.fail(outcome.message(), pytrace=False)
        pytest.skip(outcome.message())
    return outcome


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or fail, for a required backend) a device test whose device cannot be opened, mark
    as a strict xfail one whose driver declares it a known failure of that device (or, where
    the declaration names the failing parts, hand it to the test's ``known_cases``), and skip
    as *unsupported* one whose device lacks a marked capability, before any fixture. The xfail
    mark counts as one made at collection: this hook runs before pytest's own of the same
    order (it is registered later), and pytest reads the marks again when the test is called.
    A test of a device that stopped answering (:func:`_time_limit`) fails at once."""
    device = device_of(item)
    if device is None:
        return
    stopped = item.config.stash[_STOPPED].get(device)
    if stopped is not None:
        pytest.fail(f"{device} stopped answering in {stopped}: not tested further", pytrace=False)
    client = _check_available(_selection(item.config), device)
    known = _overrides(item.config).known_for(item, client.properties())
    if known is not None and known.cases:
        item.stash[_KNOWN_CASES] = known
    elif known is not None:
        item.add_marker(pytest.mark.xfail(reason=known.reason, strict=True))
    features = [f for m in item.iter_markers(MARK_FEATURES) for f in m.args]
    elems = [e for m in item.iter_markers(MARK_ELEMS) for e in m.args]
    reason = missing(client, features, elems)
    if reason is not None:
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True, trylast=True, specname="pytest_runtest_setup")
def pytest_runtest_setup_time_limit(item: pytest.Item) -> Generator[None, None, None]:
    """Set a device test's fixtures up under its time limit (:func:`_time_limit`)."""
    return (yield from _limited(item))


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Run a device test under its time limit (:func:`_time_limit`)."""
    return (yield from _limited(item))


def _limited(item: pytest.Item) -> Generator[None, None, None]:
    """The body of a hook wrapper that runs the rest of the hook under the test's time limit,
    where the test runs on a device."""
    device = device_of(item)
    if device is None:
        return (yield)
    with _time_limit(item, device):
        return (yield)


@contextlib.contextmanager
def _time_limit(item: pytest.Item, device: str) -> Iterator[None]:
    """Past the test's time limit (:func:`_limit_s`), fail it with the traceback of where it
    waits, and mark ``device`` as stopped. No limit off POSIX or off the main thread."""
    limit = _limit_s(item.config)
    main = threading.current_thread() is threading.main_thread()
    if not limit or not main or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: FrameType | None) -> None:
        item.config.stash[_STOPPED][device] = item.nodeid
        pytest.fail(
            f"{item.nodeid} did not finish within {limit:g} s on {device}: a wait for the "
            "device never ended (a future its driver never completes?). Its later tests fail "
            f"at once. --ruda-timeout or {ENV_TIMEOUT} sets the limit (0: none)"
        )

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session")
def ruda_device(request: pytest.FixtureRequest) -> str:
    """The device under test, as ``ruda_core.client`` accepts it (``"cpu"``, ``"opencl:0"``)."""
    name: str = request.param
    return name


@pytest.fixture(scope="session")
def client(request: pytest.FixtureRequest, ruda_device: str) -> ComputeClient:
    """The client of the device under test."""
    return _check_available(_selection(request.config), ruda_device)


@pytest.fixture(scope="session")
def reference() -> ComputeClient:
    """The client of the NumPy reference device, the oracle results are compared with."""
    return ruda_core.client(REFERENCE_BACKEND)


@pytest.fixture(scope="session")
def plane_reference(client: ComputeClient, reference: ComputeClient) -> ComputeClient:
    """The reference device at the plane width of the device under test, so that kernels with
    plane operations give the same lanes on both: ``reference`` where the widths are equal,
    else a reference server of its own made at that width (``RUDA_CPU_PLANE_DIM``), or
    ``reference`` where the reference device does not take that width."""
    width, runtime = client.properties().plane_dim, reference.runtime
    if width == reference.properties().plane_dim or not issubclass(runtime, IndexedRuntime):
        return reference
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUDA_CPU_PLANE_DIM", str(width))
        try:
            server = runtime.new_server(reference.device)
        except ValueError:  # a width the reference device does not take
            return reference
    return ComputeClient(reference.device, server, runtime=runtime)


@pytest.fixture
def known_cases(request: pytest.FixtureRequest) -> KnownCases:
    """The parts of the test that its device's driver declares known failures, with why;
    none where it declares none. A test that checks several parts settles with it
    (:meth:`~.overrides.KnownCases.settle`)."""
    node: pytest.Item = request.node
    return node.stash.get(_KNOWN_CASES, KnownCases())


@pytest.fixture
def unsanitized(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test's launches without the reference device's sanitizer (``RUDA_SANITIZE=0``):
    for tests whose kernels go out of bounds or read unwritten memory on purpose, to show what
    the device does then."""
    monkeypatch.setenv("RUDA_SANITIZE", "0")


@pytest.fixture(scope="session")
def ruda_selection(request: pytest.FixtureRequest) -> DeviceSelection:
    """The test run's device selection (devices, required backends, enumeration error)."""
    return _selection(request.config)


@pytest.fixture(scope="session")
def ruda_overrides(request: pytest.FixtureRequest) -> Overrides:
    """Every backend's declared xfail overrides."""
    return _overrides(request.config)

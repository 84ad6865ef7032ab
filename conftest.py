"""Project-wide pytest setup: the conformance suite's plugin (its modules run on every local
device, see ``testpaths``), an isolated cache folder for every test run, ``open_device``,
which opens a named device for a test as the conformance suite does, the tests marked
``slow`` first, so that parallel workers start them early instead of finishing on them alone,
one worker more than the cores for ``-n auto``, work stealing between the workers, the
operations' tuners timing each candidate once, and what collection made frozen out of the
cyclic collector's walks."""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ruda_core.runtime import ComputeClient
from ruda_core.runtime.cache import CacheKind, cache_root, entry_files
from ruda_core.testing.selection import DeviceSelection, Unavailable, required_backends

pytest_plugins = ["ruda_core.testing.plugin"]


def _isolate_cache(config: pytest.Config) -> None:
    """Compiled kernels and tuning results go to a fresh folder, not the user's cache, one for
    the whole run: the parallel workers inherit it, so a kernel built by one is loaded by the
    others, not built again. The folder starts with the devices' probe verdicts of the cache
    this run enumerated with: facts about this machine's drivers, which this process has read
    already. Child processes that inherit the folder (``ruda devices``, conformance runs at
    other settings) then open their devices without probing every driver again, seconds each
    (thirty where a driver's own cache is cold); tests of probing give their children folders
    of their own."""
    folder = Path(tempfile.mkdtemp(prefix="ruda-cache-"))  # made 0700, as ruda makes its own
    source = cache_root()
    for path, _ in entry_files(source, CacheKind.PROBES):
        target = folder / path.relative_to(source)
        for parent in (target.parent.parent, target.parent):
            parent.mkdir(mode=0o700, exist_ok=True)  # as ruda makes its own: trusted
        shutil.copyfile(path, target)
    os.environ["RUDA_CACHE_DIR"] = str(folder)
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def _open_device(name: str) -> ComputeClient:
    outcome = DeviceSelection([name], required_backends()).open(name)
    if isinstance(outcome, Unavailable):
        if outcome.required:
            pytest.fail(outcome.message(), pytrace=False)
        pytest.skip(outcome.message())
    return outcome


@pytest.fixture(scope="session")
def open_device() -> Callable[[str], ComputeClient]:
    """``open_device("cuda:0")`` is that device's client; a device this machine cannot open
    skips the test, saying why, or fails it when ``RUDA_REQUIRE`` names the backend."""
    return _open_device


#: The operations whose module-level ``_TUNER`` picks among candidates.
TUNED_OPS = ("bincount", "matmul", "reduce", "scan", "sorting")


def pytest_configure(config: pytest.Config) -> None:
    """The run's cache folder, made where the run starts (a worker of ``-n`` inherits it).
    The operations' tuners time each candidate once, not five times: the tests check what the
    candidates compute and when tuning happens, not how closely it times them; each tuning
    still warms every candidate up and times it (``tests/test_cache_command.py`` tunes with one
    sample too). ``-n`` runs hand tests out by work stealing unless ``--dist`` is given: the
    default ``load`` queues tests on a worker ahead of time, so the run can end with one worker
    idle while the other still has a queue behind a long test."""
    if not hasattr(config, "workerinput"):
        _isolate_cache(config)
    for op in TUNED_OPS:
        importlib.import_module(f"ruda_core.ops.{op}")._TUNER.samples = 1
    args = config.invocation_params.args
    given = any(str(arg) == "--dist" or str(arg).startswith("--dist=") for arg in args)
    if getattr(config.option, "dist", "no") == "load" and not given:
        config.option.dist = "worksteal"


@pytest.hookimpl(optionalhook=True)  # a child run may leave xdist out
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker more than the cores this process may run on (unless
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says how many). Many tests spend part of their time
    waiting, on child processes, probes' time limits and timeouts, and a core would idle
    meanwhile: on two cores the suite ran in 320 s with three workers, 346-353 s with two."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``slow`` tests first (each keeps its order): workers given them late would end the
    run alone on them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection made (modules, kernels traced at import, the test items): it lives
    for the whole run, and the cyclic collector, which ``gc.collect()`` in the memory tests and
    the automatic full collections run, then walks only what the tests make, not the suite's
    hundreds of thousands of objects (0.2-1 s a walk in a worker)."""
    gc.collect()
    gc.freeze()

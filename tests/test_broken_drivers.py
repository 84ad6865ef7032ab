"""The conformance suite catches broken drivers: tiny out-of-tree backends that wrap the reference
device through the public plugin API and break one contract each, installed as a distribution on
PYTHONPATH and run through ``ruda conformance`` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_drivers import driver_source, fake_distribution, path_with

pytestmark = pytest.mark.slow

NOSYNC = """        def sync(self, stream):
            return RudaFuture.ready(None)  # claims completion before queued work has run"""
NOWAIT = """        def wait(self, stream, fence):
            pass  # never orders a stream after another stream's work"""
RECYCLE = """        def empty(self, nbytes, stream_value):
            return self.revive(super().empty(nbytes, stream_value))

        def create(self, data, stream_value):
            return self.revive(super().create(data, stream_value))

        def revive(self, handle):
            new = handle.binding().slice
            place = (id(new.page), new.offset_bytes)
            old = self.__dict__.setdefault("handed_out", {}).get(place)
            if old is not None:
                old.freed = False  # recycled: bindings of the dropped handle work again
            self.handed_out[place] = new
            return handle"""
FAITHFUL = """        pass"""

DECLARED = "test_futures::test_sync_waits_for_the_work_enqueued_before_it"


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A distribution with four backends: ``nosync``, ``nowait``, ``recycle`` (memory reused
    after a drop revives the dropped handle's bindings) and ``badxfail`` (faithful, but
    declaring overrides without a reason or without a test)."""
    drivers = {  # name: (driver body, server body, what it does, its overrides)
        "nosync": (NOSYNC, "", "sync() resolves at once", {DECLARED: "sync is not a fence here"}),
        "nowait": (NOWAIT, "", "streams are never ordered", {}),
        "recycle": (FAITHFUL, RECYCLE, "reused memory revives dropped bindings", {}),
        "badxfail": (
            FAITHFUL,
            "",
            "bad overrides",
            {"test_memory::test_round_trip": "  ", "test_no_such_module::*": "a reason"},
        ),
    }
    return fake_distribution(
        tmp_path_factory.mktemp("broken-drivers"),
        "ruda-broken-drivers",
        {name: f"ruda_broken_{name}" for name in drivers},
        {
            f"ruda_broken_{name}": driver_source(name, what, driver, server=server, xfails=xfails)
            for name, (driver, server, what, xfails) in drivers.items()
        },
    )


CONFORMANCE = Path(__file__).resolve().parents[1] / "ruda_core" / "testing" / "conformance"


def _only(*modules: str) -> list[str]:
    """pytest options that leave every conformance module but ``modules`` uncollected: a run
    whose ``-k`` selects tests of a few modules need not import the whole suite (seconds)."""
    return [
        f"--ignore={path}"
        for path in sorted(CONFORMANCE.glob("test_*.py"))
        if path.stem not in modules
    ]


def _conformance(
    drivers: Path, tmp_path: Path, device: str, *pytest_args: str, **env_vars: str
) -> dict:
    report = tmp_path / f"{device.replace(':', '_')}-{len(env_vars)}.json"
    env = {**os.environ, "PYTHONPATH": path_with(drivers)}
    for name in ("RUDA_REQUIRE", "RUDA_TEST_DEVICES"):
        env.pop(name, None)
    env["RUDA_BACKENDS"] = device.partition(":")[0]  # the machine's own drivers stay out
    env.update(env_vars)
    args = [
        sys.executable,
        "-m",
        "ruda_core.cli",
        "conformance",
        "--device",
        device,
        "--report",
        str(report),
        "--",
        "-q",
        "-p",
        "no:cacheprovider",
        *pytest_args,
    ]
    result = subprocess.run(
        args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert report.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    matrix = json.loads(report.read_text())["matrix"]
    return {"returncode": result.returncode, "matrix": matrix, "out": result.stdout[-4000:]}


def _outcomes(run: dict, device: str) -> dict[str, str]:
    return {t: row[device] for t, row in run["matrix"].items() if device in row}


#: Per broken driver, its device, the conformance tests it runs (``-k``, within the modules
#: named by the tests listed) and their outcomes: the tests of the contract it breaks fail, the
#: others pass.
BREAKAGES = [
    pytest.param(
        "nosync:0",
        "test_futures or test_round_trip",
        [
            "test_futures::test_resolved_sync_is_a_completion_fence",
            "test_futures::test_sync_of_a_pinned_queue_from_another_thread_fences_that_stream",
            "test_futures::test_result_with_a_timeout_raises_timeout_error_while_pending",
        ],
        [
            "test_futures::test_read_future_yields_one_buffer_per_handle",
            "test_memory::test_round_trip[4096B]",
        ],
        [DECLARED],  # declared by the driver, with its reason
        id="sync-is-no-fence",
    ),
    pytest.param(
        "nowait:0",
        "test_streams",
        [
            "test_streams::test_consumer_thread_reads_what_a_producer_thread_wrote",
            "test_streams::test_kernel_on_another_stream_sees_the_writers_data",
            "test_streams::test_handle_used_after_set_stream_is_ordered_after_its_writer",
        ],
        [
            "test_streams::test_queue_queries_follow_the_seed",
            "test_streams::test_each_thread_has_its_own_stream",
        ],
        [],
        id="streams-never-ordered",
    ),
    pytest.param(
        "recycle:0",
        "test_memory and (reused or trip)",
        [
            "test_memory::test_binding_of_a_dropped_handle_is_refused_after_its_memory_is_reused",
            "test_memory::test_dynamic_count_of_a_dropped_handle_is_refused_after_its_memory_is_reused",
            "test_memory::test_prepared_launch_of_a_dropped_handle_is_refused_after_its_memory_is_reused",
        ],
        [
            "test_memory::test_dropped_input_is_not_reused_before_queued_work_reads_it",
            "test_memory::test_round_trip[4096B]",
        ],
        [],
        id="reused-memory-revives-dropped-bindings",
    ),
]


@pytest.mark.parametrize(("device", "select", "fail", "passing", "xfail"), BREAKAGES)
def test_a_broken_driver_fails_the_tests_of_the_contract_it_breaks(
    drivers, tmp_path, device, select, fail, passing, xfail
):
    modules = {name.partition("::")[0] for name in [*fail, *passing, *xfail]}
    run = _conformance(drivers, tmp_path, device, "-k", select, *_only(*modules))
    assert run["returncode"] != 0, run["out"]
    expected = {
        **dict.fromkeys(fail, "fail"),
        **dict.fromkeys(xfail, "xfail"),
        **dict.fromkeys(passing, "pass"),
    }
    got = _outcomes(run, device)
    assert {name: got.get(name) for name in expected} == expected, run["out"]


def test_overrides_without_a_reason_or_a_test_fail_the_guard(drivers, tmp_path):
    only = _only("test_overrides", "test_memory")
    run = _conformance(
        drivers, tmp_path, "badxfail:0", "-k", "test_overrides or test_round_trip", *only
    )
    guard = run["matrix"]["test_overrides::test_every_override_has_a_reason_and_matches_a_test"]
    assert guard == {"any": "fail"}, run["out"]
    assert "has no reason" in run["out"] and "matches no conformance test" in run["out"]
    got = _outcomes(run, "badxfail:0")
    assert (
        got["test_memory::test_round_trip[0B]"] == "pass"
    )  # an override without reason is not applied


def test_a_required_backend_that_is_missing_fails_instead_of_skipping(drivers, tmp_path):
    # (naming a device that cannot be opened is refused before any test runs: see
    # test_conformance_run.py)
    require = {"RUDA_REQUIRE": "nosuchbackend"}
    only = _only("test_devices")
    run = _conformance(drivers, tmp_path, "cpu", "-k", "test_devices", *only, **require)
    assert run["returncode"] != 0
    assert run["matrix"]["test_devices::test_required_backends_are_present"] == {"any": "fail"}
    got = _outcomes(run, "cpu")
    assert got and "fail" not in got.values(), got

"""The conformance suite's own tools: the tolerance table's comparisons, conformance names and
override patterns, device selection and the report matrix."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.testing.overrides import matches
from ruda_core.testing.report import Cell, Matrix, ResultCollector
from ruda_core.testing.selection import DeviceSelection, parse_names
from ruda_core.testing.tolerance import OpClass, assert_matches, mismatches, ulp_distance


def test_ulp_distance_counts_representable_steps():
    one = np.float32(1.0)
    after = np.nextafter(one, np.float32(2))
    a = np.array([1.0, 1.0, -0.0, np.float32(1e-45), 0.0], dtype=np.float32)
    b = np.array([after, np.nextafter(after, np.float32(2)), 0.0, -np.float32(1e-45), 1e-45],
                 dtype=np.float32)  # fmt: skip
    np.testing.assert_array_equal(ulp_distance(a, b, Elem.F32), [1, 2, 0, 2, 1])
    big = np.array([np.finfo(np.float64).max], dtype=np.float64)
    assert ulp_distance(big, -big, Elem.F64)[0] > 2**62  # no overflow across the sign


def test_special_values_must_match_in_kind():
    want = np.array([math.nan, math.inf, -math.inf, 0.0, 1.0], dtype=np.float32)
    same = np.array([-math.nan, math.inf, -math.inf, -0.0, 1.0], dtype=np.float32)
    assert not mismatches(same, want, Elem.F32, OpClass.TRANSCENDENTAL).any()
    wrong = np.array([1.0, -math.inf, math.inf, math.nan, math.inf], dtype=np.float32)
    assert mismatches(wrong, want, Elem.F32, OpClass.TRANSCENDENTAL).all()


@pytest.mark.parametrize(("cls", "ulps"), [(OpClass.EXACT, 0), (OpClass.DIVISION, 3),
                                           (OpClass.TRANSCENDENTAL, 16)])  # fmt: skip
def test_float_classes_allow_their_ulps(cls, ulps):
    want = np.array([3.0], dtype=np.float32)
    inside = want.view(np.int32) + ulps
    outside = want.view(np.int32) + ulps + 1
    assert not mismatches(inside.view(np.float32), want, Elem.F32, cls).any()
    assert mismatches(outside.view(np.float32), want, Elem.F32, cls).all()


def test_transcendental_small_results_have_an_absolute_floor():
    want = np.array([1e-8], dtype=np.float32)
    got = np.array([1e-8 + 1e-6], dtype=np.float32)  # thousands of ulps, but 1e-6 absolute
    assert not mismatches(got, want, Elem.F32, OpClass.TRANSCENDENTAL).any()
    assert mismatches(got, want, Elem.F32, OpClass.DIVISION).all()


def test_fused_accepts_either_rounding_and_integers_are_exact():
    want, unfused = np.array([1.0], np.float64), np.array([1.5], np.float64)
    assert not mismatches(unfused, want, Elem.F64, OpClass.FUSED, also=unfused).any()
    assert mismatches(
        np.array([7, 8], np.int32), np.array([7, 9], np.int32), Elem.I32
    ).tolist() == [False, True]
    with pytest.raises(AssertionError, match=r"\[1\]\(2\): got 8, want 9"):
        assert_matches(np.array([7, 8]), np.array([7, 9]), Elem.I32, inputs=[np.array([1, 2])])


def test_bf16_values_are_compared_by_their_bit_patterns():
    one, next_up = np.array([0x3F80], np.uint16), np.array([0x3F81], np.uint16)
    assert not mismatches(next_up, one, Elem.BF16, OpClass.TRANSCENDENTAL).any()  # 1 ulp
    assert mismatches(next_up, one, Elem.BF16, OpClass.EXACT).all()


def test_override_patterns():
    assert matches("test_a::test_b", "test_a::test_b[f16-x]")
    assert matches("test_a::*[f16*]", "test_a::test_b[f16-x]")
    assert not matches("test_a::test_b[f32]", "test_a::test_b[f16]")


def test_device_selection_parses_options_and_environment(monkeypatch):
    assert parse_names(["cpu, OpenCL:0", "cpu", ""]) == ["cpu", "opencl:0"]
    monkeypatch.setenv("RUDA_TEST_DEVICES", "cpu,nosuch:3")
    monkeypatch.setenv("RUDA_REQUIRE", "nosuch")
    selection = DeviceSelection.from_options([])
    assert selection.names == ["cpu", "nosuch:3"] and selection.required == {"nosuch"}
    assert selection.open("cpu").name() == "cpu"  # type: ignore[union-attr]
    missing = selection.open("nosuch:3")
    assert missing.required and "does not exist" in missing.message()  # type: ignore[union-attr]
    found = DeviceSelection(["nosuch:3"], selection.required).open("nosuch:3")
    assert found.required and "RUDA_REQUIRE" in found.message()  # type: ignore[union-attr]
    assert DeviceSelection.from_options(["cpu"]).names == ["cpu"]


@pytest.mark.parametrize("name", ["tydev:0", "cpu:7"])
def test_a_device_named_for_the_run_that_does_not_exist_fails_its_tests(monkeypatch, name):
    """A typo (an unknown backend, an index beyond the devices) fails rather than skips, so a
    run of a device that is not there never passes; without RUDA_REQUIRE too."""
    monkeypatch.delenv("RUDA_REQUIRE", raising=False)
    missing = DeviceSelection.from_options([name]).open(name)
    assert missing.required, missing  # type: ignore[union-attr]
    assert "does not exist" in missing.message()  # type: ignore[union-attr]
    found = DeviceSelection([name], frozenset()).open(name)  # found, not named: a skip
    assert not found.required  # type: ignore[union-attr]


def test_matrix_keeps_the_worst_outcome_and_writes_both_formats(tmp_path):
    matrix = Matrix()
    matrix.record("test_m::test_a", "cpu", Cell("pass"))
    matrix.record("test_m::test_a", "cpu", Cell("fail", "boom"))
    matrix.record("test_m::test_a", "cpu", Cell("pass"))
    matrix.record("test_m::test_b", "gpu:0", Cell("unsupported", "unsupported: gpu:0 lacks plane"))
    assert matrix.summary()["cpu"]["fail"] == 1
    matrix.write(tmp_path / "m.json")
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["matrix"] == {
        "test_m::test_a": {"cpu": "fail"},
        "test_m::test_b": {"gpu:0": "unsupported"},
    }
    matrix.write(tmp_path / "m.md")
    text = (tmp_path / "m.md").read_text()
    assert "| `test_m::test_a` | fail |  |" in text and "boom" in text


def test_a_test_whose_worker_died_is_a_failure_in_its_cell():
    """pytest-xdist reports a test whose worker process died (a driver crashing the process)
    without the test's properties: the matrix still places it, by its node id."""
    collector = ResultCollector(["cpu", "opencl:0"])
    crashed = "worker 'gw0' crashed while running it"
    for nodeid in ("a/test_m.py::test_a[f16-opencl:0]", "test_m.py::test_b[cpu]"):
        report = pytest.TestReport(nodeid, ("test_m.py", 1, ""), {}, "failed", crashed, "???")
        collector.pytest_runtest_logreport(report)
    assert collector.matrix.cells == {
        "test_m::test_a[f16]": {"opencl:0": Cell("fail", crashed)},
        "test_m::test_b": {"cpu": Cell("fail", crashed)},
    }

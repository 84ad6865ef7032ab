"""The differential fuzzer keeps each failing program as it fails (``RUDA_FUZZ_FAILURES``), so a
run ended before its report still leaves them, and :func:`replay_failure` runs one again."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import find, settings

import ruda_core as ruda
from ruda_core.errors import RudaWarning, TooManyResources
from ruda_core.ir import Elem
from ruda_core.testing.differential import ShrinkBudget, replay_failure
from ruda_core.testing.random_kernels import Program, programs


@pytest.fixture(scope="module")
def program() -> Program:
    """A random program of i32 and f32 values, the same on every run."""
    once = settings(database=None, derandomize=True)
    return find(programs((Elem.I32, Elem.F32), (Elem.I32,), 256), lambda _: True, settings=once)


def test_a_failing_program_is_written_as_it_fails_and_replays(program, monkeypatch, tmp_path):
    cpu = ruda.client("cpu")
    too_wide = replace(program, dim=(cpu.properties().max_units_per_ruda * 2, 1, 1))
    monkeypatch.setenv("RUDA_FUZZ_FAILURES", str(tmp_path / "failures"))
    budget = ShrinkBudget()
    budget.check(cpu, cpu, program)  # passes: nothing is written
    assert not (tmp_path / "failures").exists()
    with pytest.raises(TooManyResources) as failed:  # refused by the device: a failure too
        budget.check(cpu, cpu, too_wide)
    kept = sorted((tmp_path / "failures").iterdir())
    assert [p.suffix for p in kept] == [".pickle", ".txt"]
    assert kept[0].stem == kept[1].stem and kept[0].stem.startswith("cpu-")
    said = f"{type(failed.value).__name__}: {failed.value}"
    assert kept[1].read_text() == said + "\n"
    with pytest.raises(TooManyResources) as again:
        replay_failure(kept[0], cpu)
    assert str(again.value) == str(failed.value)


def test_a_folder_that_cannot_be_written_is_warned_about_once(program, monkeypatch, tmp_path):
    cpu = ruda.client("cpu")
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("RUDA_FUZZ_FAILURES", str(blocked / "failures"))
    budget = ShrinkBudget()
    width = cpu.properties().max_units_per_ruda
    said = "RUDA_FUZZ_FAILURES=.*cannot write failing programs"
    # the program's own failure still fails the test
    with pytest.warns(RudaWarning, match=said), pytest.raises(TooManyResources):
        budget.check(cpu, cpu, replace(program, dim=(width * 2, 1, 1)))
    assert budget.folder is None


def test_a_file_that_holds_no_program_is_refused(tmp_path):
    path = tmp_path / "other.pickle"
    path.write_bytes(b"\x80\x04K\x07.")  # the pickle of 7
    with pytest.raises(TypeError, match="holds a int, not a fuzzer program"):
        replay_failure(path, ruda.client("cpu"))

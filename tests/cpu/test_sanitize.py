"""The sanitizer's switch on the NumPy device: ``RUDA_SANITIZE``, ``ruda_cpu.sanitize`` and
``ruda_cpu.sanitizing`` apply to the next launch of a kernel already compiled, a refused value
of the variable is named, a sanitized launch gives the same results as a plain one, and the
error survives pickling (it crosses process boundaries with Dask)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ruda_cpu
from ruda_core.errors import SanitizerError, ValidationError
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    SharedMemory,
    kernel,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.testing.runner import read_array

BLOCK = 32


@kernel
def reversed_without_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = buf[u32(BLOCK - 1) - UNIT_POS]  # no barrier: a race


@kernel
def reversed_with_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[u32(BLOCK - 1) - UNIT_POS]


def _run(cpu: ComputeClient, k: object) -> np.ndarray:
    n = 4 * BLOCK
    x = cpu.create_from_slice(np.arange(n, dtype=np.uint32))
    out = cpu.create_from_slice(np.zeros(n, np.uint32))
    k.launch(cpu, RudaCount(4), RudaDim(BLOCK), ArrayArg(x, n), ArrayArg(out, n))  # type: ignore[attr-defined]
    return read_array(cpu, out, np.uint32)


@pytest.fixture(autouse=True)
def _switch_restored(monkeypatch: pytest.MonkeyPatch):
    """Each test starts with the variable unset and leaves the Python switch as it found it."""
    monkeypatch.delenv("RUDA_SANITIZE", raising=False)
    yield
    ruda_cpu.sanitize(None)


def test_the_switch_applies_to_a_kernel_compiled_before(cpu: ComputeClient) -> None:
    want = np.arange(4 * BLOCK, dtype=np.uint32).reshape(4, BLOCK)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(_run(cpu, reversed_without_barrier), want)  # compiled, clean
    with ruda_cpu.sanitizing():
        assert ruda_cpu.is_sanitizing()
        with pytest.raises(SanitizerError) as caught:
            _run(cpu, reversed_without_barrier)
    assert not ruda_cpu.is_sanitizing()
    assert caught.value.kinds == {"read-after-write race": 4 * BLOCK}
    np.testing.assert_array_equal(_run(cpu, reversed_without_barrier), want)  # off again


def test_the_environment_turns_it_on_and_the_python_switch_wins(
    cpu: ComputeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUDA_SANITIZE", "1")
    with pytest.raises(SanitizerError):
        _run(cpu, reversed_without_barrier)
    ruda_cpu.sanitize(False)
    _run(cpu, reversed_without_barrier)
    ruda_cpu.sanitize(None)
    assert ruda_cpu.is_sanitizing()


def test_a_refused_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUDA_SANITIZE", "yes")
    with pytest.raises(ValueError, match="RUDA_SANITIZE='yes'"):
        ruda_cpu.is_sanitizing()


def test_a_sanitized_launch_computes_what_a_plain_one_does(cpu: ComputeClient) -> None:
    plain = _run(cpu, reversed_with_barrier)
    with ruda_cpu.sanitizing():
        checked = _run(cpu, reversed_with_barrier)
    np.testing.assert_array_equal(checked, plain)


def test_the_error_is_a_validation_error_and_pickles(cpu: ComputeClient) -> None:
    with ruda_cpu.sanitizing(), pytest.raises(SanitizerError) as caught:
        _run(cpu, reversed_without_barrier)
    err = caught.value
    assert isinstance(err, ValidationError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.findings, again.count, again.kinds) == (err.findings, err.count, err.kinds)
    assert str(again) == str(err)
    assert "order their accesses with sync_units or atomics" in str(err)  # a race's fix


@kernel
def shifted_left(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS + u32(1)]  # past the end at the last unit


@pytest.mark.parametrize("unchecked", [False, True], ids=["launch", "launch_unchecked"])
def test_an_index_past_the_arrays_length_is_out_of_bounds_inside_a_larger_handle(
    cpu: ComputeClient, unchecked: bool
) -> None:
    """The bound is the launch's array length, not the handle's: an unchecked launch whose
    handles hold more than its ``ArrayArg`` lengths is still reported, as a GPU's bounds
    would be wrong there."""
    x = cpu.create_from_slice(np.arange(2 * BLOCK, dtype=np.uint32))
    out = cpu.create_from_slice(np.zeros(2 * BLOCK, np.uint32))
    launch = shifted_left.launch_unchecked if unchecked else shifted_left.launch
    with (
        ruda_cpu.sanitizing(),
        pytest.raises(SanitizerError, match=rf"x\[{BLOCK}\] by unit") as info,
    ):
        launch(cpu, RudaCount(1), RudaDim(BLOCK), ArrayArg(x, BLOCK), ArrayArg(out, BLOCK))
        cpu.sync().result(timeout=30)
    assert "sync_units" not in str(info.value)  # the ordering hint is for races and barriers

"""torch CPU tensors launched again at one launch site on the NumPy device: the launch checks
exact tensors with one guard of their layouts and finds their bindings by address, and every
change of a tensor between launches still gives the right result or the per-tensor error."""

from __future__ import annotations

import types

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel
from ruda_core.lang.borrow import _MAX_LAYOUTS, _tensor_guards, guarded_types
from ruda_core.runtime import InteropError, LaunchConfigError, RudaCount, RudaDim
from ruda_core.testing.samples import saxpy


@kernel
def copy_lines(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i * 4 < out.len():
        out.store_line(i, x.load_line(i, 4))


@pytest.fixture
def cpu():
    return ruda.client("cpu")


@pytest.fixture(params=["one guard", "per tensor"])
def torch(request):
    """torch, with the launch's one check of exact tensors, or without it (as where torch's
    guards are missing or behave otherwise): both paths must give the same results."""
    torch = pytest.importorskip("torch", reason="torch is not installed: no torch CPU tensors")
    guards = _tensor_guards(torch)
    if guards is None:
        pytest.skip("this torch has no TensorGuards that work as ruda needs")
    for k in (saxpy, copy_lines):  # tensors of an earlier test may have had these addresses
        if k._default is not None:
            k._default._guarded.tables.clear()
    if request.param == "one guard":
        guarded_types[torch.Tensor] = guards
        yield torch
    else:
        guarded_types.pop(torch.Tensor, None)
        yield torch
        guarded_types[torch.Tensor] = guards


def run(cpu, a, x, y, out):
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), a, x, y, out)
    cpu.sync().result(timeout=30)


def values(t) -> np.ndarray:
    """A copy of ``t``'s elements (``t.numpy()`` would pin its storage: no ``resize_`` after)."""
    return t.detach().clone().numpy().ravel()


def test_launches_again_give_numpys_results_and_take_the_remembered_tensors(cpu, torch):
    rng = np.random.default_rng(7)
    xs, ys = rng.standard_normal(64, dtype=np.float32), rng.standard_normal(64, dtype=np.float32)
    x, y, out = torch.from_numpy(xs), torch.from_numpy(ys), torch.zeros(64)
    short = torch.zeros(32)
    for a in (2.0, -0.5, 3.0):  # two layouts taking turns at one launch site
        run(cpu, a, x, y, out)
        np.testing.assert_array_equal(values(out), np.float32(a) * xs + ys)
        run(cpu, a, x, y, short)
        np.testing.assert_array_equal(values(short), np.float32(a) * xs[:32] + ys[:32])
    remembered = saxpy._default._guarded.tables.get(cpu, {})
    addresses = (x.data_ptr(), y.data_ptr(), out.data_ptr())
    assert (addresses in remembered) is (torch.Tensor in guarded_types)


def test_a_tensor_changed_between_launches_is_seen(cpu, torch):
    xs = np.arange(64, dtype=np.float32)
    x, y, out = torch.from_numpy(xs.copy()), torch.ones(64), torch.zeros(64)
    run(cpu, 1.0, x, y, out)
    run(cpu, 1.0, x, y, out)  # remembered
    out.fill_(-1.0)
    out.resize_(32)  # fewer elements at the same address
    run(cpu, 2.0, x, y, out)
    np.testing.assert_array_equal(values(out), 2 * xs[:32] + 1)
    out.resize_(64)  # the same memory again: the launch wrote 32 elements, not 64
    np.testing.assert_array_equal(values(out)[32:], np.full(32, -1.0, np.float32))
    out.resize_(1 << 16)  # more: new memory
    run(cpu, 3.0, x, y, out)
    np.testing.assert_array_equal(values(out[:64]), 3 * xs + 1)
    old = out.detach()  # the memory out had
    old[:64] = -1.0
    out.data = torch.zeros(64)  # same layout, other memory
    run(cpu, 4.0, x, y, out)
    np.testing.assert_array_equal(values(out), 4 * xs + 1)
    assert bool((old[:64] == -1).all())
    out.data = out.view(8, 8)  # another shape at the same address
    run(cpu, 5.0, x, y, out)
    np.testing.assert_array_equal(values(out), 5 * xs + 1)
    x.requires_grad_()  # borrowed as it is, outside autograd
    run(cpu, 6.0, x, y, out.view(64))
    np.testing.assert_array_equal(values(out), 6 * xs + 1)


def test_views_of_the_same_memory_taking_turns_keep_their_own_lengths(cpu, torch):
    xs = np.arange(64, dtype=np.float32)
    x, y, buf = torch.from_numpy(xs.copy()), torch.ones(64), torch.zeros(64)
    for a in (1.0, 2.0, 3.0):
        for n in (64, 48, 32, 16, 8, 4):  # more than are remembered at one address
            buf.fill_(-1.0)
            run(cpu, a, x, y, buf[:n])
            np.testing.assert_array_equal(values(buf), np.r_[a * xs[:n] + 1, np.full(64 - n, -1.0)])
    key = (x.data_ptr(), y.data_ptr(), buf.data_ptr())
    entry, layouts = saxpy._default._guarded.tables.get(cpu, {}).get(key), 0
    while entry is not None:
        entry, layouts = entry[-1], layouts + 1
    if torch.Tensor in guarded_types:
        assert 1 <= layouts <= _MAX_LAYOUTS
    else:
        assert layouts == 0


def test_a_tensor_changed_between_launches_is_refused_as_the_first_time(cpu, torch):
    x, y, out = torch.arange(64, dtype=torch.float32), torch.ones(64), torch.full((64,), -1.0)
    scratch = torch.zeros(64)
    run(cpu, 1.0, x, y, scratch)
    run(cpu, 1.0, x, y, scratch)  # remembered
    with pytest.raises(LaunchConfigError, match="f64 elements"):  # another tensor, another type
        run(cpu, 1.0, x, y, out.double())
    with pytest.raises(LaunchConfigError, match="i32 elements"):  # same address, other type
        run(cpu, 1.0, x, y, scratch.view(torch.int32))
    with pytest.raises(LaunchConfigError, match="not contiguous"):  # same address and length
        run(cpu, 1.0, x, y, scratch.view(8, 8).t())
    scratch.data = torch.zeros(64, dtype=torch.float64)  # the same tensor, another type
    with pytest.raises(LaunchConfigError, match="f64 elements"):
        run(cpu, 1.0, x, y, scratch)
    with pytest.raises(InteropError, match="layout"):  # no storage
        run(cpu, 1.0, x, y, torch.zeros(64).to_sparse())
    with pytest.raises(ValueError, match="meta"):  # no memory: its data_ptr() is 0
        run(cpu, 1.0, x, y, torch.zeros(64, device="meta"))
    run(cpu, 1.0, x, y, out)  # nothing ran before
    np.testing.assert_array_equal(values(out), np.arange(64, dtype=np.float32) + 1)


def test_a_tensor_passed_twice_is_remembered_as_such(cpu, torch):
    xs = np.arange(64, dtype=np.float32)
    x, acc = torch.from_numpy(xs.copy()), torch.zeros(64)
    for _ in range(3):  # acc = 2 x + acc, in place
        run(cpu, 2.0, x, acc, acc)
    np.testing.assert_array_equal(values(acc), 6 * xs)
    run(cpu, 2.0, x, acc, acc.view(64))  # the same memory through another tensor
    run(cpu, 2.0, x, acc, torch.zeros(64))  # another tensor at the remembered position
    run(cpu, 2.0, x, acc, acc)
    np.testing.assert_array_equal(values(acc), 10 * xs)
    with pytest.raises(LaunchConfigError, match="i32 elements"):  # same address, other layout
        run(cpu, 2.0, x, acc, acc.view(torch.int32))
    run(cpu, 2.0, x, acc, acc[:32])
    np.testing.assert_array_equal(values(acc), np.concatenate([12 * xs[:32], 10 * xs[32:]]))


def test_remembered_tensors_in_a_capture_are_replayed(cpu, torch):
    x, y, out = torch.arange(64, dtype=torch.float32), torch.ones(64), torch.zeros(64)
    run(cpu, 1.0, x, y, out)
    run(cpu, 1.0, x, y, out)  # remembered
    out.zero_()
    with cpu.capture() as graph:  # a capture keeps memory through handles, not borrowed tensors
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x, y, out)
    assert not bool(out.any())
    x += 1
    graph.replay()
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(values(out), 2 * values(x) + 1)


def test_a_line_kernel_refuses_a_remembered_tensor_moved_off_a_line_boundary(cpu, torch):
    base, out = torch.arange(32, dtype=torch.float32), torch.zeros(16)
    start = next(k for k in range(4) if base[k:].data_ptr() % 16 == 0)
    for _ in range(2):
        copy_lines.launch(cpu, RudaCount(1), RudaDim(4), base[start : start + 16], out)
    with pytest.raises(LaunchConfigError, match="multiple of 16 B"):
        copy_lines.launch(cpu, RudaCount(1), RudaDim(4), base[start + 1 : start + 17], out)
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(values(out), values(base[start : start + 16]))


class _Tensor:
    """Enough of a tensor for :func:`_tensor_guards`' probe."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape

    def double(self) -> _Tensor:
        return _Tensor(*self.shape)

    def t(self) -> _Tensor:
        return _Tensor(*reversed(self.shape))


def _torch_whose_guards_check(check) -> types.ModuleType:
    """A stand-in for torch whose ``TensorGuards(*templates, ...).check(*tensors)`` is
    ``check(templates, tensors)``."""

    def guards(*templates, **_):
        return types.SimpleNamespace(check=lambda *tensors: check(templates, tensors))

    fake = types.ModuleType("torch")  # hashable, as the probe's cache needs
    dynamo = types.SimpleNamespace(guards=types.SimpleNamespace(TensorGuards=guards))
    vars(fake).update(zeros=_Tensor, _C=types.SimpleNamespace(_dynamo=dynamo))
    return fake


def test_torchs_guards_are_used_only_where_they_work_as_expected():
    same = _torch_whose_guards_check(lambda ts, us: ts == us)  # compared by identity
    assert _tensor_guards(same) is same._C._dynamo.guards.TensorGuards
    assert _tensor_guards(_torch_whose_guards_check(lambda ts, us: True)) is None  # any size
    assert _tensor_guards(_torch_whose_guards_check(lambda ts, us: False)) is None  # none
    assert _tensor_guards(types.ModuleType("torch")) is None  # no TensorGuards

"""The CUDA runtime's native LayerNorm on a GPU: the native kernels are the ones that run, their
results match the float64 reference within
:data:`ruda_core.testing.layer_norm_reference.TOLERANCE` for f32, f16 and bf16 (f64 runs the
portable kernels) on the benchmark's shapes and on widths that are not a multiple of a vector,
and their gradients are the same bits on every run; a small backward is one launch, with the
bits of the two-launch form, on several streams at once.

Skips, saying why, without CuPy or a CUDA device (``RUDA_REQUIRE=cuda`` makes that a failure).
Run on a GPU machine: ``pytest tests/cuda/test_native_layer_norm.py``.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.ops import layer_norm, layer_norm_backward
from ruda_core.runtime.layer_norm_args import TensorBuffer
from ruda_core.testing.layer_norm_reference import (
    TOLERANCE,
    assert_close,
    download,
    make_case,
    reference,
    upload,
)
from ruda_cuda.ops import layer_norm as native
from ruda_cuda.ops.layer_norm import backward_plan

ELEMS = [Elem.F32, Elem.F16, Elem.BF16, Elem.F64]
#: benchmarks/layer_norm.py's shapes
BENCHMARK_SHAPES = [(8192, 1024), (8192, 4096), (4096, 16384)]
#: widths that are not a multiple of a vector, or of a warp, or beyond the backward's
#: register rows (16385 runs the portable backward)
ODD_SHAPES = [(5, 1), (9, 7), (40, 33), (70, 1000), (11, 4097), (6, 16385)]
#: backwards few enough partial sums to reduce in the last block of their one launch
FUSED_SHAPES = [(1, 32), (9, 7), (64, 256), (128, 256), (100, 200)]
NATIVE = "ruda_layer_norm_"
NAMES = ("grad_input", "grad_weight", "grad_bias")


@pytest.fixture
def cuda(open_device):
    return open_device("cuda:0")


def _kernels(client, fn) -> tuple[object, list[str]]:
    """``fn()``'s result and the names of the kernels it ran."""
    result, duration = client.profile(fn)
    return result, [e.name for e in duration.trace.events if e.kind == "kernel"]


def _check(client, elem: Elem, shape: tuple[int, int], seed: int = 0) -> None:
    case = make_case(shape, elem.numpy, seed=seed)
    expected = reference(case)
    x, w = upload(client, case.x), upload(client, case.weight)
    out, mean, rstd = layer_norm(client, x, w, upload(client, case.bias))
    tol, stats = TOLERANCE[elem], TOLERANCE[Elem.F64 if elem is Elem.F64 else Elem.F32]
    assert (out.elem, out.shape, mean.shape) == (elem, shape, shape[:1])
    assert_close("out", download(client, out), expected.out, tol)
    assert_close("mean", download(client, mean), expected.mean, stats)
    assert_close("rstd", download(client, rstd), expected.rstd, stats)
    grads = layer_norm_backward(client, x, w, upload(client, case.grad), mean, rstd)
    wanted = (expected.grad_input, expected.grad_weight, expected.grad_bias)
    for name, buf, want in zip(NAMES, grads, wanted, strict=True):
        assert buf.elem is elem, name
        assert_close(name, download(client, buf), want, tol)


def test_the_cuda_runtime_supplies_native_layer_norm(cuda):
    assert cuda.runtime.has_native_layer_norm()


@pytest.mark.parametrize("elem", [Elem.F32, Elem.F16, Elem.BF16], ids=str)
@pytest.mark.parametrize("shape", BENCHMARK_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_native_kernels_are_the_ones_that_run(cuda, elem, shape):
    case = make_case(shape, elem.numpy)
    x, w = upload(cuda, case.x), upload(cuda, case.weight)
    (_, mean, rstd), forward = _kernels(cuda, lambda: layer_norm(cuda, x, w))
    _, backward = _kernels(
        cuda, lambda: layer_norm_backward(cuda, x, w, upload(cuda, case.grad), mean, rstd)
    )
    assert len(forward) == 1 and forward[0].startswith(f"{NATIVE}forward_{elem.value}_"), forward
    assert len(backward) == 2, backward
    assert backward[0].startswith(f"{NATIVE}backward_{elem.value}_"), backward
    assert backward[1] == f"{NATIVE}finish_{elem.value}", backward


def test_f64_and_the_widest_backward_run_the_portable_kernels(cuda):
    case = make_case((6, 16385), np.float32)
    x, w = upload(cuda, case.x), upload(cuda, case.weight)
    (_, mean, rstd), forward = _kernels(cuda, lambda: layer_norm(cuda, x, w))
    _, backward = _kernels(
        cuda, lambda: layer_norm_backward(cuda, x, w, upload(cuda, case.grad), mean, rstd)
    )
    assert all(n.startswith(NATIVE) for n in forward), forward
    assert not any(n.startswith(NATIVE) for n in backward), backward
    case = make_case((3, 64), np.float64)
    x, w = upload(cuda, case.x), upload(cuda, case.weight)
    _, forward = _kernels(cuda, lambda: layer_norm(cuda, x, w))
    assert not any(n.startswith(NATIVE) for n in forward), forward


@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS, ids=str)
@pytest.mark.parametrize("shape", BENCHMARK_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_benchmark_shapes_match_the_reference(cuda, elem, shape):
    _check(cuda, elem, shape)


@pytest.mark.parametrize("elem", ELEMS, ids=str)
@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_odd_widths_match_the_reference(cuda, elem, shape):
    _check(cuda, elem, shape, seed=1)


@pytest.mark.parametrize("elem", [Elem.F32, Elem.BF16], ids=str)
def test_without_bias_and_without_rows(cuda, elem):
    case = make_case((12, 1000), elem.numpy, bias=False, seed=2)
    expected = reference(case)
    out, _, _ = layer_norm(cuda, upload(cuda, case.x), upload(cuda, case.weight))
    assert_close("out", download(cuda, out), expected.out, TOLERANCE[elem])
    empty = make_case((0, 1000), elem.numpy)
    x, w = upload(cuda, empty.x), upload(cuda, empty.weight)
    out, mean, rstd = layer_norm(cuda, x, w)
    assert out.shape == (0, 1000) and mean.shape == (0,)
    _, grad_weight, grad_bias = layer_norm_backward(cuda, x, w, upload(cuda, empty.x), mean, rstd)
    assert not download(cuda, grad_weight).any() and not download(cuda, grad_bias).any()


def test_operands_aligned_to_one_element_are_read_element_by_element(cuda):
    """An input 4 bytes into its memory cannot be read 16 bytes at a time: the kernels take
    narrower vectors and give the same results."""
    case = make_case((33, 4096), np.float32, seed=3)
    expected = reference(case)
    raw = np.concatenate([np.zeros(1, np.float32), case.x.ravel()])
    whole = upload(cuda, raw)
    x = TensorBuffer(whole.handle.offset(4), case.x.shape, (4096, 1), Elem.F32)
    w = upload(cuda, case.weight)
    out, mean, rstd = layer_norm(cuda, x, w, upload(cuda, case.bias))
    assert_close("out", download(cuda, out), expected.out, TOLERANCE[Elem.F32])
    grad_input, _, _ = layer_norm_backward(cuda, x, w, upload(cuda, case.grad), mean, rstd)
    assert_close("grad_input", download(cuda, grad_input), expected.grad_input, 2e-6)


@pytest.mark.parametrize(
    ("elem", "shape"),
    [(Elem.BF16, (8192, 1024)), (Elem.F32, (8192, 4096)), (Elem.F32, (4096, 16384))],
    ids=lambda v: str(v) if isinstance(v, Elem) else f"{v[0]}x{v[1]}",
)
def test_gradients_are_the_same_bits_every_run(cuda, elem, shape):
    case = make_case(shape, elem.numpy, seed=4)
    x, w, dy = upload(cuda, case.x), upload(cuda, case.weight), upload(cuda, case.grad)
    _, mean, rstd = layer_norm(cuda, x, w)
    first = [download(cuda, b).copy() for b in layer_norm_backward(cuda, x, w, dy, mean, rstd)]
    second = [download(cuda, b) for b in layer_norm_backward(cuda, x, w, dy, mean, rstd)]
    for name, a, b in zip(NAMES, first, second, strict=True):
        assert a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("elem", [Elem.F32, Elem.BF16], ids=str)
@pytest.mark.parametrize("shape", FUSED_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_small_backward_is_one_launch_with_the_bits_of_two(cuda, elem, shape):
    case = make_case(shape, elem.numpy, seed=5)
    expected = reference(case)
    x, w, dy = upload(cuda, case.x), upload(cuda, case.weight), upload(cuda, case.grad)
    _, mean, rstd = layer_norm(cuda, x, w, upload(cuda, case.bias))
    grads, kernels = _kernels(cuda, lambda: layer_norm_backward(cuda, x, w, dy, mean, rstd))
    assert len(kernels) == 1 and kernels[0].startswith(f"{NATIVE}backward_fused_"), kernels
    fused = [download(cuda, b).copy() for b in grads]
    wanted = (expected.grad_input, expected.grad_weight, expected.grad_bias)
    for name, got, want in zip(NAMES, fused, wanted, strict=True):
        assert_close(name, got, want, TOLERANCE[elem])
    plan = backward_plan(shape, elem, 0, cuda.properties().compute_units)
    assert plan is not None and plan.fused is not None
    bindings = [b.handle.binding() for b in (x, w, dy, mean, rstd)]
    two = dataclasses.replace(plan, fused=None).run(cuda, *bindings)
    for name, a, b in zip(NAMES, fused, two, strict=True):
        assert a.tobytes() == download(cuda, b).tobytes(), name


def test_fused_backwards_on_several_streams_at_once_are_exact(cuda):
    """Each stream has its own counter: threads (each on its own stream) running the same
    small backward at once get the bits of one run alone, call after call."""
    cases = [make_case((64, 256), np.float32, seed=10 + k) for k in range(4)]
    operands = []
    for case in cases:
        x, w, dy = upload(cuda, case.x), upload(cuda, case.weight), upload(cuda, case.grad)
        _, mean, rstd = layer_norm(cuda, x, w)
        operands.append((x, w, dy, mean, rstd))
    alone = [
        [download(cuda, b).copy() for b in layer_norm_backward(cuda, *ops)] for ops in operands
    ]
    failures: list[str] = []

    def work(k: int) -> None:
        for call in range(50):
            grads = layer_norm_backward(cuda, *operands[k])
            for name, buf, want in zip(NAMES, grads, alone[k], strict=True):
                if download(cuda, buf).tobytes() != want.tobytes():
                    failures.append(f"thread {k}, call {call}: {name}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:5]


def test_threads_that_come_and_go_share_the_scratches_of_the_servers_streams(cuda):
    """A thread's stream is new, but a fused backward's scratch belongs to the CUDA stream its
    stream maps to: threads that come and go leave at most one scratch per server stream."""
    case = make_case((64, 256), np.float32, seed=20)
    x, w, dy = upload(cuda, case.x), upload(cuda, case.weight), upload(cuda, case.grad)
    _, mean, rstd = layer_norm(cuda, x, w)
    want = [download(cuda, b).copy() for b in layer_norm_backward(cuda, x, w, dy, mean, rstd)]
    got: list[list[np.ndarray]] = []

    def once() -> None:
        got.append([download(cuda, b) for b in layer_norm_backward(cuda, x, w, dy, mean, rstd)])

    for _ in range(cuda.server.streams.size + 8):
        t = threading.Thread(target=once)
        t.start()
        t.join()
    assert len(got) == cuda.server.streams.size + 8
    for grads in got:
        assert [a.tobytes() for a in grads] == [b.tobytes() for b in want]
    plans = [p for p in native._backward_plans.values() if p is not None and p.fused is not None]
    assert plans and all(len(p.scratches) <= cuda.server.streams.size for p in plans)

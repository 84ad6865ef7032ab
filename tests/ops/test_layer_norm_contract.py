"""The contract of ``ruda_core.ops.layer_norm`` / ``layer_norm_backward`` beyond accuracy:
operand checks that raise before anything is enqueued (on the first and on repeated calls),
accepted operand types, empty inputs, every kernel variant and reduction path, rows beyond the
cube count, and the dispatch to a runtime's native LayerNorm."""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import re

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.ir import Elem, ExecutionMode
from ruda_core.ops import layer_norm, layer_norm_backward, portable_layer_norm
from ruda_core.ops import native as native_ops
from ruda_core.ops.geometry import HeldGeometry, RowGeometry, held_geometry, row_geometry
from ruda_core.runtime import (
    BoundsCheckMode,
    CaptureError,
    ComputeClient,
    DeviceId,
    Feature,
    InvalidHandle,
    LaunchConfigError,
    LayoutError,
    PluginError,
    UnsupportedFeature,
)
from ruda_core.runtime.layer_norm_args import TensorBuffer
from ruda_core.tensor import RudaTensor
from ruda_core.testing.layer_norm_reference import (
    TOLERANCE,
    assert_close,
    download,
    make_case,
    reference,
    upload,
)
from ruda_cpu import CpuRuntime
from ruda_cpu.server import CpuServer

#: The module (the package's ``layer_norm`` is its function), whose plan tables the tests empty.
LAYER_NORM = importlib.import_module("ruda_core.ops.layer_norm")
#: The planning module, whose choices the tests replace.
PLAN = importlib.import_module("ruda_core.ops.layer_norm_plan")
_ids = itertools.count(200)


@pytest.fixture
def replan(monkeypatch):
    """Empty the plan tables around a test that changes how plans are chosen."""
    monkeypatch.setattr(LAYER_NORM, "_forward_plans", {})
    monkeypatch.setattr(LAYER_NORM, "_backward_plans", {})
    return monkeypatch


@pytest.fixture
def cpu() -> ComputeClient:
    """A client of a fresh NumPy-device server that no other test shares (exact accounting)."""
    index = next(_ids)
    return ComputeClient(("ops-cpu", index), CpuServer(DeviceId(0, index)), None, CpuRuntime)


def _buffer(client, shape, elem=Elem.F32, strides=None, nbytes=None):
    size = int(np.prod(shape))
    handle = client.create_from_slice(bytes(size * elem.nbytes if nbytes is None else nbytes))
    if strides is None:
        strides = tuple(int(s) for s in np.cumprod((1, *shape[:0:-1]))[::-1])
    return TensorBuffer(handle, shape, strides, elem)


def _as_buffers(results):
    """An operation's results (RudaTensors) as the buffers over the same memory."""
    return tuple(TensorBuffer(r.handle, r.shape, r.strides, r.elem) for r in results)


# -- operand checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"input": ((12,), None)}, LayoutError, r"expected \(rows, features\)"),
        ({"input": ((2, 3, 2), None)}, LayoutError, r"expected \(rows, features\)"),
        ({"input": ((4, 0), None)}, LayoutError, "features >= 1"),
        ({"input": ((4, 3), (1, 4))}, LayoutError, "not contiguous"),
        ({"input": ((4, 3), (5, 1))}, LayoutError, "not contiguous"),
        ({"weight": ((4,), None)}, LayoutError, r"weight has shape \(4,\); expected \(3,\)"),
        ({"bias": ((3, 1), None)}, LayoutError, r"bias has shape \(3, 1\)"),
    ],
    ids=["rank1", "rank3", "no-features", "transposed", "padded", "weight", "bias"],
)
def test_layout_errors(cpu, change, error, message):
    shapes = {"input": ((4, 3), None), "weight": ((3,), None), "bias": ((3,), None)}
    shapes.update(change)
    args = {name: _buffer(cpu, shape, strides=strides) for name, (shape, strides) in shapes.items()}
    before = cpu.memory_usage().number_allocs
    with pytest.raises(error, match=message):
        layer_norm(cpu, args["input"], args["weight"], args["bias"])
    assert cpu.memory_usage().number_allocs == before


def test_small_handle_is_refused(cpu):
    x = _buffer(cpu, (4, 3), nbytes=40)
    with pytest.raises(LayoutError, match="needs 48 bytes of f32, but its handle holds 40"):
        layer_norm(cpu, x, _buffer(cpu, (3,)))


@pytest.mark.parametrize(
    ("input_elem", "weight_elem", "message"),
    [
        (Elem.I32, Elem.I32, "input is i32; expected f16, bf16, f32 or f64"),
        (Elem.F32, Elem.F64, r"weight is f64; expected f32 \(the input's element type\)"),
    ],
)
def test_element_type_errors(cpu, input_elem, weight_elem, message):
    x = _buffer(cpu, (4, 3), input_elem)
    with pytest.raises(LaunchConfigError, match=message):
        layer_norm(cpu, x, _buffer(cpu, (3,), weight_elem))


def test_element_type_the_device_lacks(client):
    lacking = [e for e in (Elem.F16, Elem.BF16, Elem.F64) if not client.features().supports(e)]
    if not lacking:
        pytest.skip(f"{client.device} supports every float type")
    elem = lacking[0]
    x = _buffer(client, (4, 3), elem)
    with pytest.raises(UnsupportedFeature, match=rf"{elem}, which {client.device} does not"):
        layer_norm(client, x, _buffer(client, (3,), elem))


@pytest.mark.parametrize("epsilon", [-1e-5, float("nan"), float("inf"), "1e-5", True, 1e300])
def test_bad_epsilon(cpu, epsilon):
    with pytest.raises(LaunchConfigError, match="layer_norm: epsilon"):
        layer_norm(cpu, _buffer(cpu, (4, 3)), _buffer(cpu, (3,)), epsilon=epsilon)


def test_operand_of_another_type(cpu):
    with pytest.raises(TypeError, match="input must be a TensorBuffer or a RudaTensor"):
        layer_norm(cpu, np.zeros((4, 3), np.float32), _buffer(cpu, (3,)))


@pytest.mark.parametrize(
    ("name", "shape", "elem", "error", "message"),
    [
        ("grad", (4, 4), Elem.F16, LayoutError, r"grad has shape \(4, 4\); expected \(4, 3\)"),
        ("grad", (4, 3), Elem.F32, LaunchConfigError, "grad is f32; expected f16"),
        ("mean", (3,), Elem.F32, LayoutError, r"mean has shape \(3,\); expected \(4,\)"),
        ("mean", (4,), Elem.F16, LaunchConfigError, "the accumulator type of f16 input"),
        ("rstd", (4,), Elem.F64, LaunchConfigError, r"rstd is f64; expected f32"),
    ],
)
def test_backward_operand_errors(cpu, name, shape, elem, error, message):
    args = {
        "input": _buffer(cpu, (4, 3), Elem.F16),
        "weight": _buffer(cpu, (3,), Elem.F16),
        "grad": _buffer(cpu, (4, 3), Elem.F16),
        "mean": _buffer(cpu, (4,)),
        "rstd": _buffer(cpu, (4,)),
    }
    args[name] = _buffer(cpu, shape, elem)
    before = cpu.memory_usage().number_allocs
    with pytest.raises(error, match=message):
        layer_norm_backward(cpu, **args)
    assert cpu.memory_usage().number_allocs == before


# -- operands, shapes and paths ----------------------------------------------------------------


def test_ruda_tensor_operands(cpu):
    case = make_case((5, 40), np.float32, seed=8)
    expected = reference(case)
    x, w = RudaTensor.from_numpy(cpu, case.x), RudaTensor.from_numpy(cpu, case.weight)
    out, mean, rstd = layer_norm(cpu, x, w, RudaTensor.from_numpy(cpu, case.bias))
    assert isinstance(out, RudaTensor)
    assert_close("out", out.to_numpy(cpu), expected.out, TOLERANCE[Elem.F32])
    grads = layer_norm_backward(cpu, x, w, RudaTensor.from_numpy(cpu, case.grad), mean, rstd)
    assert all(isinstance(g, RudaTensor) for g in grads)
    assert_close("grad_weight", grads[1].to_numpy(cpu), expected.grad_weight, 2e-6)


def test_single_feature_rows_accept_any_stride(cpu):
    """An axis of extent 1 may have any stride: (rows, 1) with stride (1, 7) is contiguous."""
    x = upload(cpu, np.arange(4, dtype=np.float32).reshape(4, 1))
    x = TensorBuffer(x.handle, x.shape, (1, 7), x.elem)
    out, mean, rstd = layer_norm(cpu, x, upload(cpu, np.ones(1, np.float32)))
    np.testing.assert_array_equal(download(cpu, out), np.zeros((4, 1), np.float32))
    np.testing.assert_array_equal(download(cpu, mean), np.arange(4, dtype=np.float32))
    np.testing.assert_allclose(download(cpu, rstd), np.full(4, 1e-5**-0.5), rtol=1e-6)


def test_no_rows(client):
    x = upload(client, np.zeros((0, 5), np.float32))
    w = upload(client, np.ones(5, np.float32))
    out, mean, rstd = layer_norm(client, x, w)
    assert (out.shape, mean.shape, rstd.shape) == ((0, 5), (0,), (0,))
    grads = layer_norm_backward(client, x, w, x, mean, rstd)
    assert grads[0].shape == (0, 5)
    np.testing.assert_array_equal(download(client, grads[1]), np.zeros(5, np.float32))
    np.testing.assert_array_equal(download(client, grads[2]), np.zeros(5, np.float32))


def test_a_call_inside_a_capture_is_refused(client):
    """A capture records launches and copies only: a call, which allocates its results, is
    refused before anything is enqueued, planned or not (so no replay ever runs one)."""
    case = make_case((4, 32), np.float32, seed=9)
    x, w, dy = upload(client, case.x), upload(client, case.weight), upload(client, case.grad)
    out, mean, rstd = layer_norm(client, x, w)
    layer_norm_backward(client, x, w, dy, mean, rstd)
    for call in (
        lambda: layer_norm(client, x, w),
        lambda: layer_norm_backward(client, x, w, dy, mean, rstd),
    ):
        with pytest.raises(CaptureError, match="being captured"), client.capture():
            call()
    np.testing.assert_allclose(
        download(client, layer_norm(client, x, w)[0]), download(client, out), rtol=0, atol=0
    )


def _check_both_directions(client, shape, seed):
    case = make_case(shape, np.float32, seed=seed)
    expected = reference(case)
    x, w = upload(client, case.x), upload(client, case.weight)
    out, mean, rstd = layer_norm(client, x, w, upload(client, case.bias))
    grads = layer_norm_backward(client, x, w, upload(client, case.grad), mean, rstd)
    assert_close("out", download(client, out), expected.out, TOLERANCE[Elem.F32])
    assert_close("rstd", download(client, rstd), expected.rstd, TOLERANCE[Elem.F32])
    for name, buf, want in zip(
        ("grad_input", "grad_weight", "grad_bias"),
        grads,
        (expected.grad_input, expected.grad_weight, expected.grad_bias),
        strict=True,
    ):
        assert_close(name, download(client, buf), want, TOLERANCE[Elem.F32])


#: Forced held geometries: (a plane per row, reduce a cube through planes).
VARIANTS = {
    "plane-rows": (True, True),
    "cube-planes": (False, True),
    "cube-shared": (False, False),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("shape", [(9, 1000), (37, 33)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_held_variant(client, replan, variant, shape):
    """Each way of holding a row in registers, forced where the device can run it."""
    plane_rows, planes = VARIANTS[variant]
    props = client.properties()
    has_planes = client.features().has(Feature.PLANE) and props.plane_dim > 1
    if planes and not has_planes:
        pytest.skip(f"{client.device} has no planes")
    if plane_rows and not client.features().has(Feature.PARTIAL_PLANE):
        pytest.skip(f"{client.device} holds rows in cubes only (no partial planes)")

    def forced(client: ComputeClient, features: int, line: int) -> HeldGeometry:
        lines = features // line
        if plane_rows:
            plane = props.plane_dim
            items = 1 << max(-(-lines // plane) - 1, 0).bit_length()
            return HeldGeometry(plane * 4, line, items, plane_rows=True, planes=True)
        block = 64 if not planes else min(64, props.plane_dim**2)
        items = 1 << max(-(-lines // block) - 1, 0).bit_length()
        return HeldGeometry(block, line, items, plane_rows=False, planes=planes)

    replan.setattr(PLAN, "held_geometry", forced)
    _check_both_directions(client, shape, seed=9)


@pytest.mark.parametrize("planes", [True, False], ids=["planes", "shared"])
def test_strided_kernels_for_rows_beyond_registers(client, replan, planes):
    """The strided kernels (rows wider than registers hold), on both reduction paths."""
    if planes and not row_geometry(client, 1000).planes:
        pytest.skip(f"{client.device} reduces without planes")

    def shared_only(client: ComputeClient, features: int) -> RowGeometry:
        return RowGeometry(block=row_geometry(client, features).block, planes=planes)

    replan.setattr(PLAN, "held_geometry", lambda client, features, line: None)
    replan.setattr(PLAN, "row_geometry", shared_only)
    _check_both_directions(client, (9, 1000), seed=10)


@pytest.mark.parametrize("held", [True, False], ids=["held", "strided"])
def test_rows_beyond_the_cube_count(client, replan, held):
    """Fewer cubes than rows: each group strides over rows."""
    replan.setattr(PLAN, "_max_cubes", lambda client: 3)
    if not held:
        replan.setattr(PLAN, "held_geometry", lambda client, features, line: None)
    _check_both_directions(client, (29, 24), seed=11)


def test_misaligned_operands_take_narrower_lines(client):
    """Operands viewed at an offset that is not a multiple of 16 bytes are read in lines that
    their alignment allows (here scalars), and give the same results."""
    case = make_case((6, 64), np.float32, seed=12)
    expected = reference(case)
    host = np.concatenate([np.zeros(1, np.float32), case.x.ravel()])
    handle = client.create_from_slice(host)
    x = TensorBuffer(handle.offset(4), case.x.shape, (64, 1), Elem.F32)
    out, _, _ = layer_norm(client, x, upload(client, case.weight), upload(client, case.bias))
    assert_close("out", download(client, out), expected.out, TOLERANCE[Elem.F32])


# -- repeated calls ----------------------------------------------------------------------------


def test_repeated_calls_compute_with_their_own_operands(client):
    """A call that reuses a plan computes from its own operands into new results."""
    first, second = (make_case((5, 40), np.float32, seed=s) for s in (13, 14))
    results = []
    for case in (first, second, first):
        x, w = upload(client, case.x), upload(client, case.weight)
        out, mean, rstd = layer_norm(client, x, w, upload(client, case.bias))
        grads = layer_norm_backward(client, x, w, upload(client, case.grad), mean, rstd)
        results.append([download(client, r) for r in (out, *grads)])
        expected = reference(case)
        assert_close("out", results[-1][0], expected.out, TOLERANCE[Elem.F32])
        assert_close("grad_weight", results[-1][2], expected.grad_weight, TOLERANCE[Elem.F32])
    assert all(a.tobytes() == b.tobytes() for a, b in zip(results[0], results[2], strict=True))


@pytest.mark.parametrize("call", [layer_norm, portable_layer_norm], ids=["dispatch", "portable"])
def test_a_replayed_calls_results_are_independent_and_outlive_their_operands(client, call):
    """The results of a repeated call are buffers of exactly their tensors' bytes, none
    overlapping another, and each keeps the one allocation alive: with its operands and the
    other results dropped, later calls (taking the freed memory) leave it as computed."""
    case = make_case((6, 40), np.float32, seed=23)
    expected = reference(case)
    call(client, *(upload(client, a) for a in (case.x, case.weight, case.bias)))
    out, mean, rstd = call(client, *(upload(client, a) for a in (case.x, case.weight, case.bias)))
    spans = sorted(
        (b.offset_bytes, b.offset_bytes + b.nbytes, r.size * r.elem.nbytes == b.nbytes)
        for r in (out, mean, rstd)
        for b in [r.handle.binding()]
    )
    assert all(exact for _, _, exact in spans)
    assert all(end <= start for (_, end, _), (start, _, _) in itertools.pairwise(spans))
    del out, mean
    for seed in (24, 25):
        other = make_case((6, 40), np.float32, seed=seed)
        call(client, *(upload(client, a) for a in (other.x, other.weight, other.bias)))
    assert_close("rstd", download(client, rstd), expected.rstd, TOLERANCE[Elem.F32])


def test_repeated_calls_still_refuse_bad_operands(cpu):
    """After a plan is kept, operands that differ in what the checks cover are refused
    exactly as on a first call."""
    x, w, b = _buffer(cpu, (4, 3)), _buffer(cpu, (3,)), _buffer(cpu, (3,))
    small, wide = _buffer(cpu, (4, 3), nbytes=40), _buffer(cpu, (3,), Elem.F64)
    layer_norm(cpu, x, w, b, epsilon=1.0)
    before = cpu.memory_usage().number_allocs
    with pytest.raises(LaunchConfigError, match="epsilon"):
        layer_norm(cpu, x, w, b, epsilon=True)  # equal to 1.0 as a key, refused as a value
    with pytest.raises(LayoutError, match="needs 48 bytes"):
        layer_norm(cpu, small, w, b, epsilon=1.0)
    with pytest.raises(LaunchConfigError, match="weight is f64"):
        layer_norm(cpu, x, wide, b, epsilon=1.0)
    with pytest.raises(TypeError, match="bias must be"):
        layer_norm(cpu, x, w, np.zeros(3, np.float32), epsilon=1.0)
    assert cpu.memory_usage().number_allocs == before  # nothing allocated, nothing enqueued


def test_operands_of_another_device_are_refused_naming_them(cpu):
    """An operand on another device is refused before anything runs, by its name in the call
    (``weight``, ``grad`` …), on a first call, after a plan is kept for the shapes, and where
    no row leaves a kernel to read it."""
    other = ComputeClient(
        ("ops-cpu", next(_ids)), CpuServer(DeviceId(0, next(_ids))), None, CpuRuntime
    )
    x, w = _buffer(cpu, (4, 3)), _buffer(cpu, (3,))
    runs = f"is on {other.device}, but layer_norm runs on {cpu.device}"
    for _ in range(2):  # the second call after a plan was kept
        with pytest.raises(InvalidHandle, match=re.escape(f"layer_norm: input {runs}")):
            layer_norm(cpu, _buffer(other, (4, 3)), w)
        layer_norm(cpu, x, w)
    empty, grad = _buffer(cpu, (0, 3)), _buffer(other, (0, 3))
    _, mean, rstd = _as_buffers(layer_norm(cpu, empty, w))
    with pytest.raises(InvalidHandle, match="layer_norm_backward: weight is on"):
        layer_norm_backward(cpu, empty, _buffer(other, (3,)), empty, mean, rstd)
    with pytest.raises(InvalidHandle, match="layer_norm_backward: grad is on"):
        layer_norm_backward(cpu, empty, w, grad, mean, rstd)


def test_buffers_shaped_by_lists_are_taken_as_by_tuples(cpu):
    """A ``TensorBuffer``'s shape and strides may be any sequence of ints, as elsewhere."""
    x, w = _buffer(cpu, (4, 3)), _buffer(cpu, (3,))
    want = [download(cpu, r) for r in layer_norm(cpu, x, w)]
    listed = TensorBuffer(x.handle, [4, 3], np.array([3, 1]), x.elem)
    for got, expected in zip(layer_norm(cpu, listed, w), want, strict=True):
        np.testing.assert_array_equal(download(cpu, got), expected)


def _refuse_full_checks(monkeypatch):
    """Make the first-call checks fail the test: a call that runs them did not replay."""

    def full_checks(*args):
        raise AssertionError("a call on a kept key ran the first-call checks")

    monkeypatch.setattr(LAYER_NORM, "_forward_operands", full_checks)
    monkeypatch.setattr(LAYER_NORM, "_backward_operands", full_checks)


def test_repeated_calls_replay_the_kept_plan(client, replan):
    """A call on a seen key skips the checks and the planning, and gives the same bits as
    the first call on the same inputs."""
    case = make_case((6, 48), np.float32, seed=21)
    x, w, b, g = (upload(client, a) for a in (case.x, case.weight, case.bias, case.grad))
    first = layer_norm(client, x, w, b)
    first_grads = layer_norm_backward(client, x, w, g, first[1], first[2])
    plans = (dict(LAYER_NORM._forward_plans), dict(LAYER_NORM._backward_plans))
    _refuse_full_checks(replan)
    copies = [upload(client, a) for a in (case.x, case.weight, case.bias, case.grad)]
    again = layer_norm(client, *copies[:3])
    again_grads = layer_norm_backward(client, copies[0], copies[1], copies[3], *again[1:])
    assert (dict(LAYER_NORM._forward_plans), dict(LAYER_NORM._backward_plans)) == plans
    for a, b_ in zip((*first, *first_grads), (*again, *again_grads), strict=True):
        assert (a.shape, a.strides, a.elem) == (b_.shape, b_.strides, b_.elem)
        assert download(client, a).tobytes() == download(client, b_).tobytes()
    assert_close("out", download(client, again[0]), reference(case).out, TOLERANCE[Elem.F32])


def test_replayed_calls_refuse_bad_operands_before_enqueueing(cpu):
    """On a kept key, an operand of another type, shape, element type or device, or with too
    small a handle, is refused with the first call's error, and nothing is enqueued."""
    x, w, b = _buffer(cpu, (4, 3)), _buffer(cpu, (3,)), _buffer(cpu, (3,))
    _, mean, rstd = layer_norm(cpu, x, w, b)
    layer_norm_backward(cpu, x, w, x, mean, rstd)
    cpu.sync().result()
    other = ComputeClient(
        ("ops-cpu", next(_ids)), CpuServer(DeviceId(0, next(_ids))), None, CpuRuntime
    )
    foreign = _buffer(other, (4, 3))
    bad_forward = [
        ((_buffer(cpu, (4, 3), Elem.F64), w, b), LaunchConfigError, "weight is f32"),
        ((x, _buffer(cpu, (4,)), b), LayoutError, r"weight has shape \(4,\)"),
        ((_buffer(cpu, (4, 3), strides=(1, 4)), w, b), LayoutError, "not contiguous"),
        ((_buffer(cpu, (4, 3), nbytes=40), w, b), LayoutError, "needs 48 bytes"),
        ((x, w, np.zeros(3, np.float32)), TypeError, "bias must be"),
    ]
    bad_backward = [
        ((x, w, x, _buffer(cpu, (4,), Elem.F64), rstd), LaunchConfigError, "mean is f64"),
        ((x, w, _buffer(cpu, (4, 3), nbytes=8), mean, rstd), LayoutError, "needs 48 bytes"),
    ]
    before = cpu.memory_usage().number_allocs
    for operands, error, message in bad_forward:
        with pytest.raises(error, match=message):
            layer_norm(cpu, *operands)
    for operands, error, message in bad_backward:
        with pytest.raises(error, match=message):
            layer_norm_backward(cpu, *operands)
    assert cpu.memory_usage().number_allocs == before  # nothing allocated, nothing enqueued
    with pytest.raises(InvalidHandle, match="input is on"):
        layer_norm(cpu, foreign, w, b)
    with pytest.raises(InvalidHandle, match="grad is on"):
        layer_norm_backward(cpu, x, w, foreign, mean, rstd)
    cpu.sync().result()  # the refused launches left nothing pending on the stream


def test_replays_follow_the_bounds_check_mode(replan):
    """A kept plan launches in the mode in force at each call: Validate, set after the plan
    was made, still checks its launches (and finds nothing out of bounds)."""
    client = ruda.client("cpu")
    case = make_case((3, 20), np.float32, seed=22)
    x, w, b = (upload(client, a) for a in (case.x, case.weight, case.bias))
    layer_norm(client, x, w, b)
    try:
        BoundsCheckMode.configure("validate")
        out, mean, rstd = layer_norm(client, x, w, b)
        grads = layer_norm_backward(client, x, w, x, mean, rstd)
        client.sync().result()
    finally:
        BoundsCheckMode.configure(None)
    ((plan, _),) = LAYER_NORM._forward_plans.values()
    assert plan.launch.last[0][0] is ExecutionMode.VALIDATE  # the kept plan's launcher
    assert_close("out", download(client, out), reference(case).out, TOLERANCE[Elem.F32])
    assert grads[0].shape == (3, 20)


def test_row_geometry_on_every_device(client):
    props = client.properties()
    for features in (1, 7, 24, 33, 1000, 8192):
        geometry = row_geometry(client, features)
        assert geometry.block & (geometry.block - 1) == 0
        assert geometry.block <= props.max_units_per_ruda
        assert geometry.block <= props.max_ruda_dim[0]
        if geometry.planes:
            assert client.features().has(Feature.PLANE)
            assert geometry.block % props.plane_dim == 0
            assert geometry.block <= props.plane_dim**2
        for line in (1, 2, 4):
            held = None if features % line else held_geometry(client, features, line)
            if held is None:
                continue
            assert held.block <= props.max_units_per_ruda
            assert held.items & (held.items - 1) == 0
            units = props.plane_dim if held.plane_rows else held.block
            assert units * held.items * line >= features  # the row fits the group's registers
            if held.planes:
                assert held.block % props.plane_dim == 0


# -- native dispatch ---------------------------------------------------------------------------


class NativeLayerNormRuntime(CpuRuntime):
    """A runtime that claims native LayerNorm and records what it is given."""

    calls: list[tuple[str, tuple[object, ...]]] = []

    @classmethod
    def has_native_layer_norm(cls) -> bool:
        return True

    @classmethod
    def layer_norm(cls, client, input, weight, bias, epsilon):
        cls.calls.append(("layer_norm", (input, weight, bias, epsilon)))
        return input, weight, weight

    @classmethod
    def layer_norm_backward(cls, client, input, weight, grad, mean, rstd):
        cls.calls.append(("layer_norm_backward", (input, weight, grad, mean, rstd)))
        return grad, mean, rstd


class NativeLayerNormServer(CpuServer):
    @property
    def runtime(self):
        return NativeLayerNormRuntime


@pytest.fixture
def native() -> ComputeClient:
    NativeLayerNormRuntime.calls.clear()
    index = next(_ids)
    return ComputeClient(("native-cpu", index), NativeLayerNormServer(DeviceId(0, index)), None)


def test_native_layer_norm_is_called_with_checked_operands(native):
    x = RudaTensor.from_numpy(native, np.ones((4, 3), np.float32))
    w = upload(native, np.ones(3, np.float32))
    result = layer_norm(native, x, w, None, epsilon=1e-3)
    ((name, (given_x, given_w, given_b, eps)),) = NativeLayerNormRuntime.calls
    assert name == "layer_norm"
    assert given_x == TensorBuffer(x.handle, x.shape, x.strides, x.elem)
    assert (given_w, given_b, eps) == (w, None, 1e-3)
    assert _as_buffers(result) == (given_x, w, w)


def test_native_layer_norm_backward_is_called(native):
    x = upload(native, np.ones((4, 3), np.float32))
    w = upload(native, np.ones(3, np.float32))
    stats = upload(native, np.ones(4, np.float32))
    result = layer_norm_backward(native, x, w, x, stats, stats)
    assert NativeLayerNormRuntime.calls == [("layer_norm_backward", (x, w, x, stats, stats))]
    assert _as_buffers(result) == (x, stats, stats)


def test_native_dispatch_replays_checked_operands(native, replan):
    """A repeated call of a kept key reaches the native hook without the first-call checks,
    with the operands as they would have passed them; other operands are still refused."""
    x = RudaTensor.from_numpy(native, np.ones((4, 3), np.float32))
    w = upload(native, np.ones(3, np.float32))
    stats = upload(native, np.ones(4, np.float32))
    layer_norm(native, x, w, None, epsilon=1e-3)
    layer_norm_backward(native, x, w, x, stats, stats)
    _refuse_full_checks(replan)
    layer_norm(native, x, w, None, epsilon=1e-3)
    layer_norm_backward(native, x, w, x, stats, stats)
    first, first_back, again, again_back = NativeLayerNormRuntime.calls
    assert (again, again_back) == (first, first_back)
    assert type(again[1][0]) is TensorBuffer
    with pytest.raises(AssertionError, match="first-call checks"):  # a new key: checked
        layer_norm(native, x, upload(native, np.ones(4, np.float32)))


class ReplayingLayerNorm:
    """A registered native LayerNorm that offers a replay of each kind of call, recording its
    use in ``NativeLayerNormRuntime.calls``."""

    calls = NativeLayerNormRuntime.calls

    def layer_norm(self, client, input, weight, bias, epsilon):
        self.calls.append(("layer_norm", (input, weight, bias, epsilon)))
        return input, weight, weight

    def layer_norm_backward(self, client, input, weight, grad, mean, rstd):
        self.calls.append(("layer_norm_backward", (input, weight, grad, mean, rstd)))
        return grad, mean, rstd

    def forward_replay(self, client, input, weight, bias, epsilon):
        self.calls.append(("forward_replay", (input, weight, bias, epsilon)))
        return lambda *bindings: self.calls.append(("replay", bindings)) or (input, weight, weight)

    def backward_replay(self, client, input, weight, grad, mean, rstd):
        self.calls.append(("backward_replay", (input, weight, grad, mean, rstd)))
        return lambda *bindings: self.calls.append(("replay", bindings)) or (grad, mean, rstd)


class ReplayingLayerNormRuntime(CpuRuntime):
    """A runtime whose native LayerNorm is registered with the operations, not its hooks."""


class ReplayingLayerNormServer(CpuServer):
    @property
    def runtime(self):
        return ReplayingLayerNormRuntime


def test_a_runtimes_replay_serves_every_call_of_its_key(replan):
    """The registered native LayerNorm's replay is asked for once per key, after the checks,
    and then runs each call of that key (the first included) with the bindings of that call's
    operands; its functions are not called and the first-call checks do not run again."""
    NativeLayerNormRuntime.calls.clear()
    native_ops.register("layer_norm", ReplayingLayerNormRuntime, ReplayingLayerNorm())
    index = next(_ids)
    server = ReplayingLayerNormServer(DeviceId(0, index))
    client = ComputeClient(("replay-cpu", index), server, None)
    w = upload(client, np.ones(3, np.float32))
    stats = upload(client, np.ones(4, np.float32))
    first, second = (upload(client, np.full((4, 3), v, np.float32)) for v in (1, 2))
    layer_norm(client, first, w, None, epsilon=1e-3)
    layer_norm_backward(client, first, w, first, stats, stats)
    _refuse_full_checks(replan)
    layer_norm(client, second, w, None, epsilon=1e-3)
    layer_norm_backward(client, second, w, second, stats, stats)
    names = [name for name, _ in NativeLayerNormRuntime.calls]
    assert names == ["forward_replay", "replay", "backward_replay", "replay", "replay", "replay"]
    bindings = [given for name, given in NativeLayerNormRuntime.calls if name == "replay"]
    assert bindings[2] == (second.handle.binding(), w.handle.binding())
    assert bindings[3] == tuple(b.handle.binding() for b in (second, w, second, stats, stats))


class RegisteredOverHooksRuntime(NativeLayerNormRuntime):
    """A runtime that claims native LayerNorm through its hooks and also has one registered."""


class RegisteredOverHooksServer(CpuServer):
    @property
    def runtime(self):
        return RegisteredOverHooksRuntime


def test_a_registered_native_layer_norm_is_used_over_the_runtimes_hooks():
    NativeLayerNormRuntime.calls.clear()
    native_ops.register("layer_norm", RegisteredOverHooksRuntime, ReplayingLayerNorm())
    index = next(_ids)
    server = RegisteredOverHooksServer(DeviceId(0, index))
    client = ComputeClient(("registered-cpu", index), server, None)
    x = upload(client, np.ones((4, 3), np.float32))
    w = upload(client, np.ones(3, np.float32))
    assert _as_buffers(layer_norm(client, x, w)) == (x, w, w)
    assert [name for name, _ in NativeLayerNormRuntime.calls] == ["forward_replay", "replay"]


class MisregisteredRuntime(CpuRuntime):
    """A runtime with something that is not a native LayerNorm registered as one."""


class MisregisteredServer(CpuServer):
    @property
    def runtime(self):
        return MisregisteredRuntime


def test_a_registration_that_is_not_a_native_layer_norm_is_refused():
    native_ops.register("layer_norm", MisregisteredRuntime, object())
    index = next(_ids)
    server = MisregisteredServer(DeviceId(0, index))
    client = ComputeClient(("misregistered-cpu", index), server, None)
    x = upload(client, np.ones((4, 3), np.float32))
    w = upload(client, np.ones(3, np.float32))
    with pytest.raises(PluginError, match=r"registered for MisregisteredRuntime.*forward_replay"):
        layer_norm(client, x, w)


def test_operands_are_checked_before_native_dispatch(native):
    x = upload(native, np.ones((4, 3), np.float32))
    with pytest.raises(LayoutError):
        layer_norm(native, x, upload(native, np.ones(4, np.float32)))
    assert NativeLayerNormRuntime.calls == []


@pytest.mark.parametrize("path", ["held", "strided-planes", "strided-shared"])
def test_no_access_out_of_bounds(replan, path):
    """Under ``BoundsCheckMode.VALIDATE`` the NumPy device reports any out-of-bounds access of
    the (unchecked) launches at the next sync."""
    client = ruda.client("cpu")
    if path != "held":

        def geometry(client: ComputeClient, features: int) -> RowGeometry:
            planes = path == "strided-planes"
            return RowGeometry(block=row_geometry(client, features).block, planes=planes)

        replan.setattr(PLAN, "held_geometry", lambda client, features, line: None)
        replan.setattr(PLAN, "row_geometry", geometry)
    BoundsCheckMode.configure(BoundsCheckMode.VALIDATE)
    try:
        for shape in [(1, 7), (37, 33), (3, 1000), (5, 4096)]:
            case = make_case(shape, np.float32, seed=11)
            x, w = upload(client, case.x), upload(client, case.weight)
            _, mean, rstd = layer_norm(client, x, w, upload(client, case.bias))
            layer_norm_backward(client, x, w, upload(client, case.grad), mean, rstd)
            client.sync().result(timeout=60)
    finally:
        BoundsCheckMode.configure(None)


def test_calls_with_the_same_operands_follow_their_own_epsilon(client):
    """The last call's plan is reused only for the very same operands and options: the same
    tensors with another epsilon, or through the other entry point, compute their own result."""
    x = upload(client, np.linspace(-1.0, 1.0, 4 * 64, dtype=np.float32).reshape(4, 64))
    w = upload(client, np.ones(64, np.float32))
    for eps in (1e-5, 1.0, 1e-5, 4.0):
        for call in (layer_norm, portable_layer_norm, layer_norm):
            _, _, rstd = call(client, x, w, None, eps)
            host = download(client, x).astype(np.float64)
            expected = 1.0 / np.sqrt(host.var(axis=1) + eps)
            np.testing.assert_allclose(download(client, rstd), expected, rtol=1e-4)


def test_results_are_frozen_ruda_tensors(cpu):
    x = _buffer(cpu, (2, 8))
    w = _buffer(cpu, (8,))
    for result in layer_norm(cpu, x, w):
        assert type(result) is RudaTensor
        copy = RudaTensor(result.handle, result.shape, result.strides, result.elem)
        assert result == copy and hash(result) == hash(copy)
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.shape = (1,)


def test_each_result_holds_its_own_bytes_alone(cpu):
    x = _buffer(cpu, (3, 40))
    w = _buffer(cpu, (40,))
    for _ in range(3):  # the first call plans, the others replay the plan
        out, mean, rstd = layer_norm(cpu, x, w)
        grads = layer_norm_backward(cpu, x, w, out, mean, rstd)
        for result in (out, mean, rstd, *grads):
            nbytes = int(np.prod(result.shape)) * result.elem.nbytes
            assert result.handle.nbytes == nbytes
            assert len(cpu.read_one(result.handle)) == nbytes
        for results in ((out, mean, rstd), grads):
            spans = sorted(
                (r.handle.binding().offset_bytes, r.handle.binding().nbytes) for r in results
            )
            assert all(a + n <= b for (a, n), (b, _) in itertools.pairwise(spans))

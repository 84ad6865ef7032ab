"""Launch glue: argument binding and checks against a recording client, then real launches."""

import dataclasses
import pickle
from typing import NamedTuple

import numpy as np
import pytest

import ruda_core
from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    ArrayArg,
    Comptime,
    Float,
    Tensor,
    TensorArg,
    f32,
    f64,
    i32,
    kernel,
    u32,
)
from ruda_core.runtime import CompilationError, KernelTask, LaunchConfigError, RudaCount, RudaDim
from ruda_core.tensor import RudaTensor

COUNT, DIM = RudaCount(2), RudaDim(4)


class FakeBinding(NamedTuple):
    owner: int
    offset_bytes: int = 0  # where an array starts: the launcher checks its alignment


class FakeHandle:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes

    def binding(self) -> FakeBinding:
        return FakeBinding(id(self))


class RecordingClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def launch(self, *args: object) -> None:
        self.calls.append(("launch", args))

    def launch_unchecked(self, *args: object) -> None:
        self.calls.append(("launch_unchecked", args))


@kernel
def mixed(x: Array[f32], n: u32, t: Tensor[f32], scale: f64, flag: bool, BLOCK: Comptime[int] = 4):
    i = ABSOLUTE_POS
    if flag and i < n:
        x[i] = t[i] * f32(scale) + f32(BLOCK) + f32(t.shape(0))


def test_arguments_follow_the_launch_abi():
    client, xh, th = RecordingClient(), FakeHandle(64), FakeHandle(200)
    mixed.launch(client, COUNT, DIM, ArrayArg(xh, 16), 7, TensorArg(th, (3, 4), (8, 2)), 0.5, True)
    ((method, (task, count, dim, bindings, scalars, metadata)),) = client.calls
    assert method == "launch" and (count, dim) == (COUNT, DIM)
    assert isinstance(task, KernelTask) and task.definition is mixed.definition(t=2)
    assert bindings == [xh.binding(), th.binding()]
    assert [type(s) for s in scalars] == [np.uint32, np.float64, np.bool_]
    assert [s.item() for s in scalars] == [7, 0.5, True]
    span = 1 + 2 * 8 + 3 * 2  # one more than the largest offset
    assert metadata == [16, span, 3, 4, 8, 2]
    assert [m[0] for m in task.definition.metadata_layout()] == [
        "len",
        "len",
        "shape",
        "shape",
        "stride",
        "stride",
    ]


def test_specialisations_and_tasks_are_reused():
    client, xh, th = RecordingClient(), FakeHandle(64), FakeHandle(200)
    args = (ArrayArg(xh, 16), 7, TensorArg(th, (3, 4), (8, 2)), 0.5, True)
    mixed.launch(client, COUNT, DIM, *args)
    mixed.launch_unchecked(client, COUNT, DIM, *args)
    mixed.launch(client, COUNT, DIM, *args, BLOCK=8)
    mixed.launch(client, COUNT, DIM, ArrayArg(xh, 16), 7, TensorArg(th, (24,), (1,)), 0.5, True)
    tasks = [call[1][0] for call in client.calls]
    assert [call[0] for call in client.calls] == ["launch", "launch_unchecked", "launch", "launch"]
    assert tasks[0] is tasks[1]
    assert tasks[2] is not tasks[0] and tasks[3] is not tasks[0]
    assert tasks[3].definition.params[2].rank == 1


@kernel
def generic(x: Array[Float], y: Array[Float], alpha: Float):
    i = ABSOLUTE_POS
    if i < x.len():
        y[i] = alpha * x[i]


def test_element_variables_bind_from_arguments_or_keywords():
    client, h = RecordingClient(), FakeHandle(800)
    generic.launch(client, COUNT, DIM, ArrayArg(h, 4, f64), ArrayArg(h, 4), 2.0)
    generic.launch(client, COUNT, DIM, ArrayArg(h, 4), ArrayArg(h, 4), np.float32(2), Float=f32)
    generic.launch(client, COUNT, DIM, ArrayArg(h, 4), ArrayArg(h, 4), np.float32(2))
    elems = [call[1][0].definition.params[0].elem for call in client.calls]
    assert elems == [Elem.F64, Elem.F32, Elem.F32]
    assert client.calls[1][1][0] is client.calls[2][1][0]
    with pytest.raises(LaunchConfigError, match="cannot infer Float"):
        generic.launch(client, COUNT, DIM, ArrayArg(h, 4), ArrayArg(h, 4), 2.0)
    with pytest.raises(LaunchConfigError, match="argument 'y' is f32, but Float is f64"):
        generic.launch(client, COUNT, DIM, ArrayArg(h, 4, f64), ArrayArg(h, 4, f32), 2.0)
    with pytest.raises(LaunchConfigError, match="Float is i32; it allows"):
        generic.launch(client, COUNT, DIM, ArrayArg(h, 4, i32), ArrayArg(h, 4), 2)


@kernel
def simple(x: Array[f32], n: u32, k: i32, b: bool, v: f32):
    x[0] = f32(n) + f32(k) + v if b else 0.0


def _simple(*args: object) -> None:
    simple.launch(RecordingClient(), COUNT, DIM, *args)


def test_bad_arguments_are_refused_before_anything_runs():
    h = FakeHandle(16)
    good = [ArrayArg(h, 4), 1, -1, True, 1.0]
    _simple(*good)
    cases = [
        (good[:4], "takes 5 arguments \\(x, n, k, b, v\\)"),
        ([TensorArg(h, (2, 2), (1, 2)), *good[1:]], "strides \\(1, 2\\) for shape \\(2, 2\\)"),
        ([3, *good[1:]], r"ArrayArg\(handle, length\), a TensorArg or a RudaTensor, got 3"),
        ([ArrayArg(h, 4, f64), *good[1:]], "has f64 elements; the kernel declares f32"),
        ([ArrayArg(h, 5), *good[1:]], "5 elements of 4 B = 20 B, but its handle holds 16 B"),
        ([good[0], -1, *good[2:]], "argument 'n' is u32; -1 is outside 0..4294967295"),
        ([good[0], 2**32, *good[2:]], "outside 0..4294967295"),
        ([good[0], 1.5, *good[2:]], "not an integer"),
        ([*good[:2], 2**31, *good[3:]], "argument 'k' is i32"),
        ([*good[:3], 1, good[4]], "argument 'b' is bool; got 1"),
        ([*good[:4], 1e39], "1e\\+39 overflows it"),
        ([*good[:4], "1"], "not a number"),
    ]
    for args, match in cases:
        with pytest.raises(LaunchConfigError, match=match):
            _simple(*args)


def test_argument_objects_validate_at_construction():
    h = FakeHandle(16)
    with pytest.raises(LaunchConfigError, match="ArrayArg length is -1"):
        ArrayArg(h, -1)
    with pytest.raises(LaunchConfigError, match="ArrayArg length is 4294967296"):
        ArrayArg(h, 2**32)
    with pytest.raises(LaunchConfigError, match="must be an int"):
        ArrayArg(h, 1.5)  # type: ignore[arg-type]
    with pytest.raises(LaunchConfigError, match=r"takes a handle .* got bytes"):
        ArrayArg(b"data", 4)  # type: ignore[arg-type]
    with pytest.raises(LaunchConfigError, match="different lengths"):
        TensorArg(h, (2, 2), (1,))
    with pytest.raises(LaunchConfigError, match="stride is -1"):
        TensorArg(h, (2,), (-1,))
    assert ArrayArg(h, np.int64(3), "float32") == ArrayArg(h, 3, Elem.F32)
    assert TensorArg(h, [2, 3], [3, 1], f32).shape == (2, 3)  # type: ignore[arg-type]


@kernel
def tensor_only(t: Tensor[f32], out: Array[f32]):
    out[0] = t[0]


def test_tensor_arguments_are_checked():
    h = FakeHandle(40)
    client = RecordingClient()
    with pytest.raises(
        LaunchConfigError, match="covers 22 elements of 4 B = 88 B, but its handle holds 40 B"
    ):
        tensor_only.launch(client, COUNT, DIM, TensorArg(h, (3, 2), (10, 1)), ArrayArg(h, 1))
    tensor_only.launch(client, COUNT, DIM, TensorArg(h, (0, 5), (5, 1)), ArrayArg(h, 1))
    assert client.calls[0][1][5][0] == 0  # an empty tensor addresses nothing
    with pytest.raises(LaunchConfigError, match="expects a TensorArg or RudaTensor"):
        tensor_only.launch(client, COUNT, DIM, ArrayArg(h, 4), ArrayArg(h, 1))
    with pytest.raises(LaunchConfigError, match="give the rank"):
        tensor_only.definition()


def test_calling_a_kernel_directly_is_an_error():
    with pytest.raises(TypeError, match=r"simple\.launch"):
        simple()


# -- real launches on the reference device ---------------------------------------------------


@pytest.fixture(scope="module")
def cpu():
    return ruda_core.client("cpu")


@kernel
def axpy(x: Array[Float], y: Array[Float], alpha: Float, n: u32):
    i = ABSOLUTE_POS
    if i < n:
        y[i] = alpha * x[i] + y[i]


@kernel
def transpose(src: Tensor[f32], dst: Array[f32], WIDTH: Comptime[int]):
    i = ABSOLUTE_POS
    r = i // WIDTH
    c = i % WIDTH
    if r < src.shape(0) and c < src.shape(1):
        dst[c * src.shape(0) + r] = src[r * src.stride(0) + c * src.stride(1)]


def test_axpy_runs_on_the_reference_device(cpu):
    n = 37
    x, y = np.arange(n, dtype=np.float64), np.ones(n, np.float64)
    xh, yh = cpu.create_from_slice(x), cpu.create_from_slice(y)
    axpy.launch(cpu, RudaCount(3), RudaDim(16), ArrayArg(xh, n, f64), ArrayArg(yh, n), 2.0, n)
    result = np.frombuffer(cpu.read_one(yh), np.float64)
    np.testing.assert_array_equal(result, 2.0 * x + 1.0)


@kernel
def scaled(x: Array[f32], y: Array[f32], alpha: f32, SHIFT: Comptime[int] = 0):
    i = ABSOLUTE_POS
    if i < y.len():
        y[i] = alpha * x[i] + f32(SHIFT)


def test_a_kernel_launched_before_keeps_every_check_and_keyword(cpu):
    """After its first launch a kernel's ``launch`` is a function generated for its signature:
    it must refuse and accept exactly what the first launch did."""
    x = np.arange(8, dtype=np.float32)
    xh, yh = cpu.create_from_slice(x), cpu.empty(x.nbytes)
    args = (ArrayArg(xh, 8), ArrayArg(yh, 8))
    scaled.launch(cpu, RudaCount(1), RudaDim(8), *args, 2.0)
    np.testing.assert_array_equal(np.frombuffer(cpu.read_one(yh), np.float32), 2 * x)
    assert scaled.launch is not type(scaled).launch.__get__(scaled)  # the generated one
    with pytest.raises(LaunchConfigError, match="takes 3 arguments"):
        scaled.launch(cpu, RudaCount(1), RudaDim(8), *args)
    with pytest.raises(LaunchConfigError, match="has f64 elements"):
        scaled.launch(cpu, RudaCount(1), RudaDim(8), ArrayArg(xh, 4, f64), args[1], 2.0)
    with pytest.raises(LaunchConfigError, match="covers 9 elements"):
        scaled.launch(cpu, RudaCount(1), RudaDim(8), ArrayArg(xh, 9), args[1], 2.0)
    with pytest.raises(LaunchConfigError, match="not a number"):
        scaled.launch(cpu, RudaCount(1), RudaDim(8), *args, "2")
    scaled.launch(cpu, RudaCount(1), RudaDim(8), *args, 3.0, SHIFT=1)
    np.testing.assert_array_equal(np.frombuffer(cpu.read_one(yh), np.float32), 3 * x + 1)
    scaled.launch(cpu, RudaCount(1), RudaDim(8), *args, np.float32(0.5))
    np.testing.assert_array_equal(np.frombuffer(cpu.read_one(yh), np.float32), x / 2)


@pytest.mark.parametrize("first_launch", [True, False])
@pytest.mark.parametrize("given", ["cpu", None])
def test_a_launch_given_no_client_names_what_it_was_given(cpu, given, first_launch):
    """A device's name (what ``ruda_core.client`` takes) or ``None`` where the client goes is
    a ``TypeError`` saying so, on every way to launch, before a kernel's first launch and
    after it (its generated ``launch``)."""
    x = np.arange(8, dtype=np.float32)
    arrays = (ArrayArg(cpu.create_from_slice(x), 8), ArrayArg(cpu.empty(x.nbytes), 8))
    if not first_launch:
        scaled.launch(cpu, 1, 8, *arrays, 2.0)
    hint = "'cpu': ruda_core.client\\('cpu'\\) makes one" if given else "None$"
    for way in (scaled.launch, scaled.launch_unchecked, scaled.prepare):
        with pytest.raises(TypeError, match=f"launches on a ComputeClient, not {hint}"):
            way(given, 1, 8, *arrays, 2.0)
        with pytest.raises(TypeError, match="launches on a ComputeClient"):
            way(given, 1, 8, x, x, 2.0)  # NumPy arrays, borrowed by a client


@kernel
def filled(x: Array[f32], V: Comptime[float] = 0.0):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = f32(V)


def test_comptime_floats_specialise_by_their_bits(cpu):
    """``0.0`` and ``-0.0`` are two specialisations (they compare equal: the second launch
    wrote the first's zero), and a NaN finds its specialisation again (it compares unequal to
    itself: every launch traced the kernel anew and kept one more)."""
    for first, second in ((0.0, -0.0), (-0.0, 0.0)):
        for value in (first, second):
            x = np.ones(4, np.float32)
            filled.launch(cpu, 1, 4, x, V=value)
            assert np.signbit(x).all() == np.signbit(value), (first, second)
    assert filled.definition(V=float("nan")) is filled.definition(V=float("nan"))
    assert filled.definition(V=np.float32("nan")) is filled.definition(V=np.float32("nan"))


def test_a_launched_kernel_pickles_as_a_reference_to_its_module(cpu):
    """A module-level kernel reaches another process (a Dask worker) as a reference, never
    with its clients: pickling it after a launch works."""
    x = np.arange(8, dtype=np.float32)
    xh, yh = cpu.create_from_slice(x), cpu.empty(x.nbytes)
    scaled.launch(cpu, RudaCount(1), RudaDim(8), ArrayArg(xh, 8), ArrayArg(yh, 8), 2.0)
    assert len(pickle.dumps(scaled)) < 200
    assert pickle.loads(pickle.dumps(scaled)) is scaled


def test_tensor_kernel_runs_with_a_ruda_tensor(cpu):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    src = RudaTensor.from_numpy(cpu, a)
    dh = cpu.empty(a.nbytes)
    transpose.launch(cpu, RudaCount(1), RudaDim(16), src, ArrayArg(dh, 12), WIDTH=4)
    result = np.frombuffer(cpu.read_one(dh), np.float32).reshape(4, 3)
    np.testing.assert_array_equal(result, a.T)


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_out_of_bounds_launch_is_checked_on_the_reference_device(cpu):
    n = 5
    xh, yh = (
        cpu.create_from_slice(np.ones(n, np.float32)),
        cpu.create_from_slice(np.ones(8, np.float32)),
    )
    # n says 8 elements; x holds 5: checked reads give 0 beyond them, y keeps its length
    axpy.launch(cpu, RudaCount(1), RudaDim(8), ArrayArg(xh, n, f32), ArrayArg(yh, 8), 1.0, 8)
    result = np.frombuffer(cpu.read_one(yh), np.float32)
    np.testing.assert_array_equal(result, [2, 2, 2, 2, 2, 1, 1, 1])


@dataclasses.dataclass
class Scaled:
    k: Float
    v: Array[Float]


@dataclasses.dataclass
class WithComptime:
    n: Comptime[int]


def test_a_generic_dataclass_argument_specialises_like_its_fields():
    @kernel
    def scale(p: Scaled, out: Array[Float]):
        i = ABSOLUTE_POS
        if i < out.len():
            out[i] = p.k * p.v[i]

    client = ruda_core.client("cpu")
    for dtype in (np.float32, np.float64):
        x = np.arange(8, dtype=dtype)
        out = client.empty(x.nbytes)
        arg = Scaled(3.0, ArrayArg(client.create_from_slice(x), 8, elem=dtype))
        scale.launch(client, COUNT, DIM, arg, ArrayArg(out, 8, elem=dtype))
        np.testing.assert_array_equal(np.frombuffer(client.read_one(out), dtype), 3 * x)
    assert [p.name for p in scale.definition(Float=f32).params] == ["p_k", "p_v", "out"]


def test_bad_dataclass_parameters_are_refused_at_definition():
    def comptime_field(p: WithComptime, out: Array[f32]):
        out[0] = 1.0

    with pytest.raises(CompilationError, match="pass a compile-time value as its own Comptime"):
        kernel(comptime_field)

    def clash(p: Scaled, p_v: Array[f32]):
        p_v[0] = 1.0

    with pytest.raises(CompilationError, match="'p_v' is used twice"):
        kernel(clash)

    def unknown_field(p: Scaled, out: Array[f32]):
        out[0] = p.w[0]

    with pytest.raises(CompilationError, match="Scaled has no field 'w'"):
        kernel(unknown_field).definition(Float=f32)


@kernel
def generic_with_error(x: Array[Float], out: Array[Float]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] << 1  # refused when the kernel is built


def _alone(error: BaseException) -> bool:
    """The error is shown by itself: raised neither from nor while handling another."""
    return error.__cause__ is None and error.__context__ is None


def test_errors_of_a_launch_with_numpy_arrays_are_shown_alone(cpu):
    x, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(CompilationError, match="'<<' needs integers, got f32") as info:
        generic_with_error.launch(cpu, RudaCount(1), RudaDim(4), x, out)
    assert _alone(info.value)
    scaled.launch(cpu, RudaCount(1), RudaDim(4), x, out, 2.0)  # then the launch's fast path
    for name, bad in [
        ("fewer arguments", (x, out)),
        ("an array of another type", (x, np.zeros(4, np.float64), 2.0)),
        ("a scalar of another kind", (x, out, "2")),
    ]:
        for k in (scaled, axpy):
            with pytest.raises(LaunchConfigError) as refused:
                k.launch(cpu, RudaCount(1), RudaDim(4), *bad)
            assert _alone(refused.value), (name, k.name)


@kernel
def positive(x: Array[f32], flags: Array[bool], others: Tensor[bool]):
    i = ABSOLUTE_POS
    if i < x.len():
        flags[i] = x[i] > 0.0
        others[i] = not flags[i]


@pytest.mark.parametrize("name", ["cpu", "opencl:0", "webgpu:0", "cuda:0"])
def test_python_bool_is_bool_in_array_and_tensor_annotations(open_device, name):
    client = open_device(name)
    x = np.array([-1.0, 0.0, 2.5, 3.0], np.float32)
    flags, others = np.zeros(4, np.bool_), np.zeros(4, np.bool_)
    positive.launch(client, RudaCount(1), RudaDim(4), x, flags, others)
    np.testing.assert_array_equal(flags, x > 0)
    np.testing.assert_array_equal(others, x <= 0)

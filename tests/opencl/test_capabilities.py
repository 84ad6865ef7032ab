"""What an OpenCL device's extensions and OpenCL C 3.0 features give: the dialect's capability
keys, a fixed plane width, build options, features; and on a real Intel device, that kernels run
with that width (``PLANE_DIM`` equals ``properties().plane_dim``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from codegen.kernels import dynamic_shared, plane_ops

import ruda_core as ruda
from ruda_core.codegen import CFamilyEmitter
from ruda_core.codegen.abi import ArgKind, arg_values
from ruda_core.errors import SettingError
from ruda_core.ir import Elem
from ruda_core.lang import (
    PLANE_DIM,
    UNIT_POS,
    Array,
    ArrayArg,
    kernel,
    plane_ballot,
    plane_inclusive_sum,
    plane_shuffle_down,
    plane_shuffle_xor,
    plane_sum,
    u32,
)
from ruda_core.runtime import (
    CompileOptions,
    Feature,
    LaunchConfigError,
    RudaCount,
    RudaDim,
    UnsupportedFeature,
)
from ruda_core.testing.plane_model import PlaneModel
from ruda_core.testing.runner import read_array
from ruda_opencl.capabilities import (
    PLANE_DIM_VARIABLE,
    SUBGROUPS_VARIABLE,
    OpenCLCapabilities,
    _intel_subgroup_sizes,
    choose_plane_dim,
    subgroups_from_env,
)
from ruda_opencl.dialect import OpenCLDialect
from ruda_opencl.driver import all_devices, build_program
from ruda_opencl.target import Capability, OpenCLTarget

#: Intel's OpenCL 3.0 CPU driver, less what does not concern planes.
INTEL_EXTENSIONS = (
    "cl_intel_required_subgroup_size cl_intel_subgroups cl_khr_fp64 "
    "cl_khr_subgroup_non_uniform_arithmetic cl_khr_subgroup_shuffle"
)


class FakeDevice:
    """The device queries :meth:`OpenCLCapabilities.of` makes of a driver without required
    subgroup sizes (whose width query would go to the ICD loader)."""

    single_fp_config = 0
    type = 4  # CL_DEVICE_TYPE_GPU
    platform = SimpleNamespace(name="NVIDIA CUDA", vendor="NVIDIA Corporation")

    def __init__(self, extensions: str, features: tuple[str, ...] = (), warp: int = 0) -> None:
        self.extensions = extensions
        self.opencl_c_features = [SimpleNamespace(name=f) for f in features]
        self.warp = warp

    def get_info(self, param: int) -> int:
        import pyopencl as cl

        if param != 0x4003 or not self.warp:
            raise cl.LogicError("clGetDeviceInfo", cl.status_code.INVALID_VALUE, "no such info")
        return self.warp


def test_subgroups_of_the_opencl_c_3_feature_need_no_pragma_and_get_a_required_width() -> None:
    target = OpenCLTarget.offered(INTEL_EXTENSIONS, ["__opencl_c_subgroups", "__opencl_c_fp64"])
    keys = set(target.capabilities)
    assert {"opencl_c_subgroups", "intel_subgroups", "intel_reqd_subgroup_size"} <= keys
    assert "subgroups" not in keys  # cl_khr_subgroups is not reported
    dialect = OpenCLDialect.from_options(CompileOptions(16, target))
    source = CFamilyEmitter(dialect).emit(plane_ops()).source
    assert "__kernel __attribute__((intel_reqd_sub_group_size(16))) void plane_ops(" in source
    assert "const uint PLANE_DIM = 16u;" in source
    assert "cl_khr_subgroups" not in source


def test_cl_khr_subgroups_keeps_its_pragma_and_requires_no_width() -> None:
    target = OpenCLTarget.offered("cl_khr_subgroups cl_khr_subgroup_shuffle cl_khr_fp64")
    source = CFamilyEmitter(OpenCLDialect.from_options(CompileOptions(32, target))).emit(
        plane_ops()
    )
    assert "#pragma OPENCL EXTENSION cl_khr_subgroups : enable" in source.source
    assert "__kernel void plane_ops(" in source.source


@pytest.mark.parametrize(
    ("sizes", "lanes", "width"),
    [
        ((4, 8, 16, 32, 64), 8, 8),  # an AVX2 CPU
        ((4, 8, 16, 32, 64), 16, 16),  # an AVX-512 CPU
        ((4, 8, 16, 32, 64), 1, 16),  # a GPU (no vector registers of its own)
        ((8, 16, 32), 4, 16),
        ((8, 32), 1, 32),
        ((8, 12), 1, 8),
        ((64,), 1, 1),
        ((), 8, 1),
    ],
)
def test_plane_width_prefers_the_float_lanes_then_16_then_the_widest_power_of_two_up_to_32(
    sizes, lanes, width
) -> None:
    assert choose_plane_dim(sizes, lanes) == width


@pytest.mark.parametrize("asked", [1, 4, 32])
def test_the_width_asked_for_is_taken_where_the_device_offers_it(asked) -> None:
    assert choose_plane_dim((4, 8, 16, 32, 64), 8, asked) == asked


@pytest.mark.parametrize("asked", [2, 12, 128])
def test_a_width_the_device_does_not_offer_is_refused_naming_the_variable(asked) -> None:
    refusal = rf"{PLANE_DIM_VARIABLE}={asked}: .* one of 1, 8, 16, 32 \(1: planes of one lane\)"
    with pytest.raises(SettingError, match=refusal):
        choose_plane_dim((8, 16, 32), 8, asked)


def test_subgroups_of_no_fixed_width_are_dropped_for_planes_of_one_lane() -> None:
    device = FakeDevice("cl_khr_subgroups cl_khr_subgroup_shuffle", ("__opencl_c_subgroups",))
    caps = OpenCLCapabilities.of(device)
    assert caps.plane_dim == 1 and caps.build_options == ()
    # subgroups dropped; NVIDIA's assembler worked around
    assert caps.target == OpenCLTarget((Capability.ONE_LANE_PLANES, Capability.PTX))
    planes = {Feature.PLANE, Feature.PLANE_SHUFFLE, Feature.PARTIAL_PLANE}
    assert planes <= caps.features().features
    dialect = OpenCLDialect.from_options(caps.compile_options)
    assert dialect.plane_dim() == "1u"
    source = CFamilyEmitter(dialect).emit(plane_ops()).source
    assert "sub_group" not in source and "cl_khr_subgroups" not in source


def test_subgroups_without_arithmetic_or_shuffles_are_dropped() -> None:
    caps = OpenCLCapabilities.of(FakeDevice("cl_khr_subgroups", warp=32))  # no plane_prod there
    assert caps.plane_dim == 1
    assert caps.target == OpenCLTarget((Capability.ONE_LANE_PLANES, Capability.PTX))
    assert caps.features().has(Feature.PLANE)


def test_pocl_builds_with_the_cbs_work_group_method_unless_one_is_chosen() -> None:
    """PoCL 5's default work-group method aborts the process on the radix sort's histogram
    kernel; its server sets ``cbs`` for the process where the user has not chosen one."""
    device = FakeDevice("cl_khr_subgroups", warp=32)
    device.platform = SimpleNamespace(name="Portable Computing Language")
    caps = OpenCLCapabilities.of(device)
    assert caps.environment == (("POCL_WORK_GROUP_METHOD", "cbs"),)
    assert caps.plane_dim == 1
    assert OpenCLCapabilities.of(FakeDevice("cl_khr_subgroups", warp=32)).environment == ()


@pytest.mark.parametrize(
    "extensions",
    ["cl_khr_subgroups", "cl_khr_subgroups cl_khr_subgroup_non_uniform_arithmetic"],
)
def test_pocl_refuses_plane_operations_with_or_without_subgroups(extensions: str) -> None:
    """Under its cbs work-group method PoCL 5's compiler aborted the process building plane
    kernels, of its subgroups and of one lane: there plane operations are unsupported, refused
    when a kernel is generated."""
    device = FakeDevice(extensions, warp=32)
    device.platform = SimpleNamespace(name="Portable Computing Language")
    caps = OpenCLCapabilities.of(device)
    assert caps.plane_dim == 1 and caps.target == OpenCLTarget()
    assert not caps.features().has(Feature.PLANE)
    dialect = OpenCLDialect.from_options(caps.compile_options)
    with pytest.raises(UnsupportedFeature, match="a plane operation needs planes of one lane"):
        CFamilyEmitter(dialect).emit(plane_ops())


def test_nvidia_planes_are_its_warps() -> None:
    device = FakeDevice(
        "cl_khr_subgroups cl_khr_subgroup_shuffle cl_khr_subgroup_non_uniform_arithmetic",
        warp=32,
    )
    caps = OpenCLCapabilities.of(device)
    assert caps.plane_dim == 32 and caps.build_options == ()
    assert {Feature.PLANE, Feature.PLANE_SHUFFLE} <= caps.features().features


def _unasked_width(device: Any) -> int:
    """The subgroup width ``device``'s compiler picks for a kernel that asks for none."""
    import pyopencl as cl

    source = "__kernel void k(__global float* a) { a[get_global_id(0)] *= 2.0f; }"
    context = cl.Context([device])
    built = build_program(context, device, source, ["-cl-std=CL3.0"], "k")
    info = cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE
    return int(cl.Kernel(built, "k").get_sub_group_info(device, info, (256,)))


def _intel() -> tuple[int, Any]:
    if not subgroups_from_env():
        pytest.skip(f"{SUBGROUPS_VARIABLE}=0: this process runs OpenCL without subgroups")
    for index, device in enumerate(all_devices()):
        intel = "Intel" in device.platform.name  # PoCL 5 lists the extension too
        if intel and "cl_intel_required_subgroup_size" in device.extensions:
            return index, device
    pytest.skip("no Intel OpenCL device with cl_intel_required_subgroup_size here")


def test_intel_device_capabilities() -> None:
    import pyopencl as cl

    _, device = _intel()
    caps = OpenCLCapabilities.of(device)
    sizes = _intel_subgroup_sizes(device)
    assert caps.plane_dim in sizes
    lanes = int(device.native_vector_width_float)
    if device.type & cl.device_type.CPU and lanes in sizes:  # a plane fills one vector
        # register, no more: never wider than the planes the compiler forms unasked
        assert caps.plane_dim == lanes
        assert caps.plane_dim <= _unasked_width(device)
    else:
        assert caps.plane_dim == choose_plane_dim(sizes)


@pytest.mark.parametrize("asked", ["16", "1"])
def test_the_variable_sets_the_width_asked_of_an_intel_device(asked, monkeypatch) -> None:
    _, device = _intel()
    monkeypatch.setenv(PLANE_DIM_VARIABLE, asked)
    caps = OpenCLCapabilities.of(device)
    assert caps.plane_dim == int(asked)
    assert (Capability.ONE_LANE_PLANES in caps.target) == (asked == "1")
    assert "-cl-std=CL3.0" in caps.build_options
    features = caps.features()
    assert {Feature.PLANE, Feature.PLANE_SHUFFLE} <= features.features
    assert features.supports(Elem.BF16) == ("cl_intel_bfloat16" in device.extensions)


def test_shared_arrays_of_the_shared_argument_dialect_are_all_carved_out_of_it() -> None:
    """With ``SHARED_ARGUMENT`` (Intel's CPU runtime) no ``__local`` array is declared: the
    static one comes first in the argument, then the ones sized at launch, and the launch
    sizes the argument for all of them."""
    floats = [Capability.FP64, Capability.FP16]
    emitted = CFamilyEmitter(OpenCLDialect([Capability.SHARED_ARGUMENT, *floats])).emit(
        dynamic_shared()
    )
    assert "__local uint fixed[" not in emitted.source
    assert "__local uint* fixed = (__local uint*)(((__local uchar*)dynamic_shared_) + 0u);" in (
        emitted.source
    )
    (shared,) = [a for a in emitted.args if a.kind is ArgKind.SHARED]
    assert shared.index == 32  # 4 u32 rounded up to BUFFERED_SHARED_ALIGN
    values, env = arg_values([shared], "{b}", shared=lambda nbytes: nbytes)
    n, m = 3, 5  # 24 bytes of f64 then 10 of f16, each rounded up to 16
    assert eval(values, env, {"s": [n, m]}) == 32 + 32 + 16
    plain = CFamilyEmitter(OpenCLDialect(floats)).emit(dynamic_shared())
    assert "__local uint fixed[4];" in plain.source


def test_intel_cpu_runtime_gets_the_shared_argument() -> None:
    import pyopencl as cl

    _, device = _intel()
    if not device.type & cl.device_type.CPU:
        pytest.skip(f"{device.name} is not Intel's CPU runtime")
    assert Capability.SHARED_ARGUMENT in OpenCLCapabilities.of(device).target


@kernel
def plane_width(out: Array[u32]):
    out[UNIT_POS] = PLANE_DIM


@kernel
def plane_sums(x: Array[u32], out: Array[u32]):
    out[UNIT_POS] = plane_sum(x[UNIT_POS])


def test_intel_kernels_run_with_the_plane_width_of_the_properties() -> None:
    index, _ = _intel()
    client = ruda.client(f"opencl:{index}")
    plane = client.properties().plane_dim
    out = client.empty(4 * 4 * plane)
    plane_width.launch(client, RudaCount(1), RudaDim(4 * plane), ArrayArg(out, 4 * plane))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), plane)
    x = np.arange(4 * plane, dtype=np.uint32)
    sums = client.empty(x.nbytes)
    plane_sums.launch(
        client,
        RudaCount(1),
        RudaDim(plane, 4),
        ArrayArg(client.create_from_slice(x), x.size),
        ArrayArg(sums, x.size),
    )
    expected = np.repeat(x.reshape(-1, plane).sum(axis=1), plane)
    np.testing.assert_array_equal(read_array(client, sums, np.uint32), expected)


def test_plane_kernels_on_rows_shorter_than_a_plane_are_refused() -> None:
    index, _ = _intel()
    client = ruda.client(f"opencl:{index}")
    plane = client.properties().plane_dim
    x = client.create_from_slice(np.zeros(2 * plane, np.uint32))
    refusal = (
        rf"each row must be whole planes\. Make RudaDim\.x a multiple of .* {plane}, or "
        rf"launch one row of RudaDim\({2 * plane}\) units"
    )
    with pytest.raises(LaunchConfigError, match=refusal):
        plane_sums.launch(
            client, RudaCount(1), RudaDim(plane // 2, 4), ArrayArg(x, 2 * plane), ArrayArg(x, 16)
        )


@kernel
def partial_subgroup(x: Array[u32], out: Array[u32]):
    i = UNIT_POS
    n = x.len()
    v = x[i]
    out[i] = plane_sum(v)
    out[n + i] = plane_inclusive_sum(v)
    out[u32(2) * n + i] = plane_ballot(v % u32(2) == u32(1))
    out[u32(3) * n + i] = plane_shuffle_xor(v, u32(1))
    out[u32(4) * n + i] = plane_shuffle_down(v, u32(3))


def test_intel_partial_subgroups_are_the_planes_of_a_cube_of_any_size() -> None:
    """The driver's last subgroup of a work-group is as small as the cube's last plane, and the
    built-ins and the relative shuffles act over its work-items only."""
    index, _ = _intel()
    client = ruda.client(f"opencl:{index}")
    plane = client.properties().plane_dim
    for units in range(1, 3 * plane):
        x = np.arange(7, 7 + units, dtype=np.uint32) * np.uint32(3)
        out = client.empty(5 * x.nbytes)
        partial_subgroup.launch(
            client,
            RudaCount(1),
            RudaDim(units),
            ArrayArg(client.create_from_slice(x), units),
            ArrayArg(out, 5 * units),
        )
        model = PlaneModel(1, units, plane)
        ones = np.ones(units, np.int64)
        want = [
            model.sum(x),
            model.inclusive_sum(x),
            model.ballot(x % 2 == 1),
            model.shuffle_xor(x, ones),
            model.shuffle_down(x, 3 * ones),
        ]
        got = read_array(client, out, np.uint32).reshape(5, units)
        np.testing.assert_array_equal(got, np.array(want), f"RudaDim({units})")

"""Known conformance failures a driver declares (``ruda_conformance_xfails``): one scoped to some
devices (``KnownFailure`` with ``applies``) applies to a device whose properties it accepts and
to no other, a plain reason to every device of its backend, one naming the failing parts of a
test (``cases``) fails the test where another part fails, and a malformed declaration is
refused where it is made."""

from __future__ import annotations

import pytest

from ruda_core.errors import PluginError
from ruda_core.plugins import KnownFailure
from ruda_core.runtime import DeviceProperties
from ruda_core.testing.overrides import KnownCases, Overrides

F32_OPS = "test_ops_float::test_float_ops_match_the_reference[f32]"
F16_OPS = "test_ops_float::test_float_ops_match_the_reference[f16]"


def _reason(overrides: Overrides, backend: str, name: str, device: DeviceProperties) -> str:
    """The reason of the known failure that applies, or "" where none does."""
    known = overrides.known_failure(backend, name, device)
    return "" if known is None else known.reason


def _adapter(name: str, vendor: str) -> DeviceProperties:
    """The properties of a WebGPU device on an adapter of that name and driver."""
    return DeviceProperties(
        name=name,
        vendor=vendor,
        memory_nbytes=8 << 30,
        max_units_per_ruda=1024,
        max_ruda_dim=(1024, 1024, 64),
        max_ruda_count=(65535, 65535, 65535),
        max_shared_memory_nbytes=32 << 10,
        plane_dim=32,
        compute_units=1,
        alignment_nbytes=256,
    )


LAVAPIPE = _adapter("llvmpipe (LLVM 15.0.6, 256 bits)", "Vulkan Mesa 22.3.6 (LLVM 15.0.6)")
NVIDIA = _adapter("NVIDIA H200", "Vulkan NVIDIA 570.124.06")


def on_lavapipe(properties: DeviceProperties) -> bool:
    """A driver's predicate of the devices a failure is known on: Mesa's lavapipe, by its
    adapter's name."""
    return "llvmpipe" in properties.name


def test_a_device_scoped_known_failure_applies_to_its_device_and_not_to_another():
    scoped = KnownFailure("cos(1e10) is 1.0", devices="lavapipe", applies=on_lavapipe)
    overrides = Overrides({"webgpu": {F32_OPS: scoped}})
    assert _reason(overrides, "webgpu", F32_OPS, LAVAPIPE) == (
        "webgpu declares a known failure on lavapipe: cos(1e10) is 1.0"
    )
    assert overrides.known_failure("webgpu", F32_OPS, NVIDIA) is None
    assert overrides.known_failure("webgpu", F16_OPS, LAVAPIPE) is None  # another test
    assert overrides.known_failure("opencl", F32_OPS, LAVAPIPE) is None  # another backend


def test_a_plain_reason_applies_to_every_device_of_its_backend():
    overrides = Overrides({"webgpu": {"test_ops_float::*": KnownFailure("no exact cos")}})
    for device in (LAVAPIPE, NVIDIA):
        assert _reason(overrides, "webgpu", F16_OPS, device) == (
            "webgpu declares a known failure: no exact cos"
        )


def test_a_predicate_that_fails_names_the_backend_and_the_pattern():
    def broken(properties: DeviceProperties) -> bool:
        raise KeyError("driver_version")

    overrides = Overrides({"webgpu": {F32_OPS: KnownFailure("x", devices="some", applies=broken)}})
    with pytest.raises(PluginError, match=r"webgpu: the known failure .*float_ops.*KeyError"):
        overrides.known_failure("webgpu", F32_OPS, NVIDIA)


def test_a_part_not_declared_fails_the_test_and_declared_parts_alone_are_expected():
    known = KnownCases("webgpu declares a known failure: coarse cos", frozenset({"cos", "sin"}))
    with pytest.raises(pytest.fail.Exception, match="exp is off"):
        known.settle({"cos": "cos is off", "exp": "exp is off"})
    with pytest.raises(pytest.xfail.Exception, match=r"coarse cos \(cos failed\)"):
        known.settle({"cos": "cos is off"})
    with pytest.raises(pytest.fail.Exception, match="cos, sin passed, but declared"):
        known.settle({})
    with pytest.raises(pytest.fail.Exception, match="exp is off"):
        KnownCases().settle({"exp": "exp is off"})
    KnownCases().settle({})  # nothing declared, nothing failed


@pytest.mark.parametrize("cases", [{"sin"}, frozenset({""}), frozenset({1})], ids=str)
def test_cases_that_are_not_a_frozenset_of_names_are_refused(cases):
    with pytest.raises(PluginError, match="cases="):
        KnownFailure("a reason", cases=cases)


@pytest.mark.parametrize(
    ("devices", "applies"),
    [("lavapipe", None), ("", on_lavapipe), ("lavapipe", "llvmpipe")],
    ids=["devices-without-applies", "applies-without-devices", "applies-not-callable"],
)
def test_a_malformed_known_failure_is_refused_where_it_is_made(devices, applies):
    with pytest.raises(PluginError, match="KnownFailure"):
        KnownFailure("a reason", devices=devices, applies=applies)

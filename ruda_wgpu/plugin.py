"""The ``webgpu`` driver plugin. Imports wgpu only when probed."""

from __future__ import annotations

from collections.abc import Mapping

from ruda_core import __version__
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, NoDevice, hookimpl

from .runtime import INSTALL_HINT, WebGpuDevice, WebGpuRuntime

_NO_FENCE = (
    "WGSL has no memory fence outside its barriers, which must be reached by the whole cube, "
    "so fence_units() and fence_device() are refused (UnsupportedFeature)"
)
_ENDLESS = (
    "lavapipe (Mesa's CPU Vulkan driver, the adapter this backend is proven on) ends every "
    "unit's loops after 65 535 turns in all, so a kernel that never ends ends; remove on a GPU"
)
#: Known failures, by conformance name: what WGSL cannot say, and lavapipe's limits.
XFAILS = {
    "test_barriers::test_reducing_barriers_repeat_in_a_loop": _NO_FENCE,
    "test_barriers::test_last_cube_of_a_grid_reduction_sees_every_partial": _NO_FENCE,
    "test_waits::test_a_stream_held_up_by_another_streams_kernel_times_out_naming_that_kernel": (
        _ENDLESS
    ),
    "test_waits::test_ctrl_c_ends_a_sync_of_a_kernel_that_never_ends_within_a_second": _ENDLESS,
    "test_waits::test_exit_with_work_queued_behind_a_kernel_that_never_ends_is_bounded_and_warns": (
        _ENDLESS
    ),
    "test_ops_float::test_float_ops_match_the_reference[f32]": (
        "lavapipe's sin, cos and tan reduce large arguments coarsely: cos(1e10) is 1.0 where "
        "it is 0.873; remove where the adapter's are exact to 16 ulp"
    ),
}


def _probe() -> list[WebGpuDevice]:
    from .adapters import all_adapters

    adapters = all_adapters()
    if not adapters:
        raise NoDevice(
            "wgpu found no adapter that computes; install a Vulkan driver (on a machine "
            "without a GPU: apt install mesa-vulkan-drivers, a CPU one)"
        )
    return [WebGpuDevice(k) for k in range(len(adapters))]


def _identify(device: object) -> str:
    from .adapters import all_adapters, describe

    if not isinstance(device, WebGpuDevice):
        raise TypeError(f"{device!r} is not a WebGpuDevice")
    return describe(all_adapters()[device.index])


@hookimpl
def ruda_conformance_xfails() -> Mapping[str, str]:
    """The conformance tests this backend is known to fail, each with why (see
    :data:`XFAILS`)."""
    return XFAILS


@hookimpl
def ruda_backend_info() -> BackendInfo:
    return BackendInfo(
        "webgpu",
        __version__,
        PLUGIN_API_VERSION,
        WebGpuRuntime,
        _probe,
        install_hint=INSTALL_HINT,
        identify=_identify,
        dlpack_device_type=None,  # GPUBuffer objects: not shared with other libraries by address
    )

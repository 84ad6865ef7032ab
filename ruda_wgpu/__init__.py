"""The WebGPU device: IR -> WGSL run by wgpu-native (through wgpu-py) on Vulkan, Metal or
D3D12; on a machine without a GPU, Mesa's lavapipe (a CPU Vulkan driver). ``RudaCount`` is the
workgroup count of a dispatch and ``RudaDim`` the workgroup size.

wgpu is imported only when a WebGPU device is probed or used; ``ruda_core.client("webgpu:0")``
or ``WebGpuRuntime.client(WebGpuDevice(0))`` gives a device's client.
"""

from .runtime import WebGpuDevice, WebGpuRuntime

__all__ = ["WebGpuDevice", "WebGpuRuntime"]

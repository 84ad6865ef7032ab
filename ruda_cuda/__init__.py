"""The CUDA device: IR -> CUDA C++ compiled by NVRTC (through CuPy) for the device's own
architecture, CUDA streams and events. ``RudaCount`` is the grid, ``RudaDim`` the block.

CuPy is imported only when a CUDA device is first used; ``ruda_core.client("cuda:0")`` or
``CudaRuntime.client(CudaDevice(0))`` gives a device's client.
"""

from .runtime import CudaDevice, CudaRuntime

__all__ = ["CudaDevice", "CudaRuntime"]

"""The OpenCL device: IR -> OpenCL C built by the platform's driver (through PyOpenCL),
one in-order queue per stream. ``RudaCount`` is the work-group count, ``RudaDim`` the local size.

PyOpenCL is imported only when an OpenCL device is probed or used; ``ruda_core.client("opencl:0")``
or ``OpenCLRuntime.client(OpenCLDevice(0))`` gives a device's client.
"""

from .runtime import OpenCLDevice, OpenCLRuntime

__all__ = ["OpenCLDevice", "OpenCLRuntime"]

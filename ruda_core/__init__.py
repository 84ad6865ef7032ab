"""ruda: a portable GPU compute runtime for Python.

``import ruda_core as ruda`` gives device discovery across every installed driver::

    ruda.enumerate_all_devices()     # every device of every working backend
    ruda.backends()                  # each backend's status and reason
    ruda.client("cuda:0")            # the client of one device ("cpu", "opencl:1" …)
    ruda.asarray(array, "opencl:0")  # a RudaTensor holding a copy there; .numpy() reads it back
    ruda.from_dlpack(array)          # a RudaTensor over another library's memory, no copy

Kernels are written with :mod:`ruda_core.lang`; contracts live in :mod:`ruda_core.runtime`.
Importing this package imports no driver.
"""

from .arrays import asarray
from .plugins import BackendStatus, Status, backends, client, enumerate_all_devices, reload
from .sharing import from_cuda_array_interface, from_dlpack
from .tensor import RudaTensor

__version__ = "0.1.0"

__all__ = [
    "BackendStatus",
    "RudaTensor",
    "Status",
    "__version__",
    "asarray",
    "backends",
    "client",
    "enumerate_all_devices",
    "from_cuda_array_interface",
    "from_dlpack",
    "reload",
]

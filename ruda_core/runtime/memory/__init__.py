"""Memory: the backend's ``Storage``, the generic pools over it, ``Handle`` and ``Binding``."""

from .handle import Binding, Handle
from .management import Fence, MemoryConfig, MemoryManagement
from .storage import Storage
from .usage import MemoryUsage

__all__ = [
    "Binding",
    "Fence",
    "Handle",
    "MemoryConfig",
    "MemoryManagement",
    "MemoryUsage",
    "Storage",
]

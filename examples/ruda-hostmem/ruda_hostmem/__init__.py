"""``hostmem``: an out-of-tree ruda backend over mmap-backed host pages.

It imports only ``ruda_core``'s public API; the reference device's compiler and server classes
come from ``ruda_core.backends()`` when the first client is made.
"""

from .runtime import HostMemDevice, HostMemRuntime
from .storage import MmapStorage

__all__ = ["HostMemDevice", "HostMemRuntime", "MmapStorage"]

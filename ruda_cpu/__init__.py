"""The NumPy reference device: IR -> vectorised NumPy, run in lockstep. The oracle of ruda.

``CpuRuntime.client()`` gives its client; ``ruda_core.client("cpu")`` is the same.
"""

from .runtime import CpuDevice, CpuRuntime

__all__ = ["CpuDevice", "CpuRuntime"]

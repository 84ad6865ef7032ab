"""The NumPy reference device: IR -> vectorised NumPy, run in lockstep. The oracle of ruda.

``CpuRuntime.client()`` gives its client; ``ruda_core.client("cpu")`` is the same.
:func:`sanitize` / :func:`sanitizing` (or ``RUDA_SANITIZE=1``) run its launches under the
sanitizer.
"""

from .runtime import CpuDevice, CpuRuntime
from .sanitize import is_sanitizing, sanitize, sanitizing

__all__ = ["CpuDevice", "CpuRuntime", "is_sanitizing", "sanitize", "sanitizing"]

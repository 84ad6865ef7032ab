"""An import path kept for existing code: launch geometry and checking modes live in
:mod:`ruda_core.runtime.dims`.

New code imports them from :mod:`ruda_core.runtime`.
"""

from .dims import BoundsCheckMode, ExecutionMode, RudaCount, RudaDim, integral

__all__ = ["BoundsCheckMode", "ExecutionMode", "RudaCount", "RudaDim", "integral"]

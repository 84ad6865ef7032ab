"""An import path kept for existing code: the error tree lives in :mod:`ruda_core.errors`.

New code imports from :mod:`ruda_core.runtime` (or :mod:`ruda_core.errors` below the runtime).
"""

from ..errors import *  # noqa: F403  # re-exports exactly the tree's __all__
from ..errors import __all__ as __all__

"""``ExecutionMode``: how a compiled kernel treats out-of-bounds accesses of its arrays.

The bounds pass (:mod:`.bounds`) rewrites a definition for a mode, and every compiled kernel
records the mode it implements. The runtime re-exports it (``ruda_core.runtime.ExecutionMode``)
and maps the user-facing ``BoundsCheckMode`` onto it. This module imports nothing.
"""

from __future__ import annotations

import enum

__all__ = ["ExecutionMode"]


class ExecutionMode(enum.Enum):
    """How a compiled kernel treats out-of-bounds accesses of its arrays."""

    CHECKED = "checked"  #: OOB reads return 0, OOB writes are dropped
    VALIDATE = "validate"  #: CHECKED, and the first OOB access is reported at the next sync
    UNCHECKED = "unchecked"  #: no checks; the caller guarantees all accesses are in bounds

    #: members are singletons: hashed by identity, in C (``Enum`` hashes the name in Python)
    __hash__ = object.__hash__

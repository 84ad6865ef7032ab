"""IR -> WGSL: the emitter (:mod:`.emitter`), value operations (:mod:`.values`) and the launch
record (:mod:`.layout`). Pure; imports no driver."""

from .emitter import WgslEmitter, WgslTarget, all_writable, workgroup_nbytes, writable_arrays
from .layout import RecordLayout

__all__ = [
    "RecordLayout",
    "WgslEmitter",
    "WgslTarget",
    "all_writable",
    "workgroup_nbytes",
    "writable_arrays",
]

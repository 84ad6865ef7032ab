"""IR -> WGSL: the emitter (:mod:`.emitter`), the dialect of the shared expression lowering
(:mod:`.dialect`), what a module binds (:mod:`.bindings`) and the launch record
(:mod:`.layout`). Pure; imports no driver."""

from .bindings import all_writable, reports_faults, workgroup_nbytes, writable_arrays
from .dialect import WgslDialect
from .emitter import FAULT_WIDTH_SHIFT, PLANE_FAULT, WgslEmitter
from .layout import RecordLayout

__all__ = [
    "FAULT_WIDTH_SHIFT",
    "PLANE_FAULT",
    "RecordLayout",
    "WgslDialect",
    "WgslEmitter",
    "all_writable",
    "reports_faults",
    "workgroup_nbytes",
    "writable_arrays",
]

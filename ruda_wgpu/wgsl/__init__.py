"""IR -> WGSL: the emitter (:mod:`.emitter`), the dialect of the shared expression lowering
(:mod:`.dialect`), what a module binds (:mod:`.bindings`) and the launch record
(:mod:`.layout`). Pure; imports no driver."""

from .bindings import all_writable, workgroup_nbytes, writable_arrays
from .dialect import WgslDialect
from .emitter import WgslEmitter
from .layout import RecordLayout

__all__ = [
    "RecordLayout",
    "WgslDialect",
    "WgslEmitter",
    "all_writable",
    "workgroup_nbytes",
    "writable_arrays",
]

"""``ByteCopies``: writes and copies of byte ranges that do not start and end on 4-byte words.

WebGPU's buffer copies and queue writes move whole words, at offsets that are multiples of 4,
and a word past a range's end may hold another view's bytes. Such a range is copied instead by
a compute dispatch (``byte_copy.wgsl``): each unit builds one word of the destination from the
source's bytes, keeping the word's own bytes outside the range. A write stages its bytes in a
buffer of their own first; a copy within one buffer reads a copy of the source's words (see the
server). The dispatch is recorded in the stream's compute pass, so it is ordered with the
stream's other work. Imports wgpu.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from .adapters import WgpuErrors, bind_group, own_pipeline

if TYPE_CHECKING:
    from .server import WebGpuStream

__all__ = ["ByteCopies"]

#: Units per workgroup of the dispatch, each one word of the destination.
_UNITS = 64
#: A dispatch's workgroups along one axis (WebGPU's limit); more go along y.
_MAX_GROUPS = 65535


class ByteCopies:
    """The byte-copy pipeline of one device.

    :param stride: the bytes a :data:`RECORD` takes in a stream's record arena.
    """

    #: A dispatch's record: the source's first byte, the destination's, the bytes, and the
    #: workgroups along x.
    RECORD = struct.Struct("<4I")

    def __init__(self, device: Any, stride: int) -> None:
        self._device = device
        self._stride = stride
        with WgpuErrors("building the byte-copy shader"):
            self._pipeline = own_pipeline(device, "byte_copy", UNITS=_UNITS)
        self._layout = self._pipeline.get_bind_group_layout(0)

    def record(
        self, stream: WebGpuStream, source: Any, start: int, destination: Any, at: int, n: int
    ) -> None:
        """Record the copy of ``n`` bytes from byte ``start`` of buffer ``source`` to byte
        ``at`` of buffer ``destination`` (another buffer) in ``stream``'s compute pass."""
        words = -(-(at + n) // 4) - at // 4  # of the destination, each a unit's
        groups = -(-words // _UNITS)
        grid = (min(groups, _MAX_GROUPS), -(-groups // _MAX_GROUPS), 1)
        offset = stream.record(self._stride, self.RECORD, start, at, n, grid[0])
        windows = [(stream.records, offset, self.RECORD.size), (source, 0, source.size)]
        windows.append((destination, 0, destination.size))
        group = bind_group(self._device, self._layout, windows)
        compute = stream.pass_()
        compute.set_pipeline(self._pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*grid)

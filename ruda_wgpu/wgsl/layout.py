"""The launch record of a WGSL kernel: the ``u32`` words every launch hands it in its first
binding, and how the host packs them.

A WebGPU kernel takes no arguments, so each launch writes one record of words into a parameter
buffer (binding 0, ``var<uniform> P: array<vec4<u32>, 256>``, bound at a dynamic offset per
launch; word ``k`` is ``P[k / 4][k % 4]``, see :func:`record_word`: a uniform binding is read
through the GPU's constant path, once for all units, and a uniform array steps 16 bytes):

=============  =====================================================================
words          meaning
=============  =====================================================================
0              the first cube's x position (a launch of more cubes along x than a dispatch
               takes folds them into z, or is several dispatches, each with its own first
               cube, see :func:`ruda_wgpu.server.dispatches`)
1, 2, 3        ``RUDA_COUNT`` x, y, z: the whole launch's cube count
4 …            the element offset of each array binding in the page it is bound to
…              the metadata (``KernelDefinition.metadata_layout``: lengths, shapes, strides)
…              the scalars: one word each, two (low, high) for 64-bit ones; ``f16`` in the
               low half of its word, ``bool`` as 0 or 1
=============  =====================================================================

Arrays are bound as whole pages (see :mod:`ruda_wgpu.storage`), so a binding at any offset
costs no bind group of its own. This module imports no driver.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import Elem, KernelDefinition

__all__ = ["HEADER_WORDS", "RECORD_WORDS", "RecordLayout", "record_word"]

#: Words before the array offsets: the first cube's x and the cube count.
HEADER_WORDS = 4
#: The words of launch record a dispatch sees from its dynamic offset: a kernel's record must
#: fit.
RECORD_WORDS = 1024


def record_word(k: int) -> str:
    """The WGSL expression of word ``k`` of the launch record."""
    return f"P[{k // 4}][{k % 4}]"


#: The ``struct`` format of each scalar type (a word, two for 64-bit ones), by its element
#: (in ``Elem``'s order: a new element type stops the import here; bf16 has none)
_SCALAR_FORMAT = dict(zip(Elem, "?bhiqBHIQe_fd", strict=True))
del _SCALAR_FORMAT[Elem.BF16]


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """Where each value of a kernel's launch record lies (in words), and its packer. The array
    offsets start at word :data:`HEADER_WORDS`."""

    metadata: int  #: the word of the first metadata value
    scalars: tuple[int, ...]  #: the first word of each scalar parameter
    #: packs ``(x0, cx, cy, cz, *offsets, *metadata, *scalars)`` into the whole record
    packer: struct.Struct

    @classmethod
    def of(cls, definition: KernelDefinition) -> RecordLayout:
        """The layout of ``definition``'s record.

        :raises UnsupportedFeature: a scalar parameter of a type WGSL lacks (``bf16``).
        """
        metadata = HEADER_WORDS + len(definition.array_params)
        word = metadata + len(definition.metadata_layout())
        fmt = f"<{word}I"
        scalars = []
        for p in definition.scalar_params:
            if p.elem not in _SCALAR_FORMAT:
                raise UnsupportedFeature(f"WGSL has no {p.elem} type")
            scalars.append(word)
            padding = f"{4 - p.elem.nbytes}x" if p.elem.nbytes < 4 else ""  # to a whole word
            fmt += _SCALAR_FORMAT[p.elem] + padding
            word += 2 if p.elem.bits == 64 else 1
        return cls(metadata, tuple(scalars), struct.Struct(fmt))

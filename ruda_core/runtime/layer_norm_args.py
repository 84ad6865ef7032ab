"""The arguments of the native LayerNorm hooks of :class:`~ruda_core.runtime.Runtime`
(``layer_norm``, ``layer_norm_backward``): :class:`TensorBuffer`. Holds no logic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..ir import Elem
from .layout import Strided
from .memory.handle import Handle, _view

__all__ = ["Spec", "TensorBuffer", "tensor_buffer", "tensor_views"]


@dataclass(frozen=True, slots=True)
class TensorBuffer(Strided):
    """A device tensor passed to or returned from native LayerNorm: a handle and its layout."""

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem


_new = object.__new__
_set_fields = tuple(
    TensorBuffer.__dict__[field].__set__ for field in ("handle", "shape", "strides", "elem")
)


def tensor_buffer(
    handle: Handle, shape: tuple[int, ...], strides: tuple[int, ...], elem: Elem
) -> TensorBuffer:
    """``TensorBuffer(handle, shape, strides, elem)``, the same frozen value, built through its
    slots directly (the dataclass's ``__init__`` sets each field through ``object.__setattr__``,
    which costs half as much again): for the results of every LayerNorm call."""
    buf = _new(TensorBuffer)
    set_handle, set_shape, set_strides, set_elem = _set_fields
    set_handle(buf, handle)
    set_shape(buf, shape)
    set_strides(buf, strides)
    set_elem(buf, elem)
    return buf


#: Where a tensor lies in memory: (start byte, bytes, shape, strides, element type).
Spec = tuple[int, int, tuple[int, ...], tuple[int, ...], Elem]


def tensor_views(memory: Handle, specs: Iterable[Spec]) -> list[TensorBuffer]:
    """For each ``(start, nbytes, shape, strides, elem)`` of ``specs``,
    ``tensor_buffer(memory.offset(start, start + nbytes), shape, strides, elem)``, the views
    made in one frame for all (no ``offset`` call apiece): how every LayerNorm call makes its
    results in its one allocation.

    :raises ValueError: for a byte range that is not inside ``memory``.
    """
    owner, base, size = memory._owner, memory.offset_bytes, memory.nbytes
    server_id = memory.server_id
    views = []
    for start, nbytes, shape, strides, elem in specs:
        if not 0 <= start <= start + nbytes <= size:
            raise ValueError(
                f"byte range [{start}, {start + nbytes}) is outside a {size}-byte handle"
            )
        handle = _view(owner, base + start, nbytes, server_id)
        views.append(tensor_buffer(handle, shape, strides, elem))
    return views

"""The arguments of the native LayerNorm hooks of :class:`~ruda_core.runtime.Runtime`
(``layer_norm``, ``layer_norm_backward``): :class:`TensorBuffer`. Holds no logic."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Elem
from .layout import Strided
from .memory.handle import Handle

__all__ = ["TensorBuffer", "tensor_buffer"]


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

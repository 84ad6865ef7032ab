"""Ticket words: one ``u32`` of device memory per device and stream, zero between launches, for
kernels whose cubes take tickets and whose last cube finishes the launch's work and sets the
word back to zero (:func:`.reduce_kernels.reduce_whole`). Launches on one stream run in order,
so they can share the stream's word; launches on another stream get their own (ruda orders
streams that use one handle, so a word shared by every stream would make them wait for each
other). A word lives as long as its device's server. This module never imports a driver.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import ComputeClient, ComputeServer, Handle

__all__ = ["ticket_word"]

_words: weakref.WeakKeyDictionary[ComputeServer, dict[int, Handle]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def ticket_word(client: ComputeClient) -> ArrayArg:
    """The ticket word of ``client``'s device and current stream (made, zeroed, on first use)."""
    stream = client.execution_stream().value
    with _lock:
        words = _words.setdefault(client.server, {})
        word = words.get(stream)
        if word is None:
            word = words[stream] = client.create_from_slice(np.zeros(1, np.uint32))
    return ArrayArg(word, 1, Elem.U32)

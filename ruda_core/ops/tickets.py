"""Per-stream device memory for kernels whose cubes take tickets, kept per device and stream:

* the ticket word (:func:`ticket_word`): one ``u32``, zero between launches, for kernels whose
  last cube to take a ticket sets it back to zero (:func:`.reduce_kernels.reduce_whole`,
  :func:`.scan_kernels.scan_chained`);
* the look-back state of a chained scan (:func:`lookback`): a flag word per tile and two
  values per tile. Flags are never cleared: each launch gets an *epoch* of its own, and a
  tile's flag is ready only when it holds that epoch (``2 * epoch`` with the tile's sum,
  ``2 * epoch + 1`` with its inclusive prefix), so older launches' flags are never taken for
  this one's. Before the epochs would run out of the word, the flags start from zero again.

Launches on one stream run in order, so they can share the stream's memory; launches on
another stream get their own (ruda orders streams that use one handle, so memory shared by
every stream would make them wait for each other). It lives as long as its device's server.
This module never imports a driver.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import ComputeClient, ComputeServer, Handle

__all__ = ["Lookback", "lookback", "ticket_word"]

#: The largest epoch: ``2 * epoch + 1`` still fits a ``u32``.
MAX_EPOCH = (1 << 31) - 1
#: The widest element a look-back value takes.
VALUE_NBYTES = 8


@dataclass(frozen=True, slots=True)
class Lookback:
    """The look-back memory of one launch: ``flags`` (``u32``, a word per tile), the tiles'
    ``sums`` and inclusive ``prefixes`` (handles of ``tiles`` values of up to 8 bytes, typed
    by the caller) and the launch's ``epoch``."""

    flags: ArrayArg
    sums: Handle
    prefixes: Handle
    epoch: int


@dataclass(slots=True)
class _Chain:
    flags: Handle
    sums: Handle
    prefixes: Handle
    tiles: int
    epoch: int


_words: weakref.WeakKeyDictionary[ComputeServer, dict[int, Handle]] = weakref.WeakKeyDictionary()
_chains: weakref.WeakKeyDictionary[ComputeServer, dict[int, _Chain]] = weakref.WeakKeyDictionary()
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


def lookback(client: ComputeClient, tiles: int) -> Lookback:
    """The look-back memory for one launch over ``tiles`` tiles on ``client``'s device and
    current stream, with a new epoch (grown, and its flags zeroed, where it is too small)."""
    stream = client.execution_stream().value
    with _lock:
        chains = _chains.setdefault(client.server, {})
        chain = chains.get(stream)
        if chain is None or chain.tiles < tiles or chain.epoch == MAX_EPOCH:
            # grown by doubling at least, so that growing sizes seldom allocate
            size = tiles if chain is None else max(tiles, chain.tiles * (1 + (chain.tiles < tiles)))
            chain = chains[stream] = _Chain(
                client.create_from_slice(np.zeros(size, np.uint32)),
                client.empty(size * VALUE_NBYTES),
                client.empty(size * VALUE_NBYTES),
                size,
                0,
            )
        chain.epoch += 1
        flags = ArrayArg(chain.flags, tiles, Elem.U32)
        return Lookback(flags, chain.sums, chain.prefixes, chain.epoch)

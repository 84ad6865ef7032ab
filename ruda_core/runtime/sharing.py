"""A server's memory shared with other libraries (DLPack, the CUDA array interface): its
addresses exported with the consumer's stream ordered after ruda's work, other libraries'
memory adopted as handles or borrowed as bindings, and the objects that own borrowed memory
kept alive until the work that uses it is done.

Everything here goes through the driver's sharing hooks, which a device whose memory is not
shared by address leaves at their defaults (``dlpack_device()`` is then None). Imports no
driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..ir.lines import MAX_LINE_ALIGNMENT
from .memory.handle import Binding, Handle, Page, Slice
from .stream_table import StreamTable

if TYPE_CHECKING:
    from .driver import Driver

__all__ = ["Sharing"]


class Sharing:
    """The memory one server shares with other libraries.

    :param streams: the server's streams, memory and lock.
    :param driver: the driver (its sharing and queue hooks).
    """

    __slots__ = ("driver", "streams")

    def __init__(self, streams: StreamTable, driver: Driver) -> None:
        self.streams = streams
        self.driver = driver

    def export(self, binding: Binding, consumer: int | None) -> int:
        """The address of ``binding`` for another library, with that library's stream
        ``consumer`` ordered after every queued use of the memory (``-1``: no ordering).
        Blocks only on a device whose driver's ``order_consumer`` waits on the host.

        :raises InvalidHandle: for a freed binding or one of another server.
        :raises ServerError: the poison of a buffer a failed kernel left without valid data.
        """
        streams = self.streams
        driver = self.driver
        with streams.lock:
            s = binding.slice
            if binding.server_id != streams.server_id or s.freed:
                raise streams.bad_binding(binding)
            if s.error is not None:
                raise s.error
            address = driver.address(binding)
            fence = driver.fence(s.stream) if s.stream is not None else None
        if fence is not None and consumer != -1:
            driver.order_consumer(fence, consumer)
        return address

    def adopt(
        self,
        address: int,
        nbytes: int,
        owner: object,
        stream_value: int,
        producer: int | None = None,
    ) -> Handle:
        """A handle over ``nbytes`` at ``address`` that another library allocated on this
        device. ``owner`` keeps that memory alive until the handle is dropped and the work
        queued on it is done; the pool never reuses it. With ``producer`` (the other library's
        stream handle), work on ``stream_value`` waits for what that stream has queued.

        :raises UnsupportedFeature: on a device whose memory cannot be used by address.
        """
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value)
            if producer is not None and producer not in stream.ordered_producers:
                self.driver.order_after_producer(stream, producer)
            resource, lead = self._adopted(address, nbytes)
            memory = streams.memory
            slice_ = memory.adopt(resource, lead, nbytes, owner, stream)
            return Handle._new(slice_, memory.dropped, streams.server_id)

    def borrow(self, address: int, nbytes: int) -> Binding:
        """A binding over ``nbytes`` at ``address`` that another library allocated on this
        device, owned by nobody: the caller keeps that memory alive, for each launch that uses
        the binding, with :meth:`keep_alive`. It is refused by captures (which keep memory
        through handles) and never touches the pool; its stream bookkeeping orders ruda's
        streams as a handle's does.

        :raises UnsupportedFeature: on a device whose memory cannot be used by address.
        """
        resource, lead = self._adopted(address, nbytes)
        slice_ = Slice(Page(resource, lead + nbytes, True), lead, nbytes, nbytes)
        return Binding(slice_, lead, nbytes, self.streams.server_id, resource)

    def _adopted(self, address: int, nbytes: int) -> tuple[object, int]:
        """The page resource over memory at ``address`` and the address's offset into it. The
        page starts at the multiple of ``MAX_LINE_ALIGNMENT`` at or below ``address``, so a
        binding's ``offset_bytes`` tells its line alignment as a pool slice's does, and a launch
        that reads such memory in lines refuses a misaligned start before anything runs."""
        lead = address % MAX_LINE_ALIGNMENT if nbytes else 0
        return self.driver.adopt(address - lead, lead + nbytes), lead

    def keep_alive(self, stream_value: int, owners: Sequence[object], producer: int | None) -> None:
        """Keep ``owners`` alive until a fence recorded on the stream after this call is done
        (they are fenced in batches, and at each ``sync``), so until the work already enqueued
        there is done: call it right after enqueueing the work that uses their memory. With
        ``producer`` (another library's stream handle) other than the stream's own, later work
        on the stream first waits for what ``producer`` has queued: for that, call it before.
        A launcher's fast method with ``kept`` does both under the launch's one lock."""
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value)
            if producer is not None and producer not in stream.ordered_producers:
                self.driver.order_after_producer(stream, producer)
            backlog = streams.keep(stream, owners)
        if backlog is not None:
            backlog.wait()

    def stream_handle(self, stream_value: int) -> int | None:
        """The driver's handle of a stream for other libraries (what a DLPack producer is asked
        to order its work before), None on a device without such streams."""
        streams = self.streams
        with streams.lock:
            return self.driver.stream_handle(streams.get(stream_value))

    def last_stream_handle(self, binding: Binding) -> int | None:
        """The driver's handle of the stream that last used ``binding`` (what the CUDA array
        interface calls the producer's stream), None when none did or the device has no such
        streams."""
        with self.streams.lock:
            stream = binding.slice.stream
            return None if stream is None else self.driver.stream_handle(stream)

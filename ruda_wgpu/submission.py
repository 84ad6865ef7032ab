"""``Submitter``: the device queue's submissions, made off the caller's thread, and their
completion.

A stream's recorded commands become one command buffer at each flush; the submitter submits
them in order on a thread of its own, with the host writes that go before them, because a
submission waits there until the device has finished the previous one (lavapipe's queue does),
and so does every call that needs the queue meanwhile (a write, the unmapping of a buffer
mapped at creation), which a launch, upload, flush or sync must not. Where every earlier
submission is done (the device idle, the threads too) and the writes are small, the caller
submits itself: nothing is there to wait for, and the hand-over to the thread cost a GPU's
synchronous round trip about a fifth of a millisecond.
Each command buffer ends with a copy into a small buffer of its own; a second thread maps
those buffers in turn (the mapping completes when the submission has), runs what waits for the
submission (a read's mappings) and completes its future. The queue runs submissions in order,
so the last submission's future is a fence after everything submitted before it. Imports wgpu.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from ruda_core.runtime import Binding, Promise, RudaFuture, ServerError, ServerStream

from .adapters import read_back, translate

__all__ = ["Submitter"]

#: The most bytes of host writes a submission the caller makes itself may carry (the launch
#: records of a flush fit; a large upload is copied on the submitting thread, off the caller's).
INLINE_WRITES_NBYTES = 1 << 16


class _Submission(NamedTuple):
    stream: ServerStream
    commands: Any  #: the command buffer
    writes: list[tuple[Any, int, bytes]]  #: (buffer, offset, bytes) written before it runs
    mark: Any  #: the buffer the commands copy into last
    then: Callable[[], None] | None  #: what runs once the submission is done
    promise: Promise[None]
    written: list[Binding]  #: what its writes and commands may write
    computed: list[Binding]  #: what its commands may write (a kernel fault poisons them)


class Submitter:
    """Submits command buffers in order on a thread and completes their futures on another.

    :param device_queue: the device's ``GPUQueue``.
    :param name: names the threads.
    :param fault: the error, if any, that the four bytes a submission copied last report (the
        kernel-fault word: a kernel whose loops the driver may have stopped, or whose subgroups
        were not its planes); recorded on its stream.
    """

    def __init__(
        self, device_queue: Any, name: str, fault: Callable[[bytes], ServerError | None]
    ) -> None:
        self._queue = device_queue
        self._fault = fault
        self._submit: queue.SimpleQueue[_Submission] = queue.SimpleQueue()
        self._wait: queue.SimpleQueue[_Submission] = queue.SimpleQueue()
        #: the future of the last submission handed over (the device's latest fence)
        self.last: RudaFuture[None] = RudaFuture.ready(None)
        threading.Thread(target=self._submitting, name=f"{name} submit", daemon=True).start()
        threading.Thread(target=self._waiting, name=f"{name} wait", daemon=True).start()

    def submit(
        self,
        stream: ServerStream,
        commands: Any,
        writes: list[tuple[Any, int, bytes]],
        mark: Any,
        then: Callable[[], None] | None = None,
        computed: list[Binding] | None = None,
        uploaded: list[Binding] | None = None,
    ) -> RudaFuture[None]:
        """Hand over one command buffer and the host writes (the launch records it reads,
        uploads) made just before it; returns at once with the future of its completion.
        ``computed`` and ``uploaded``: the bindings the commands and the uploads may write,
        all poisoned if the queue refuses them, the computed ones if a kernel faults. Called
        with the server's lock held."""
        promise: Promise[None] = Promise()
        computed = computed or []
        written = computed + (uploaded or [])
        item = _Submission(stream, commands, writes, mark, then, promise, written, computed)
        # every earlier submission done: both threads are past their last use of the queue
        if self.last.done() and sum(len(w[2]) for w in writes) <= INLINE_WRITES_NBYTES:
            self._hand_over(item)
        else:
            self._submit.put(item)
        self.last = promise.future
        return promise.future

    def _hand_over(self, item: _Submission) -> None:
        """Make the submission's writes, submit it, and pass it to the waiting thread."""
        try:
            for buffer, offset, data in item.writes:
                self._queue.write_buffer(buffer, offset, data)
            self._queue.submit([item.commands])
        except Exception as exc:  # wgpu raises plain Exceptions: the stream's error
            item.stream.fail(translate("submitting queued work", exc), item.written)
        self._wait.put(item)

    def _submitting(self) -> None:
        while True:
            self._hand_over(self._submit.get())

    def _waiting(self) -> None:
        """Complete each submission in turn. Whatever wgpu raises meanwhile (a lost device)
        fails the stream and the submission's future, and what waits for the submission still
        runs (a read then raises), so that no future is left waiting."""
        while True:
            item = self._wait.get()
            failed: ServerError | None = None
            try:
                fault = self._fault(bytes(read_back(item.mark)))
                item.mark.destroy()
            except Exception as exc:  # wgpu raises plain Exceptions
                failed = translate("waiting for queued work", exc)
                item.stream.fail(failed, item.written)
            else:
                if fault is not None:  # what the commands wrote may hold the fault's garbage
                    item.stream.fail(fault, item.computed)
            if item.then is not None:
                try:
                    item.then()
                except Exception as exc:  # wgpu raises plain Exceptions
                    failed = failed or translate("completing queued work", exc)
                    item.stream.fail(failed, ())
            if failed is None:
                item.promise.set_result(None)
            else:
                item.promise.set_error(failed)

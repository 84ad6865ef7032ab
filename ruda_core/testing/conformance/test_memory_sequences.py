"""Random sequences of memory operations against a model of their bytes on the host: handles
made, viewed at any byte offset and size, written, copied (within a handle too), incremented
by a kernel or doubled by one into another handle, read, sent to the reference device and
back, dropped, with flushes and ``memory_cleanup`` between them, on three streams. Whatever the
order, every read returns what the sequence wrote before it, and every byte beside a view stays
as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

import ruda_core
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.plugins import REFERENCE_BACKEND
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim, StreamId
from ruda_core.testing.runner import TIMEOUT_S
from ruda_core.testing.samples import increment

#: The most live handles a sequence keeps, and the most bytes each has.
HANDLES, NBYTES = 6, 300
#: The streams an operation is queued on: the client's own and two more.
STREAMS = st.integers(0, 2)


#: Seeds of the bytes made and written: random bytes (rather than Hypothesis's, mostly zeros)
#: make a misplaced or missing copy show.
SEEDS = st.integers(0, 2**32 - 1)


def _bytes(nbytes: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()


@kernel
def conformance_doubled(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * u32(2)


class MemorySequence(RuleBasedStateMachine):
    """One sequence: ``handles`` live handles, each with the bytes it must hold."""

    def __init__(self, client: ComputeClient, peer: ComputeClient | None) -> None:
        super().__init__()
        self.clients = [client]
        for _ in range(2):
            side = client.fixed_execution_queue()
            side.set_stream(StreamId.new())
            self.clients.append(side)
        self.peer = peer
        self.handles: list[tuple[Handle, bytearray]] = []

    def _view(
        self, data: st.DataObject, k: int, multiple: int = 1
    ) -> tuple[Handle, bytearray, int, int]:
        """A live handle, its model and a range ``[a, b)`` of it (of whole ``multiple``s)."""
        handle, model = self.handles[k % len(self.handles)]
        a = data.draw(st.integers(0, len(model) // multiple)) * multiple
        b = a + data.draw(st.integers(0, (len(model) - a) // multiple)) * multiple
        return handle, model, a, b

    @precondition(lambda self: len(self.handles) < HANDLES)
    @rule(nbytes=st.integers(0, NBYTES), seed=SEEDS, stream=STREAMS)
    def create(self, nbytes: int, seed: int, stream: int) -> None:
        data = _bytes(nbytes, seed)
        self.handles.append((self.clients[stream].create_from_slice(data), bytearray(data)))

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), k=st.integers(0, HANDLES), stream=STREAMS)
    def write(self, data: st.DataObject, k: int, stream: int) -> None:
        handle, model, a, b = self._view(data, k)
        values = _bytes(b - a, data.draw(SEEDS))
        self.clients[stream].write(handle.offset(a, b), values)
        model[a:b] = values

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), k=st.integers(0, HANDLES), j=st.integers(0, HANDLES))
    def copy(self, data: st.DataObject, k: int, j: int) -> None:
        handle, model, a, b = self._view(data, k)
        target, into = self.handles[j % len(self.handles)]
        n = b - a
        if n > len(into):
            return
        t = data.draw(st.integers(0, len(into) - n))
        if target is handle and t < b and a < t + n:  # overlapping views are refused
            return
        stream = data.draw(STREAMS)
        self.clients[stream].copy(handle.offset(a, b), target.offset(t, t + n))
        into[t : t + n] = model[a:b]

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), k=st.integers(0, HANDLES), stream=STREAMS)
    def increment(self, data: st.DataObject, k: int, stream: int) -> None:
        handle, model, a, b = self._view(data, k, multiple=4)
        n = (b - a) // 4
        if n == 0:
            return
        view = ArrayArg(handle.offset(a, b), n)
        increment.launch(self.clients[stream], RudaCount(-(-n // 32)), RudaDim(32), view)
        model[a:b] = (np.frombuffer(model[a:b], np.uint32) + np.uint32(1)).tobytes()

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), k=st.integers(0, HANDLES), j=st.integers(0, HANDLES), stream=STREAMS)
    def double(self, data: st.DataObject, k: int, j: int, stream: int) -> None:
        """A kernel reading words of one view and writing twice each into another (of any
        handle: its producer may be another stream's work)."""
        handle, model, a, b = self._view(data, k, multiple=4)
        target, into = self.handles[j % len(self.handles)]
        n = min(b - a, len(into) - len(into) % 4) // 4
        if n == 0:
            return
        t = data.draw(st.integers(0, (len(into) - 4 * n) // 4)) * 4
        if target is handle and t < a + 4 * n and a < t + 4 * n:
            return
        source, out = (
            ArrayArg(handle.offset(a, a + 4 * n), n),
            ArrayArg(target.offset(t, t + 4 * n), n),
        )
        conformance_doubled.launch(
            self.clients[stream], RudaCount(-(-n // 32)), RudaDim(32), source, out
        )
        doubled = np.frombuffer(model[a : a + 4 * n], np.uint32) * np.uint32(2)
        into[t : t + 4 * n] = doubled.tobytes()

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), k=st.integers(0, HANDLES), stream=STREAMS)
    def read(self, data: st.DataObject, k: int, stream: int) -> None:
        handle, model, a, b = self._view(data, k)
        got = self.clients[stream].read_one(handle.offset(a, b), timeout=TIMEOUT_S)
        assert bytes(got) == bytes(model[a:b]), f"bytes [{a}, {b}) of a {len(model)}-byte handle"

    @precondition(lambda self: self.handles and self.peer is not None)
    @rule(data=st.data(), k=st.integers(0, HANDLES), stream=STREAMS)
    def round_trip(self, data: st.DataObject, k: int, stream: int) -> None:
        """A view sent to the reference device, and that copy sent back as a new handle."""
        handle, model, a, b = self._view(data, k)
        peer = self.peer
        assert peer is not None
        there = self.clients[stream].to_client(handle.offset(a, b), peer)
        back = peer.to_client(there, self.clients[(stream + 1) % len(self.clients)])
        self.handles.append((back, bytearray(model[a:b])))

    @precondition(lambda self: self.handles)
    @rule(k=st.integers(0, HANDLES))
    def drop(self, k: int) -> None:
        self.handles.pop(k % len(self.handles))

    @rule(stream=STREAMS, cleanup=st.booleans())
    def flush(self, stream: int, cleanup: bool) -> None:
        if cleanup:
            self.clients[stream].memory_cleanup()
        else:
            self.clients[stream].flush()

    def teardown(self) -> None:
        client = self.clients[0]
        for handle, model in self.handles:
            assert bytes(client.read_one(handle, timeout=TIMEOUT_S)) == bytes(model)


def test_any_sequence_of_writes_copies_launches_and_reads_keeps_every_byte(client):
    peer = None if client.name() == REFERENCE_BACKEND else ruda_core.client(REFERENCE_BACKEND)
    run_state_machine_as_test(
        lambda: MemorySequence(client, peer),
        settings=settings(
            max_examples=30,
            stateful_step_count=30,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )

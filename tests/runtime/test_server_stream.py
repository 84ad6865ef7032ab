"""``ServerStream``, the per-stream state drivers subclass: the server's own state of a stream
cannot be replaced by a subclass's attribute of the same name."""

from __future__ import annotations

from collections import deque

import pytest

from ruda_core.runtime import ServerStream


class _QueueStream(ServerStream):
    """A driver's stream: the base state, and a queue of its own."""

    def __init__(self, slot: int) -> None:
        super().__init__(slot)
        self.queue: list[str] = []


def test_a_driver_stream_cannot_replace_the_kept_owners():
    stream = _QueueStream(3)
    stream.kept.extend(["owner"])
    with pytest.raises(AttributeError):
        stream.kept = []  # type: ignore[misc]  # the mistake the property refuses
    with pytest.raises(AttributeError):
        stream.fenced = deque()  # type: ignore[misc]
    assert stream.kept == ["owner"]


def test_taking_the_kept_batch_leaves_an_empty_one():
    stream = _QueueStream(0)
    stream.kept.extend(["a", "b"])
    assert stream.take_kept() == ["a", "b"]
    assert stream.kept == []

"""The interpreter exit's wait for a server's streams (``StreamTable.exit_work``) never raises:
a stream whose sync fails (a lost device) is named, and the other streams are still waited for
and checked."""

from __future__ import annotations

import threading
import time

import ruda_core as ruda
from ruda_core.runtime import RudaFuture, ServerError


def test_a_stream_that_cannot_be_synced_is_named_and_the_others_are_still_checked():
    client = ruda.client("cpu")
    client.sync().result()
    other = threading.Thread(target=lambda: client.sync().result())  # a second stream
    other.start()
    other.join()
    streams = client.server.streams
    broken = client.execution_stream().value % streams.size
    checked = []

    def sync(stream):
        if stream.slot == broken:
            raise ServerError("the device was lost")
        return RudaFuture.ready(None), lambda _: checked.append(stream.slot)

    unfinished, failed = streams.exit_work(time.monotonic() + 5, sync)
    assert unfinished == []
    assert failed == [f"stream {broken} of cpu: the device was lost"]
    assert checked and broken not in checked

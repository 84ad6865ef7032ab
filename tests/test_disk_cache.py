"""The persistent caches on disk: capped, least recently used first; clearing is safe while
another process writes."""

from __future__ import annotations

import hashlib
import json
import os
import time

from fresh_processes import start

from ruda_core.runtime.cache import CacheKind, DiskCache, EntryOrigin
from ruda_core.runtime.cache_inventory import clear, list_entries

ORIGIN = EntryOrigin("cpu", "cpu", "test entry")


def _key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def _value(i: int) -> bytes:
    return bytes([i]) * 1000


def test_the_cap_removes_the_least_recently_used_entries_first(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    cache = DiskCache(CacheKind.TUNING)
    for i in range(9):
        cache.put(_key(i), _value(i), ORIGIN)
    (entry,) = [e for e in list_entries() if e.path.name == _key(0)]
    # the cap holds nine entries but not ten; pruning goes down to 90% of it: eight
    monkeypatch.setenv("RUDA_CACHE_MAX_BYTES", str(9 * entry.nbytes + entry.nbytes // 2))
    past = time.time() - 1000
    for i in range(9):  # written in the order 0, 1, …, 8, a second apart
        path = cache.folder / _key(i)[:2] / _key(i)
        os.utime(path, (past + i, past + i))
    assert cache.get(_key(0)) == _value(0)  # a hit: entry 0 is now the most recently used

    cache.put(_key(9), _value(9), ORIGIN)

    kept = {i for i in range(10) if cache.get(_key(i)) is not None}
    assert kept == {0, 3, 4, 5, 6, 7, 8, 9}
    assert sum(e.nbytes for e in list_entries()) <= 9 * entry.nbytes


WRITER = """
import hashlib, json, sys, warnings
warnings.simplefilter("error")  # a failed write or a torn read would be a CacheWarning
from ruda_core.runtime.cache import CacheKind, DiskCache, EntryOrigin

cache = DiskCache(CacheKind.KERNELS)
origin = EntryOrigin("cpu", "cpu", "writer")
hits = 0
for i in range(int(sys.argv[1])):
    key = hashlib.sha256(str(i % 40).encode()).hexdigest()
    value = key.encode() * 100
    cache.put(key, value, origin)
    got = cache.get(key)
    assert got is None or got == value, "a read returned another entry's bytes"
    hits += got is not None
print(json.dumps({"hits": hits}))
"""


def test_clearing_while_another_process_writes_loses_nothing_but_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path / "cache"))
    writer = start(WRITER, tmp_path, "1500")
    removed = clears = 0
    while writer.poll() is None:
        removed += len(clear())
        clears += 1
    out, err = writer.communicate()
    assert writer.returncode == 0, err
    assert err == ""
    assert clears > 1 and removed > 0, "the clears ran while the writer wrote"
    assert json.loads(out)["hits"] > 0
    cache = DiskCache(CacheKind.KERNELS)
    for entry in list_entries():  # what the last writes left is whole
        assert cache.get(entry.path.name) == entry.path.name.encode() * 100
    clear()
    assert list_entries() == []
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()], "locks went too"


HOLDER = """
import sys, time
from ruda_core.runtime.cache import CacheKind, DiskCache

with DiskCache(CacheKind.TUNING).turn(sys.argv[1], 5.0):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_turn_another_process_holds_is_waited_for_until_it_ends_or_the_wait_runs_out(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path / "cache"))
    cache, key = DiskCache(CacheKind.TUNING), _key(1)
    holder = start(HOLDER, tmp_path, key)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert [p.name for p in (tmp_path / "cache").rglob("*.lock")] == [f"{key}.lock"]
        began = time.monotonic()
        with cache.turn(key, 0.5):
            assert time.monotonic() - began >= 0.5, "the wait ran its time, then went ahead"
        began = time.monotonic()
        with cache.turn(_key(2), 30.0):  # another key's turn is its own
            assert time.monotonic() - began < 5
        holder.kill()  # a process that dies lets its turn go
        holder.wait()
        began = time.monotonic()
        with cache.turn(key, 30.0):
            assert time.monotonic() - began < 5
    finally:
        holder.kill()
        holder.communicate()
    assert not list((tmp_path / "cache").rglob("*.lock")), "a turn's lock file goes with it"

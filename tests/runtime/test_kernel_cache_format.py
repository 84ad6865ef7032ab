"""Persisted kernels of another layout are rebuilt, never misread: the format version is part
of every key, a file of the previous cache file format is a silent rebuild, and a payload that
is not a persisted kernel is a warning and a rebuild."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim, kernels
from ruda_core.runtime.cache import CacheKind, CacheWarning, DiskCache, EntryOrigin
from ruda_core.runtime.cache_inventory import list_entries


@kernel
def plus_two(x: Array[f32]):
    if ABSOLUTE_POS < x.len():
        x[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32(2)


def _run(client: ComputeClient) -> tuple[int, int]:
    """Launch ``plus_two`` once, check it, and return (compiled, disk_hits)."""
    handle = client.create_from_slice(np.arange(16, dtype=np.float32))
    plus_two.launch(client, RudaCount(1), RudaDim(16), ArrayArg(handle, 16))
    result = np.frombuffer(client.read_one(handle), np.float32)
    np.testing.assert_array_equal(result, np.arange(16) + 2)
    stats = client.server.compile_stats
    return stats.compiled, stats.disk_hits


def _entries(folder: Path) -> list[Path]:
    return [p for p in (folder / "kernels").rglob("*") if p.is_file() and ".lock" not in p.name]


def test_an_entry_of_another_format_is_never_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_private_client: Callable[[], ComputeClient]
) -> None:
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    current = kernels._KERNEL_FORMAT
    monkeypatch.setattr(kernels, "_KERNEL_FORMAT", current - 1)
    assert _run(new_private_client()) == (1, 0)
    assert len(_entries(tmp_path)) == 1
    monkeypatch.setattr(kernels, "_KERNEL_FORMAT", current)
    assert _run(new_private_client()) == (1, 0)  # compiled again, no warning: not found
    assert len(_entries(tmp_path)) == 2
    assert _run(new_private_client()) == (0, 1)


def test_a_payload_that_is_not_a_compiled_kernel_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_private_client: Callable[[], ComputeClient]
) -> None:
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    assert _run(new_private_client()) == (1, 0)
    disk = DiskCache(CacheKind.KERNELS)
    foreign = b'{"source": "a record of another shape"}\n'
    for path in _entries(tmp_path):
        disk.put(path.name, foreign, EntryOrigin("cpu", "cpu", "plus_two"))
    client = new_private_client()
    with pytest.warns(CacheWarning, match="could not be loaded"):
        assert _run(client) == (1, 0)


def test_a_file_of_the_previous_cache_format_is_rebuilt_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_private_client: Callable[[], ComputeClient]
) -> None:
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    assert _run(new_private_client()) == (1, 0)
    (path,) = _entries(tmp_path)
    payload = DiskCache(CacheKind.KERNELS).get(path.name)
    assert payload is not None
    # format 1: no origin in the header, a checksum of the payload alone
    path.write_bytes(b"RUDA-CACHE-1\n" + hashlib.sha256(payload).digest() + payload)
    (old,) = list_entries([CacheKind.KERNELS])
    assert old.origin is None  # listed, under no device
    assert list_entries(driver="cpu") == []

    assert _run(new_private_client()) == (1, 0)  # filterwarnings=error: no CacheWarning either
    (new,) = list_entries([CacheKind.KERNELS])
    assert new.origin is not None and new.origin.label == "plus_two"
    assert list_entries(driver="cpu") == [new]
    assert _run(new_private_client()) == (0, 1)

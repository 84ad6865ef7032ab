"""The persistent caches trust only their user: nothing read from them runs as code, folders
are made 0700 and entries 0600, a folder another user could write is refused, and a cache that
cannot be used says so once per process, however many kernels it misses."""

from __future__ import annotations

import json
import os
import pickle
import resource
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.runtime.cache import CacheKind, CacheWarning, DiskCache, EntryOrigin
from ruda_core.runtime.cache_inventory import list_entries

KERNELS = 12

CHILD = """
import json, sys, warnings
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.runtime.cache import CacheWarning

@kernel
def scale(x: Array[f32], K: Comptime[int]):
    if ABSOLUTE_POS < x.len():
        x[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(K)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    client = ruda.client(sys.argv[1])
    for k in range(int(sys.argv[2])):  # each K is another kernel
        x = client.create_from_slice(np.arange(32, dtype=np.float32))
        scale.launch(client, RudaCount(1), RudaDim(32), ArrayArg(x, 32), K=k)
        got = np.frombuffer(client.read_one(x), np.float32)
        assert np.array_equal(got, np.arange(32) * k), (k, got)
stats = client.server.compile_stats
said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
print(json.dumps({"compiled": stats.compiled, "disk_hits": stats.disk_hits, "warnings": said}))
"""


def _child(
    cache: Path,
    device: str,
    kernels: int,
    preexec: Callable[[], None] | None = None,
    prelude: str = "",
) -> dict:
    """Run ``prelude`` and :data:`CHILD`, written beside ``cache``, in a fresh interpreter with
    ``cache`` as ``RUDA_CACHE_DIR`` (``preexec`` runs in the child before it starts); the JSON
    it printed. A failed run fails the test with its stderr."""
    script = cache.parent / "child.py"
    script.write_text(prelude + CHILD)
    # only the device's backend: a new cache would otherwise probe every driver here again
    env = {**os.environ, "RUDA_CACHE_DIR": str(cache), "RUDA_BACKENDS": device.partition(":")[0]}
    done = subprocess.run(
        [sys.executable, str(script), device, str(kernels)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


class Hostile:
    """Unpickled, it creates ``marker``: what a writer of a shared cache could plant."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').close()",)


@pytest.mark.parametrize("device", ["cpu", "opencl:0"])
def test_a_planted_entry_with_a_valid_checksum_runs_nothing(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if device == "opencl:0":
        pytest.importorskip("pyopencl")
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    first = _child(cache, device, 2)
    assert first["warnings"] == []
    monkeypatch.setenv("RUDA_CACHE_DIR", str(cache))
    planted = list_entries()  # kernels, probe verdicts: every entry
    assert any(e.kind is CacheKind.KERNELS for e in planted)
    for entry in planted:
        hostile = pickle.dumps(Hostile(marker))
        evaluated = f"__import__('pathlib').Path({str(marker)!r}).touch()".encode()
        payload = hostile if entry.kind is CacheKind.KERNELS else evaluated
        DiskCache(entry.kind).put(entry.path.name, payload, entry.origin or EntryOrigin("", ""))

    second = _child(cache, device, 2)  # the child checks every result

    assert not marker.exists(), "a cache entry ran code"
    assert second["compiled"] == 2 and second["disk_hits"] == 0
    (warning,) = second["warnings"]
    assert "could not be loaded" in warning and "rebuilding" in warning
    assert _child(cache, device, 2)["disk_hits"] == 2, "the rebuilt kernels replaced the plants"


@kernel
def scale(x: Array[f32], K: Comptime[int]):
    if ABSOLUTE_POS < x.len():
        x[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(K)


def _run_kernels(client: ComputeClient, count: int) -> None:
    for k in range(count):
        x = client.create_from_slice(np.arange(32, dtype=np.float32))
        scale.launch(client, RudaCount(1), RudaDim(32), ArrayArg(x, 32), K=k)
        got = np.frombuffer(client.read_one(x), np.float32)
        np.testing.assert_array_equal(got, np.arange(32) * k)


def _files(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


def test_folders_are_made_0700_and_entries_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_private_client: Callable[[], ComputeClient]
) -> None:
    root = tmp_path / "new" / "cache"
    monkeypatch.setenv("RUDA_CACHE_DIR", str(root))
    _run_kernels(new_private_client(), 3)
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    assert len(folders) >= 3, "the root, the kernels folder and a shard"
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    files = list(_files(root))
    assert len(files) == 3
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}


def test_a_group_writable_root_is_refused_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_private_client: Callable[[], ComputeClient]
) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o770)
    monkeypatch.setenv("RUDA_CACHE_DIR", str(root))
    with pytest.warns(CacheWarning) as caught:
        _run_kernels(new_private_client(), KERNELS)
        _run_kernels(new_private_client(), KERNELS)  # a second server: from this process's memory
    (warning,) = caught
    assert f"chmod 700 {root}" in str(warning.message)
    assert list(root.iterdir()) == [], "nothing was written to the refused folder"


def test_a_root_owned_by_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_private_client: Callable[[], ComputeClient]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    monkeypatch.setenv("RUDA_CACHE_DIR", str(root))
    with pytest.warns(CacheWarning, match="owned by uid 65534") as caught:
        _run_kernels(new_private_client(), 3)
    assert len(caught) == 1
    assert list(root.iterdir()) == []


def _fill_no_file() -> None:
    """In the child: every write to a file fails as on a full disk (EFBIG), as root too."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


#: Prepended to :data:`CHILD` where the test runs as root: the child, and every process it
#: starts (its device probes), drops every capability, so that a folder's mode binds it as it
#: binds any other user (root writes anywhere otherwise).
NO_CAPABILITIES = """
import ctypes
class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class _Sets(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]
_libc = ctypes.CDLL(None)
_PR_SET_SECUREBITS, _NOROOT_LOCKED = 28, 0b11  # a program root starts gains no capability
if _libc.prctl(_PR_SET_SECUREBITS, _NOROOT_LOCKED, 0, 0, 0) != 0:
    raise SystemExit("prctl(PR_SET_SECUREBITS) failed")
if _libc.capset(ctypes.byref(_Header(0x20080522, 0)), (_Sets * 2)()) != 0:
    raise SystemExit("capset failed")
"""


@pytest.mark.parametrize("trouble", ["read-only", "full"])
def test_an_unwritable_cache_warns_once_for_many_kernels(trouble: str, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    if trouble == "read-only":
        root.mkdir(mode=0o500)
        prelude = NO_CAPABILITIES if os.geteuid() == 0 else ""
        ran = _child(root, "cpu", KERNELS, prelude=prelude)
    else:
        ran = _child(root, "cpu", KERNELS, preexec=_fill_no_file)
    assert ran["compiled"] == KERNELS
    (warning,) = ran["warnings"]
    assert str(root) in warning and "in memory only" in warning
    assert list(_files(root)) == [], "no lock, temporary or torn file is left"


@pytest.mark.parametrize("opened", ["shard", "entry"])
def test_a_shard_or_entry_others_can_write_is_not_read(
    opened: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trust covers every level down to the entry: a shard folder or an entry file that anyone
    may write (so anyone may have planted it) is never read, with one warning naming it."""
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path / opened))
    cache = DiskCache(CacheKind.KERNELS)
    key = "ab" + "0" * 62
    cache.put(key, b"built code", EntryOrigin("cpu", "cpu", "planted"))
    entry = next(_files(cache.folder))
    opening = entry.parent if opened == "shard" else entry
    opening.chmod(0o777 if opened == "shard" else 0o666)
    with pytest.warns(
        CacheWarning,
        match=f"refusing the cache {'folder' if opened == 'shard' else 'entry'} {opening}",
    ):
        assert DiskCache(CacheKind.KERNELS).get(key) is None
    opening.chmod(0o700 if opened == "shard" else 0o600)
    assert DiskCache(CacheKind.KERNELS).get(key) == b"built code"


def test_a_cache_folder_that_is_a_file_is_named_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "a-file"
    root.write_text("")
    monkeypatch.setenv("RUDA_CACHE_DIR", str(root))
    with pytest.warns(CacheWarning, match=f"{root} is a file, not a folder"):
        DiskCache(CacheKind.KERNELS).put("ab" + "0" * 62, b"code", EntryOrigin("cpu", "cpu"))
    assert DiskCache(CacheKind.KERNELS).get("ab" + "0" * 62) == b"code"  # kept in memory

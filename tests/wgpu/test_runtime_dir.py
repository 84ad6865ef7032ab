"""Mesa's Vulkan drivers complain on stderr where ``XDG_RUNTIME_DIR`` names no folder, so the
backend points it at one of the user's own when it is unset: a folder of a name anyone can
foresee is taken only where this user alone owns and enters it."""

from __future__ import annotations

import os
import stat

import pytest

pytest.importorskip("wgpu")

from ruda_core.testing.processes import run_script

_SCRIPT = """
import os
from ruda_wgpu.adapters import all_adapters
all_adapters()
print(os.environ["XDG_RUNTIME_DIR"])
"""


def _runtime_dir(tmp_path, monkeypatch) -> tuple[str, str]:
    """The folder a new process without ``XDG_RUNTIME_DIR`` takes, with ``tmp_path`` as its
    temporary folder, and its stderr."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    done = run_script(_SCRIPT, tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1], done.stderr


def _private(path: str) -> bool:
    info = os.lstat(path)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


@pytest.mark.skipif(os.name != "posix", reason="XDG_RUNTIME_DIR is a POSIX desktop's folder")
def test_an_unset_runtime_dir_becomes_a_private_folder_of_the_users(tmp_path, monkeypatch):
    folder, stderr = _runtime_dir(tmp_path, monkeypatch)
    assert folder == str(tmp_path / f"ruda-xdg-{os.getuid()}") and _private(folder)
    assert "XDG_RUNTIME_DIR" not in stderr


@pytest.mark.skipif(os.name != "posix", reason="XDG_RUNTIME_DIR is a POSIX desktop's folder")
@pytest.mark.parametrize("planted", ["open to others", "of another user", "a link"])
def test_a_foreseeable_folder_that_is_not_the_users_alone_is_passed_over(
    tmp_path, monkeypatch, planted
):
    name = tmp_path / f"ruda-xdg-{os.getuid()}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted == "a link":
        name.symlink_to(elsewhere)
    else:
        name.mkdir()
        name.chmod(0o777 if planted == "open to others" else 0o700)
    if planted == "of another user":
        if os.getuid() != 0:
            pytest.skip("giving a folder to another user takes root")
        os.chown(name, 65534, 65534)
    folder, _ = _runtime_dir(tmp_path, monkeypatch)
    assert folder not in (str(name), str(elsewhere)) and _private(folder)

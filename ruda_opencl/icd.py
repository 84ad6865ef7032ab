"""OpenCL runtimes installed with pip, made visible to the ICD loader without a variable.

The ICD loader (ocl-icd, the one PyOpenCL's wheels bundle, or the system's) finds drivers
through ``.icd`` files in one folder: ``OCL_ICD_VENDORS`` when set, else ``/etc/OpenCL/vendors``.
A runtime installed from PyPI (Intel's CPU runtime, ``intel-opencl-rt``) ships an ``.icd`` file
naming a build-time prefix, so the loader never finds it. :func:`expose_pip_runtimes` writes a
merged folder under ruda's cache — a copy of every ``.icd`` file of the folder the loader would
read, plus one naming each pip runtime's library by its absolute path — and points
``OCL_ICD_VENDORS`` at it, so every system driver (NVIDIA, ROCm, PoCL …) stays visible beside
the pip one.

The loader opens every library an ``.icd`` file there names, so the folder is trusted as the
cache is (:func:`~ruda_core.runtime.cache.trusted_folder`): made 0700, its files 0600 and
rewritten when they name another library than ruda would, and refused, with one
:class:`~ruda_core.runtime.cache.CacheWarning`, when it or the cache root is owned by another
user or writable by group or others. Where the cache holds no folder this process may use
(refused, read-only, not a folder), the files go into a new private temporary folder, removed
when the process exits: the devices, and their indices, do not depend on the cache.

It must run before the first OpenCL call of the process (the loader reads its folder once);
:mod:`ruda_opencl.driver` calls it before it queries platforms. Nothing changes when no pip
runtime is installed, when ``RUDA_OPENCL_PIP_ICD=0``, or when no folder can be written at all
(then :func:`sources` says why). Imports no driver.
"""

from __future__ import annotations

import atexit
import functools
import importlib.metadata
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ruda_core.runtime import switch_setting
from ruda_core.runtime.cache import cache_root, digest, trusted_folder

__all__ = ["PIP_RUNTIMES", "IcdSource", "expose_pip_runtimes", "sources"]

#: PyPI distributions that ship an OpenCL driver library, and the library's file name.
PIP_RUNTIMES = {"intel-opencl-rt": "libintelocl.so"}
_SYSTEM_FOLDER = "/etc/OpenCL/vendors"
_OPT_OUT = "RUDA_OPENCL_PIP_ICD"


@dataclass(frozen=True, slots=True)
class IcdSource:
    """One driver the loader is shown: its ``.icd`` file, the library it names and where it
    came from (``"pip: intel-opencl-rt 2026.2.0"``, ``"system"``)."""

    icd: str
    library: str
    origin: str


def _pip_libraries() -> list[IcdSource]:
    found = []
    for dist_name, library in PIP_RUNTIMES.items():
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            if file.name == library:
                path = Path(str(dist.locate_file(file))).resolve()
                if path.is_file():
                    origin = f"pip: {dist_name} {dist.version}"
                    found.append(IcdSource(f"ruda-{dist_name}.icd", str(path), origin))
                break
    return found


def _loader_folder() -> Path:
    """The folder the loader would read without ruda."""
    return Path(os.environ.get("OCL_ICD_VENDORS") or _SYSTEM_FOLDER)


def _folder_sources(folder: Path) -> list[IcdSource]:
    if not folder.is_dir():
        return []
    found = []
    for icd in sorted(folder.glob("*.icd")):
        try:
            library = icd.read_text().strip()
        except OSError:
            continue
        found.append(IcdSource(icd.name, library, f"system: {icd}"))
    return found


def _write_folder(entries: list[IcdSource]) -> Path | None:
    """The folder under the cache root whose ``.icd`` files name exactly the libraries of
    ``entries``, written where they differ; None when a folder on its way is refused or cannot
    be made (then with one ``CacheWarning``).

    :raises OSError: when an ``.icd`` file cannot be written.
    """
    root = cache_root()
    folder = root / "opencl-icd" / digest(*entries)[:16]
    if not all(trusted_folder(f, root, create=True) for f in (root, folder.parent, folder)):
        return None
    _write_icds(folder, entries)
    return folder


def _private_folder(entries: list[IcdSource]) -> Path:
    """A new temporary folder of this process's own (0700), removed when it exits, whose
    ``.icd`` files name the libraries of ``entries``.

    :raises OSError: when the folder or a file cannot be written.
    """
    folder = Path(tempfile.mkdtemp(prefix="ruda-opencl-icd-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    _write_icds(folder, entries)
    return folder


def _write_icds(folder: Path, entries: list[IcdSource]) -> None:
    """Write the ``.icd`` file of each of ``entries`` into ``folder`` (0600) where it names
    another library.

    :raises OSError: when a file cannot be written.
    """
    for entry in entries:
        path = folder / entry.icd
        text = entry.library + "\n"
        if path.is_file() and path.read_text() == text:
            continue
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # created 0600
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)


@functools.cache
def expose_pip_runtimes() -> tuple[tuple[IcdSource, ...], str]:
    """Point ``OCL_ICD_VENDORS`` at a folder showing the loader every system driver and every
    pip-installed one (once per process; later calls return the first answer).

    :returns: the drivers shown, and a note when pip runtimes could not be added (else "").
    :raises SettingError: ``RUDA_OPENCL_PIP_ICD`` is set to neither 0 nor 1.
    """
    folder = _loader_folder()
    if not folder.is_dir() and "OCL_ICD_VENDORS" in os.environ:
        return (), f"OCL_ICD_VENDORS={folder} is not a folder; pip OpenCL runtimes not added"
    present = _folder_sources(folder)
    pip = _pip_libraries()
    on, off = "show the OpenCL loader the runtimes pip installed", "leave the loader alone"
    if not switch_setting(_OPT_OUT, on, off, default=True) or not pip:
        return tuple(present), ""
    by_library = {e.library: e for e in pip}
    present = [by_library.get(e.library, e) for e in present]  # a folder written earlier
    names = {e.icd for e in present}
    libraries = {e.library for e in present}
    added = [e for e in pip if e.library not in libraries and e.icd not in names]
    if not added:
        return tuple(present), ""
    entries = [*present, *added]
    try:
        merged = _write_folder(entries)
    except OSError:  # the cache's folder is read-only, or full
        merged = None
    try:
        merged = merged or _private_folder(entries)
    except OSError as exc:
        return tuple(present), (
            f"cannot write an OpenCL vendors folder: {exc}; pip OpenCL runtimes not added"
        )
    os.environ["OCL_ICD_VENDORS"] = str(merged)
    return (*present, *added), ""


def sources() -> tuple[IcdSource, ...]:
    """The drivers :func:`expose_pip_runtimes` showed the loader."""
    return expose_pip_runtimes()[0]

"""An out-of-tree backend, installed as its own distribution into a fresh virtual environment,
is listed by ``ruda devices`` and passes the conformance suite (``examples/ruda-hostmem``)."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ruda-hostmem"

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (
        f"{args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    )
    return result.stdout


@pytest.fixture(scope="module")
def hostmem_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """A fresh venv seeing this environment's packages (offline: its site folders and those of
    ``PYTHONPATH``), with ruda and ruda-hostmem installed into it by pip."""
    work = tmp_path_factory.mktemp("hostmem")
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True,
        ).strip()
    )
    # the folders of PYTHONPATH (dropped below) that hold ruda's dependencies, not ruda, first:
    # here they come before the site folders, so their versions are the ones imported
    parent = [
        entry
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if entry and Path(entry).is_dir() and not (Path(entry) / "ruda_core").exists()
    ]
    parent += [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    (site / "_ruda_parent_environment.pth").write_text("\n".join(dict.fromkeys(parent)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RUDA_BACKENDS")}
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q"]
    _run([*pip, "-e", str(ROOT)], work, env)
    _run([*pip, str(EXAMPLE)], work, env)
    return python, env, work


def test_ruda_devices_lists_the_out_of_tree_device(hostmem_env):
    python, env, work = hostmem_env
    out = _run([str(python), "-m", "ruda_core.cli", "devices", "--json"], work, env)
    backends = {b["backend"]: b for b in json.loads(out)["backends"]}
    hostmem = backends["hostmem"]
    assert hostmem["status"] == "available", hostmem
    assert [d["device"] for d in hostmem["devices"]] == ["hostmem:0"]
    assert hostmem["devices"][0]["name"] == "hostmem (mmap pages)"
    imported = _run(
        [
            str(python),
            "-c",
            "import ruda_hostmem, sys; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('ruda_cpu', 'ruda_cuda', 'ruda_opencl')))",
        ],
        work,
        env,
    )
    assert imported.strip() == "[]", "the backend must import no in-tree backend module"


#: Conformance modules that exercise the reference executor's kernels more than a driver's parts.
EXECUTOR_MODULES = (
    "test_ops_float",
    "test_ops_int",
    "test_values",
    "test_differential",
    "test_literals",
    "test_nan",
    "test_mixed_sign",
    "test_bitcast",
    "test_atomic_wrap",
    "test_plane",
    "test_units_collectives",
    "test_sanitizer",
    "test_layer_norm",
    "test_matrix",
    "test_warpgroup",
    "test_async_barriers",
    "test_primitives",
)


def _executor_module_files() -> list[Path]:
    """The files of :data:`EXECUTOR_MODULES` (``test_plane`` names three: the ``-k`` expression
    leaves out every module whose name holds one)."""
    folder = ROOT / "ruda_core" / "testing" / "conformance"
    return [
        path
        for path in sorted(folder.glob("test_*.py"))
        if any(name in path.stem for name in EXECUTOR_MODULES)
    ]


def test_out_of_tree_backend_passes_the_conformance_suite(hostmem_env):
    """hostmem runs the reference device's kernels over its own memory, so it must pass every
    test the reference passes (this repository's own conformance run holds the reference to
    passing them all; it is not run again here). The modules whose kernels test the executor's
    arithmetic, planes, matrices and the operations built on them, which hostmem takes from the
    reference device unchanged, are left out: :data:`EXECUTOR_MODULES`."""
    python, env, work = hostmem_env
    report = work / "hostmem.json"
    args = [
        str(python),
        "-m",
        "ruda_core.cli",
        "conformance",
        "--device",
        "hostmem:0",
        "--report",
        str(report),
        "--",
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "not (" + " or ".join(EXECUTOR_MODULES) + ")",
        # and those modules not imported at all: collecting them costs seconds
        *(f"--ignore={module}" for module in _executor_module_files()),
    ]
    result = subprocess.run(
        args,
        cwd=work,
        env={
            **env,
            "RUDA_REQUIRE": "hostmem",
            "RUDA_BACKENDS": "hostmem",  # and the reference device; not this machine's drivers
            "RUDA_DIFFERENTIAL_EXAMPLES": "5",
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    matrix = json.loads(report.read_text())["matrix"]
    hostmem = {t: row["hostmem:0"] for t, row in matrix.items() if "hostmem:0" in row}
    assert sum(o == "pass" for o in hostmem.values()) > 150, result.stdout[-3000:]
    worse = {t: o for t, o in hostmem.items() if o not in ("pass", "unsupported", "skip")}
    assert not worse, f"fails on hostmem:0: {worse}\n{result.stdout[-5000:]}"
    device_free = {t: row["any"] for t, row in matrix.items() if "any" in row}
    assert set(device_free.values()) == {"pass"}, device_free  # RUDA_REQUIRE=hostmem is met

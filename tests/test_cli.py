"""The ``ruda`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ruda_core.cli import main


def test_devices_json_parses_and_lists_the_numpy_device(capsys):
    assert main(["devices", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    cpu = next(b for b in facts["backends"] if b["backend"] == "cpu")
    assert cpu["status"] == "available"
    device = cpu["devices"][0]
    assert device["device"] == "cpu" and device["memory_nbytes"] > 0
    for backend in facts["backends"]:
        assert backend["status"] == "available" or backend["reason"]


def test_devices_tree_names_every_backend(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "cpu" in out and "NumPy reference device" in out
    for name in ("cuda", "opencl"):
        assert name in out


def test_plugins_json(capsys):
    assert main(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"cpu", "cuda", "opencl"} <= {r["backend"] for r in rows}


def test_console_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "ruda_core.cli", "devices", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["backends"]


def test_a_reader_that_stops_early_gets_no_traceback():
    """``ruda devices | head -1``: the closed pipe ends the command quietly."""
    with subprocess.Popen(
        [sys.executable, "-m", "ruda_core.cli", "devices"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.close()  # nothing will be read
        errors = reader.stderr.read().decode()
        assert reader.wait(timeout=120) == 1
    assert "Traceback" not in errors and "BrokenPipeError" not in errors


def test_a_setting_ruda_cannot_use_is_one_line_naming_it_without_a_traceback(tmp_path):
    env = {**os.environ, "RUDA_PROBE_TIMEOUT_S": "soon", "RUDA_CACHE_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "ruda_core.cli", "devices"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 2
    assert result.stderr == (
        "ruda devices: RUDA_PROBE_TIMEOUT_S='soon' is not a positive number of seconds; set it "
        "to how long a device's probe may take, e.g. 30\n"
    )

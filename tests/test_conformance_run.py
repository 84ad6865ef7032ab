"""``ruda conformance`` (``run_conformance``): a named device that cannot be opened is a
non-zero exit with the reason, before any test runs; a usable one runs the suite."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ruda_core import cli


@pytest.mark.parametrize("device", ["nosuch:0", "cpu:3"])
def test_conformance_unknown_device_exits_non_zero_with_the_reason(capsys, device):
    code = cli.main(["conformance", "--device", "cpu", "--device", device])
    out, err = capsys.readouterr()
    assert code == pytest.ExitCode.USAGE_ERROR
    assert f"ruda conformance: {device} does not exist: " in err
    assert "cpu is not" not in err
    assert "ruda devices" in err
    assert "ruda conformance:" not in out  # no summary: pytest never ran


def test_conformance_of_a_usable_device_runs(capsys):
    selected = ["-q", "-p", "no:cacheprovider", "-k", "test_runtime_client_is_the_one_client"]
    code = cli.main(["conformance", "--device", "cpu", "--", *selected])
    out, _ = capsys.readouterr()
    assert code == pytest.ExitCode.OK
    assert "cpu: 1 pass" in out


def test_a_report_that_cannot_be_written_is_refused_before_the_suite_runs(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = cli.main(["conformance", "--device", "cpu", "--report", str(blocker / "matrix.md")])
    out, err = capsys.readouterr()
    assert code == pytest.ExitCode.USAGE_ERROR
    assert f"ruda conformance: cannot write the report {blocker / 'matrix.md'}: " in err
    assert "ruda conformance:" not in out  # no summary: pytest never ran


def test_a_report_path_that_is_a_folder_is_refused_before_the_suite_runs(capsys, tmp_path):
    code = cli.main(["conformance", "--device", "cpu", "--report", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == pytest.ExitCode.USAGE_ERROR
    assert f"ruda conformance: cannot write the report {tmp_path}: " in err
    assert "ruda conformance:" not in out  # no summary: pytest never ran


def test_arguments_pytest_refuses_write_no_matrix(capsys, tmp_path):
    report = tmp_path / "matrix.md"
    code = cli.main(["conformance", "--device", "cpu", "--report", str(report), "--", "--bogus"])
    out, _ = capsys.readouterr()
    assert code == pytest.ExitCode.USAGE_ERROR
    assert not report.exists() and "matrix written" not in out


def test_the_matrix_fills_when_the_suite_runs_over_several_processes(tmp_path):
    """Under ``pytest -n`` the tests run in workers; each report names its cell of the matrix,
    so the controller's matrix holds every outcome, as in one process."""
    report = tmp_path / "matrix.json"
    selected = ["-q", "-n", "2", "-p", "no:cacheprovider", "-k", "test_futures"]
    command = [sys.executable, "-m", "ruda_core.cli", "conformance", "--device", "cpu"]
    command += ["--report", str(report), "--", *selected]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    matrix = json.loads(report.read_text())
    assert matrix["summary"]["cpu"]["pass"] >= 10, matrix["summary"]
    assert all(row.get("cpu") == "pass" for row in matrix["matrix"].values()), matrix["matrix"]

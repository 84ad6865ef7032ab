"""The conformance plugin's Hypothesis profile: a test run tries the same examples every time,
with ``CI`` set or not, so it never fails by chance; ``RUDA_FUZZ_NEW=1`` draws new ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

from ruda_core.testing.plugin import ENV_FUZZ_NEW, HYPOTHESIS_PROFILE

DRAWS = """
import os
from hypothesis import given, settings, strategies as st

@settings(max_examples=10)
@given(st.integers(0, 2**64))
def test_draws(n):
    with open(os.environ["DRAWS_FILE"], "a") as out:
        out.write(f"{n}\\n")
"""


def _draws(tmp_path: Path, run: str, **env: str) -> list[str]:
    """The values one pytest run of ``DRAWS`` drew, in order."""
    (tmp_path / "test_draws.py").write_text(DRAWS)
    record = tmp_path / f"{run}.txt"
    base = {k: v for k, v in os.environ.items() if k not in ("CI", ENV_FUZZ_NEW)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ruda_core.testing.plugin", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-q", "test_draws.py"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**base, "DRAWS_FILE": str(record), "RUDA_TEST_DEVICES": "cpu",
             "RUDA_BACKENDS": "cpu", **env},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return record.read_text().split()


def test_this_run_is_derandomised():
    if os.environ.get(ENV_FUZZ_NEW) == "1":
        assert not settings.default.derandomize
    else:
        assert settings.default.derandomize and settings.default.deadline is None
        assert settings.get_profile(HYPOTHESIS_PROFILE).derandomize


def test_runs_draw_the_same_examples_unless_asked_for_new_ones(tmp_path):
    first = _draws(tmp_path, "first")
    assert len(first) >= 10
    assert _draws(tmp_path, "again") == first
    assert _draws(tmp_path, "on-ci", CI="true") == first
    assert _draws(tmp_path, "new", **{ENV_FUZZ_NEW: "1"}) != first


def test_an_unknown_fuzz_switch_is_a_usage_error(tmp_path):
    (tmp_path / "test_draws.py").write_text(DRAWS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ruda_core.testing.plugin", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-q", "test_draws.py"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, ENV_FUZZ_NEW: "yes", "DRAWS_FILE": str(tmp_path / "x.txt")},
    )  # fmt: skip
    assert result.returncode == 4, result.stdout[-3000:]
    assert "RUDA_FUZZ_NEW='yes' is neither 0 (the fixed set) nor 1" in result.stderr

"""The conformance suite's time limit: a device test whose wait never ends fails, naming the
test and the device, and the device's later tests fail at once instead of hanging in turn."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_drivers import driver_source, fake_distribution, path_with

HANG = driver_source(
    "hang",
    "a device whose reads never complete once the file HANG_FLAG names exists",
    """\
        def read(self, stream, bindings):
            if os.path.exists(os.environ["HANG_FLAG"]):
                return Promise().future
            return super().read(stream, bindings)""",
    preamble="import os\n\nfrom ruda_core.runtime import Promise\n",
    identity="hang 1.0",
)


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="POSIX timers only")
def test_a_wait_that_never_ends_fails_its_test_and_the_devices_later_tests(tmp_path: Path):
    root = fake_distribution(
        tmp_path / "dist", "hang", {"hang": "ruda_fake_hang"}, {"ruda_fake_hang": HANG}
    )
    env = {**os.environ, "PYTHONPATH": path_with(root), "RUDA_BACKENDS": "cpu,hang"}
    env |= {"RUDA_CACHE_DIR": str(tmp_path / "cache"), "HANG_FLAG": str(tmp_path / "hang")}
    for name in ("RUDA_REQUIRE", "RUDA_TEST_DEVICES", "RUDA_TEST_TIMEOUT"):
        env.pop(name, None)
    listing = "import ruda_core; print([str(d) for d in ruda_core.enumerate_all_devices()])"
    listed = subprocess.run(  # the probe's verdict, stored while reads still complete
        [sys.executable, "-c", listing], env=env, capture_output=True, text=True, timeout=120
    )
    assert "hang:0" in listed.stdout, listed.stdout + listed.stderr[-2000:]
    (tmp_path / "hang").touch()
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ruda_core.testing.plugin", "-q", "-rf",
         "-p", "no:cacheprovider", "-p", "no:xdist", "--tb=short", "--pyargs",
         "ruda_core.testing.conformance.test_futures", "--ruda-device", "hang:0",
         "--ruda-timeout", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    took = time.monotonic() - start
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert "did not finish within 2 s on hang:0" in run.stdout, run.stdout[-3000:]
    assert run.stdout.count("hang:0 stopped answering in ") >= 9, run.stdout[-3000:]
    assert took < 60, f"the run took {took:.0f} s"

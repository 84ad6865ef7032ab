"""Waits on a wedged device: Ctrl-C ends a ``sync()`` at once, a timed-out wait names the kernel
that holds the device, and the interpreter exits after ``RUDA_EXIT_TIMEOUT_S`` with a warning.

Each test runs a child interpreter that launches a kernel that never ends (it spins on an atomic
read of a flag that the host never sets, so no compiler may remove or fold the loop); the child
is the one that is wedged, never this process. A device whose driver ends such a loop
(``Feature.UNBOUNDED_LOOPS`` left out) cannot run them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ruda_core.runtime import Feature
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import TIMEOUT_S

pytestmark = requires(Feature.UNBOUNDED_LOOPS)

#: The exit's bounded wait in the children, and what the exit may take beyond it.
_EXIT_WAIT_S = 0.5
_EXIT_SLACK_S = 3.0

_CHILD = """
import sys, threading, time
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, atomic_add, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim

@kernel
def never_ends(flag: Array[u32], out: Array[u32]):
    n = u32(0)
    while atomic_add(flag, 0, u32(0)) == u32(0):
        n += u32(1)
    out[ABSOLUTE_POS] = n

device, case = sys.argv[1], sys.argv[2]
client = ruda.client(device)
flag = client.create_from_slice(np.zeros(1, np.uint32))
out = client.empty(4)
never_ends.launch(client, RudaCount(1), RudaDim(1), ArrayArg(flag, 1), ArrayArg(out, 1))
client.flush()
if case == "interrupt":
    try:
        print("waiting", flush=True)
        client.sync().result()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
elif case == "other stream":
    def read_elsewhere():
        try:
            client.read_async([out]).result(timeout=0.5)
        except TimeoutError as exc:
            print(type(exc).__name__, exc, flush=True)
    reader = threading.Thread(target=read_elsewhere)
    reader.start()
    reader.join()
client.write(out, np.ones(1, np.uint32))  # queued behind the kernel that never ends
print("exiting", flush=True)
"""


def _start(device: str, case: str, folder: Path) -> subprocess.Popen[str]:
    script = folder / "wedged.py"
    script.write_text(_CHILD)
    env = {
        **os.environ,
        "RUDA_EXIT_TIMEOUT_S": str(_EXIT_WAIT_S),
        "RUDA_CACHE_DIR": str(folder / "cache"),
    }
    return subprocess.Popen(
        [sys.executable, str(script), device, case],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        _, stderr = child.communicate(timeout=TIMEOUT_S)  # which closes its pipes
        raise AssertionError(f"the child ended early:\n{stderr}")
    return line.strip()


def _exits_in_bounded_time(child: subprocess.Popen[str]) -> str:
    """Wait for the child's ``exiting`` line, then for its end; return its stderr. The child
    is ended and its pipes closed whatever happens."""
    try:
        assert _line(child) == "exiting"
        start = time.monotonic()
        _, stderr = child.communicate(timeout=_EXIT_WAIT_S + _EXIT_SLACK_S + 30)
    finally:
        child.kill()
        child.communicate()
    took = time.monotonic() - start
    assert took < _EXIT_WAIT_S + _EXIT_SLACK_S, (
        f"the interpreter took {took:.1f} s to exit with RUDA_EXIT_TIMEOUT_S={_EXIT_WAIT_S}"
    )
    return stderr


def test_ctrl_c_ends_a_sync_of_a_kernel_that_never_ends_within_a_second(
    client, ruda_device, tmp_path
):
    child = _start(ruda_device, "interrupt", tmp_path)
    try:
        assert _line(child) == "waiting"
        time.sleep(0.3)  # the main thread is now inside result()
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        assert _line(child) == "interrupted"
        took = time.monotonic() - sent
        assert took < 1.0, f"KeyboardInterrupt came {took:.2f} s after SIGINT"
    finally:
        child.kill()
        child.communicate()


def test_exit_with_work_queued_behind_a_kernel_that_never_ends_is_bounded_and_warns(
    client, ruda_device, tmp_path
):
    stderr = _exits_in_bounded_time(_start(ruda_device, "exit", tmp_path))
    assert "ExitTimeoutWarning" in stderr, stderr
    assert "never_ends" in stderr, stderr


def test_a_stream_held_up_by_another_streams_kernel_times_out_naming_that_kernel(
    client, ruda_device, tmp_path
):
    child = _start(ruda_device, "other stream", tmp_path)
    try:
        line = _line(child)
    except BaseException:
        child.kill()
        child.communicate()
        raise
    _exits_in_bounded_time(child)
    assert line.startswith("DeviceTimeout "), line
    assert f"of {ruda_device}: kernel never_ends" in line, line

"""Fork: a process forked after it used a device never hangs on it. Its inherited client raises
``ServerUnhealthy`` naming the ``spawn`` start method at first use; opening the device again in
the child either works (the backend is ``fork_safe``) or raises the same clear error."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ruda_core
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim, ServerUnhealthy
from ruda_core.testing.processes import in_forked_child
from ruda_core.testing.runner import read_array

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX only")

#: Seconds a forked child may take; a child that needs longer is taken to hang.
CHILD_TIMEOUT_S = 60.0


@kernel
def conformance_fork_add_one(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] + u32(1)


def _add_one(client) -> list[int]:
    x = client.create_from_slice(np.arange(8, dtype=np.uint32))
    out = client.empty(32)
    conformance_fork_add_one.launch(
        client, RudaCount(1), RudaDim(8), ArrayArg(x, 8), ArrayArg(out, 8)
    )
    return read_array(client, out, np.uint32).tolist()


def test_fork_child_never_hangs_on_a_device_its_parent_used(client, ruda_device):
    assert _add_one(client) == list(range(1, 9))

    def child() -> str:
        try:
            client.create_from_slice(b"1234")
        except ServerUnhealthy as exc:
            assert "fork" in str(exc) and "spawn" in str(exc), str(exc)
        else:
            raise AssertionError("the parent's client accepted work in a forked child")
        try:
            again = ruda_core.client(ruda_device)
        except Exception as exc:  # refusing is allowed, if it says what to do
            assert "spawn" in str(exc), f"{type(exc).__name__}: {exc}"
            return "refused"
        assert _add_one(again) == list(range(1, 9))
        return "reopened"

    outcome = in_forked_child(child, CHILD_TIMEOUT_S)
    assert outcome.value in ("'refused'", "'reopened'"), outcome.describe()
    assert _add_one(client) == list(range(1, 9))  # the parent's client is untouched

"""``properties_fingerprint()`` keys the kernel and tuning caches, so it is built from what
identifies a device and never from what varies between processes (the memory a driver reports
as available)."""

from __future__ import annotations

import dataclasses

import ruda_core as ruda
from ruda_core.testing.processes import fingerprints_elsewhere

#: PoCL reports a share of the memory free when a process starts; this makes it report 1 GiB.
#: Other drivers ignore the variable.
LESS_MEMORY = {"POCL_MEMORY_LIMIT": "1"}


def test_fingerprint_is_the_same_in_two_processes_on_every_local_device():
    devices = [str(d) for d in ruda.enumerate_all_devices()]
    assert "cpu" in devices
    first = fingerprints_elsewhere(devices)
    second = fingerprints_elsewhere(devices, LESS_MEMORY)
    assert sorted(first) == sorted(devices)
    assert first == second
    assert first == {d: ruda.client(d).properties_fingerprint() for d in devices}


def test_fingerprint_ignores_reported_memory_but_not_identity():
    client = ruda.client("cpu")
    props, features = client.properties(), client.features()
    fingerprint = props.fingerprint(features)
    assert dataclasses.replace(props, memory_nbytes=1 << 30).fingerprint(features) == fingerprint
    assert dataclasses.replace(props, name="another").fingerprint(features) != fingerprint
    assert dataclasses.replace(props, max_ruda_count=(1, 1, 1)).fingerprint(features) != fingerprint

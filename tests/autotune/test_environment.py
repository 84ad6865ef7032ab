"""``runtime_environment`` names the stack a result is valid on, memoised per device; deployment
tags enter it and are immutable once used."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ruda_core as ruda
from ruda_core.autotune import (
    DeploymentTagsError,
    deployment_tags,
    runtime_environment,
    set_deployment_tags,
)
from ruda_core.runtime import RudaPanic

from .kernels import present_devices


@pytest.mark.parametrize("device", present_devices())
def test_the_environment_names_runtime_device_fingerprints_tags_and_version(device):
    client = ruda.client(device)
    env = runtime_environment(client)
    assert env.runtime == client.name()
    assert env.device_id == client.device_id()
    assert env.properties_fingerprint == client.properties_fingerprint()
    assert env.driver_fingerprint == client.runtime.autotune_driver_fingerprint(client)
    assert env.persistent and env.driver_fingerprint
    assert env.deployment_tags == tuple(sorted(deployment_tags().items()))
    assert env.ruda_version == ruda.__version__
    # memoised per device: clones of the client share it, and it is a hashable value
    assert runtime_environment(client) is env
    assert runtime_environment(client.fixed_execution_queue()) is env
    assert {env: 1}[runtime_environment(client)] == 1
    with pytest.raises(AttributeError):
        env.runtime = "other"  # type: ignore[misc]  # frozen: the assignment must fail


def test_tags_cannot_change_once_used():
    runtime_environment(ruda.client("cpu"))
    before = dict(deployment_tags())
    with pytest.raises(DeploymentTagsError, match="already in use") as info:
        set_deployment_tags(before, added_after_use="yes")
    assert isinstance(info.value, RudaPanic)
    assert dict(deployment_tags()) == before
    set_deployment_tags(before)  # the same tags again: allowed, nothing changes


CHILD = """
import json
import ruda_core as ruda
from ruda_core.autotune import (DeploymentTagsError, deployment_tags, runtime_environment,
                                set_deployment_tags)

set_deployment_tags(image="first")
set_deployment_tags({"image": "v3", "pool": "batch"}, replicas=4)  # replaces, before first use
for bad in ({"": "x"}, {"ratio": 0.5}):
    try:
        set_deployment_tags(bad)
    except TypeError:
        pass
    else:
        raise SystemExit(f"{bad} was accepted")
env = runtime_environment(ruda.client("cpu"))
try:
    set_deployment_tags(image="v4")
except DeploymentTagsError as exc:
    refused = str(exc)
else:
    raise SystemExit("the tags changed after their first use")
set_deployment_tags(image="v3", pool="batch", replicas=4)
print(json.dumps({"tags": env.deployment_tags, "now": dict(deployment_tags()),
                  "refused": refused, "env": repr(env)}))
"""


def test_tags_set_before_first_use_enter_the_environment(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run(
        [sys.executable, str(script)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tags"] == [["image", "v3"], ["pool", "batch"], ["replicas", 4]]
    assert report["now"] == {"image": "v3", "pool": "batch", "replicas": 4}
    assert "'image': 'v4'" in report["refused"]
    here = runtime_environment(ruda.client("cpu"))
    assert report["env"] != repr(here), "the tags make a different environment"
    # ... and only the tags: with this process's tags in their place, the two are the same
    theirs = repr(tuple(tuple(pair) for pair in report["tags"]))
    assert report["env"].replace(theirs, repr(here.deployment_tags)) == repr(here)

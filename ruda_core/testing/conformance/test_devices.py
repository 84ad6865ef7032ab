"""Devices: one client per device, ``init``/``load`` panics, properties, features and their
fingerprint, enumeration through the runtime and through ``ruda_core``, and the backends
``RUDA_REQUIRE`` asks for."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

import ruda_core
from ruda_core.ir import Elem
from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    DeviceProperties,
    Feature,
    Features,
    RudaPanic,
    Runtime,
    TargetProperties,
    contiguous_strides,
)
from ruda_core.testing.processes import fingerprints_elsewhere
from ruda_core.testing.selection import backend_of

_never = itertools.count()


def _status(ruda_device: str) -> ruda_core.BackendStatus:
    backend = backend_of(ruda_device)
    return next(s for s in ruda_core.backends() if s.name == backend)


def test_required_backends_are_present(ruda_selection):
    problems = [ruda_selection.enumeration_error] if ruda_selection.enumeration_error else []
    statuses = {s.name: s for s in ruda_core.backends()}
    selected = {backend_of(d) for d in ruda_selection.names}
    for name in sorted(ruda_selection.required):
        status = statuses.get(name)
        if status is None:
            problems.append(f"backend '{name}' is not installed (no ruda.backends entry point)")
        elif not status.available:
            problems.append(f"backend '{name}' {status.status.predicate}: {status.reason}")
        elif name not in selected:
            problems.append(f"backend '{name}' is available but none of its devices is selected")
    assert not problems, "RUDA_REQUIRE: " + "; ".join(problems)


def test_the_device_is_listed_by_its_backend(client, ruda_device):
    status = _status(ruda_device)
    assert status.available, status.reason
    names = [str(d) for d in status.devices]
    assert str(client.device) in names
    assert str(client.device) in [str(d) for d in ruda_core.enumerate_all_devices()]
    assert status.runtime is client.runtime


def test_runtime_client_is_the_one_client(client, ruda_device):
    assert ruda_core.client(ruda_device) is client
    assert client.runtime.client(client.device) is client
    assert ruda_core.client(client.device) is client
    assert ComputeClient.load(client.device) is client


def test_init_of_a_registered_device_panics(client):
    with pytest.raises(RudaPanic, match=str(client.device)):
        ComputeClient.init(client.device, client.server)
    assert ComputeClient.load(client.device) is client  # nothing was replaced


def test_load_of_an_uninitialised_device_panics():
    with pytest.raises(RudaPanic):
        ComputeClient.load(("ruda-conformance-never-initialised", next(_never)))


def test_properties_are_frozen_and_plausible(client):
    props = client.properties()
    assert isinstance(props, DeviceProperties)
    assert client.properties() == props and hash(props) == hash(client.properties())
    with pytest.raises(dataclasses.FrozenInstanceError):
        props.name = "changed"  # type: ignore[misc]
    assert props.name and props.vendor
    assert props.memory_nbytes > 0 and props.compute_units >= 1
    assert props.max_units_per_ruda >= 1 and props.plane_dim >= 1
    assert all(d >= 1 for d in props.max_ruda_dim) and all(c >= 1 for c in props.max_ruda_count)
    assert props.max_shared_memory_nbytes >= 0
    align = props.alignment_nbytes
    assert align >= 1 and align & (align - 1) == 0, f"alignment {align} is not a power of two"


def test_features_name_known_capabilities_and_the_basic_types(client):
    features = client.features()
    assert isinstance(features, Features)
    assert all(isinstance(f, Feature) for f in features.features)
    assert all(isinstance(e, Elem) for e in features.elems)
    basic = {Elem.BOOL, Elem.I32, Elem.U32, Elem.F32}
    assert basic <= set(features.elems), f"every device runs {sorted(e.value for e in basic)}"
    for f in features.features:
        assert features.has(f)


def test_properties_fingerprint_is_stable(client):
    first = client.properties_fingerprint()
    assert isinstance(first, str) and first
    assert client.properties_fingerprint() == first
    assert client.fixed_execution_queue().properties_fingerprint() == first


def test_properties_fingerprint_is_the_same_in_another_process(client, ruda_device):
    # it keys persistent caches: nothing that varies between processes may go into it (PoCL,
    # for one, reports less memory under POCL_MEMORY_LIMIT, as it does when less is free)
    elsewhere = fingerprints_elsewhere([ruda_device], {"POCL_MEMORY_LIMIT": "1"})
    assert elsewhere == {ruda_device: client.properties_fingerprint()}


def test_device_id_and_enumeration_agree(client):
    device_id = client.device_id()
    assert isinstance(device_id, DeviceId)
    assert device_id in client.enumerate_devices(device_id.type_id)
    every = client.enumerate_all_devices()
    assert device_id in every
    assert set(client.enumerate_devices(0)) <= set(every)
    assert client.device_count() == len(client.enumerate_devices())
    assert client.device_count_total() == len(every)
    assert client.runtime.enumerate_all_devices(client.info()) == every


def test_runtime_members(client):
    runtime = client.runtime
    assert isinstance(runtime, type) and issubclass(runtime, Runtime)
    name = client.name()
    assert isinstance(name, str) and name and name == runtime.name(client)
    counts = runtime.max_ruda_count()
    assert len(counts) == 3 and all(isinstance(c, int) and c >= 1 for c in counts)
    assert isinstance(runtime.target_properties(), TargetProperties)
    assert isinstance(runtime.require_array_lengths(), bool)
    assert isinstance(runtime.has_native_layer_norm(), bool)
    for shape in [(4,), (3, 5), (2, 3, 4)]:
        assert runtime.can_read_tensor(shape, contiguous_strides(shape))
    fingerprint = runtime.autotune_driver_fingerprint(client)
    assert fingerprint is None or (isinstance(fingerprint, str) and fingerprint)
    assert runtime.autotune_driver_fingerprint(client) == fingerprint


def test_runtime_without_native_layer_norm_says_so(client):
    runtime = client.runtime
    if runtime.has_native_layer_norm():
        pytest.skip(f"{runtime.__name__} supplies native LayerNorm")
    with pytest.raises(NotImplementedError, match="native LayerNorm"):
        runtime.layer_norm(client, None, None, None, 1e-5)  # type: ignore[arg-type]

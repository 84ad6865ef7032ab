"""``Runtime`` has exactly the members of CubeCL's ``Runtime`` trait, with the trait's defaults:
what a native operation needs beyond them is registered with the operations."""

from __future__ import annotations

import inspect

import pytest

from ruda_core.runtime import ComputeClient, DeviceId, Runtime
from ruda_cpu import CpuRuntime

#: The trait's members: its associated types, then its functions in the order it declares them.
TRAIT_MEMBERS = [
    "compiler",
    "server",
    "device",
    "client",
    "has_native_layer_norm",
    "layer_norm",
    "layer_norm_backward",
    "name",
    "autotune_driver_fingerprint",
    "require_array_lengths",
    "max_ruda_count",
    "can_read_tensor",
    "target_properties",
    "enumerate_devices",
    "enumerate_all_devices",
]


def _public_members(cls: type) -> set[str]:
    """Every public name ``cls`` defines or declares, annotations included."""
    return {n for n in (*vars(cls), *cls.__annotations__) if not n.startswith("_")}


def test_runtime_has_exactly_the_trait_members():
    assert _public_members(Runtime) == set(TRAIT_MEMBERS)


def test_every_function_is_a_classmethod():
    for name in TRAIT_MEMBERS[3:]:
        assert isinstance(inspect.getattr_static(Runtime, name), classmethod), name


def test_the_abstract_members_are_those_without_a_default():
    assert Runtime.__abstractmethods__ == {
        "client",
        "name",
        "max_ruda_count",
        "can_read_tensor",
        "target_properties",
        "enumerate_devices",
    }


class MinimalRuntime(Runtime):
    """A runtime defining only the members the trait leaves without a default."""

    compiler = CpuRuntime.compiler
    server = CpuRuntime.server
    device = CpuRuntime.device

    @classmethod
    def client(cls, device: object) -> ComputeClient:
        return CpuRuntime.client()

    @classmethod
    def name(cls, client: ComputeClient) -> str:
        return "minimal"

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return (1, 1, 1)

    @classmethod
    def can_read_tensor(cls, shape, strides) -> bool:
        return True

    @classmethod
    def target_properties(cls):
        return CpuRuntime.target_properties()

    @classmethod
    def enumerate_devices(cls, type_id: int, info: object) -> list[DeviceId]:
        return [DeviceId(type_id, 0), DeviceId(type_id, 1)]


def test_the_defaults_are_the_traits():
    client = CpuRuntime.client()
    assert MinimalRuntime.has_native_layer_norm() is False
    with pytest.raises(NotImplementedError) as forward:
        MinimalRuntime.layer_norm(client, None, None, None, 1e-5)  # type: ignore[arg-type]
    assert str(forward.value) == "runtime does not supply native LayerNorm"
    with pytest.raises(NotImplementedError) as backward:
        MinimalRuntime.layer_norm_backward(client, *[None] * 5)  # type: ignore[arg-type]
    assert str(backward.value) == "runtime does not supply native LayerNorm backward"
    assert MinimalRuntime.autotune_driver_fingerprint(client) is None
    assert MinimalRuntime.require_array_lengths() is False
    assert MinimalRuntime.enumerate_all_devices(None) == [DeviceId(0, 0), DeviceId(0, 1)]


def test_indexed_runtimes_give_their_servers_driver_fingerprint():
    """The in-tree runtimes' base keys persistent tuning by the driver stack its server
    knows, where the trait's default (None) would keep tuning results for the session only."""
    client = CpuRuntime.client()
    fingerprint = CpuRuntime.autotune_driver_fingerprint(client)
    assert fingerprint == client.server.driver_fingerprint()
    assert fingerprint

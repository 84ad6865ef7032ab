"""Fixtures of the code generation tests: the C-family devices of this machine, through their
drivers.

``device`` is each OpenCL device of the test run's selection (``--ruda-device``, else
``RUDA_TEST_DEVICES``, else every device found), the first CUDA device, and that GPU again with
code generated for sm_52; ``plane_device`` the same and each OpenCL device again with code
generated without :data:`BARE_DROPS`; ``opencl_device`` the OpenCL devices alone. A backend
the selection has no device of still gets its device 0, whose tests skip with the reason (or
fail when ``RUDA_REQUIRE`` names the backend).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from launch_modes import Dim3, run, run_validated

from ruda_core.ir import ExecutionMode, KernelDefinition
from ruda_core.runtime import (
    CompiledKernel,
    CompileOptions,
    ComputeClient,
    ComputeServer,
    KernelTask,
    Storage,
    ValidationError,
)
from ruda_core.testing.selection import DeviceSelection, backend_of

#: The architecture whose fallbacks the ``cuda:0-sm_52`` device runs: no native f64/f16/bf16
#: atomic adds and no ``__reduce_*_sync``.
OLD_ARCH = "sm_52"
#: The subgroup capabilities an OpenCL device's ``-bare`` variant generates code without: it
#: keeps subgroups of a fixed width and ``sub_group_shuffle``/``_xor``, so products, ballots
#: and the relative shuffles are built from shuffles by the shared lowering, as on
#: CUDA, and run on real subgroups.
BARE_DROPS = frozenset({"subgroup_arith", "subgroup_ballot", "subgroup_shuffle_relative"})
_SELECTION = pytest.StashKey[DeviceSelection]()


class Target:
    """A device under test: kernels compile with its server's compiler and options and run
    through its client."""

    def __init__(self, client: ComputeClient) -> None:
        self.client = client

    def emit(self, defn: KernelDefinition) -> CompiledKernel:
        """The generated code of ``defn`` for this device (Unchecked), as its server makes it.

        :raises UnsupportedFeature: when the device cannot express the kernel.
        """
        server = self.client.server
        return KernelTask(defn).compile(
            server.compiler, server.compile_options(), ExecutionMode.UNCHECKED
        )

    def build(self, compiled: CompiledKernel) -> object:
        """Build ``compiled`` with the device's driver, as its server does before a launch."""
        server = self.client.server
        with server.lock:
            return server.driver.build(compiled)

    def run(
        self,
        defn: KernelDefinition,
        arrays: list[np.ndarray],
        scalars: tuple[object, ...] | list[object] = (),
        count: Dim3 = 1,
        dim: Dim3 = 1,
    ) -> list[np.ndarray]:
        """Launch ``defn`` Unchecked and return every array afterwards."""
        return run(self.client, defn, arrays, scalars, count, dim)

    def run_validated(
        self, defn: KernelDefinition, arrays: list[np.ndarray], count: Dim3 = 1, dim: Dim3 = 1
    ) -> tuple[list[np.ndarray], ValidationError | None]:
        """Launch ``defn`` in Validate mode: every array afterwards, and the launch's report."""
        return run_validated(self.client, defn, arrays, (), count, dim)


def _selection(config: pytest.Config) -> DeviceSelection:
    if _SELECTION not in config.stash:
        config.stash[_SELECTION] = DeviceSelection.from_options(config.getoption("ruda_device"))
    return config.stash[_SELECTION]


def _names(config: pytest.Config, backend: str) -> list[str]:
    names = [n for n in _selection(config).names if backend_of(n) == backend]
    return names or [f"{backend}:0"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    opencl = _names(metafunc.config, "opencl")
    if "opencl_device" in metafunc.fixturenames:
        metafunc.parametrize("opencl_device", opencl, indirect=True, scope="session")
    if "device" in metafunc.fixturenames:
        cuda = _names(metafunc.config, "cuda")[0]  # one GPU tells what NVRTC makes of the code
        names = [*opencl, cuda, f"{cuda}-{OLD_ARCH}"]
        metafunc.parametrize("device", names, indirect=True, scope="session")
    if "plane_device" in metafunc.fixturenames:
        cuda = _names(metafunc.config, "cuda")[0]
        names = [*opencl, *(f"{name}-bare" for name in opencl), cuda, f"{cuda}-{OLD_ARCH}"]
        metafunc.parametrize("plane_device", names, indirect=True, scope="session")


def _server_with_options(
    base: ComputeServer, storage: Storage, change: Callable[[CompileOptions], CompileOptions]
) -> ComputeServer:
    """A second server of ``base``'s device and driver whose code is generated with
    ``change(base.compile_options())`` (the driver still builds it for the device itself)."""
    return ComputeServer(
        base.device_id,
        storage,
        base.driver,
        base.properties(),
        base.features(),
        change(base.compile_options()),
        fingerprint=base.driver_fingerprint(),
    )


def _old_arch_client(cuda: ComputeClient) -> ComputeClient:
    """A second server on the GPU of ``cuda`` that generates code for :data:`OLD_ARCH`; NVRTC
    still builds it for the GPU's own architecture, so the fallbacks run there."""
    from ruda_cuda.dialect import CudaTarget
    from ruda_cuda.server import CudaServer
    from ruda_cuda.storage import CudaStorage

    base = CudaServer(cuda.device)
    storage = CudaStorage(base.properties().memory_nbytes, cuda.device.index)
    server = _server_with_options(
        base, storage, lambda options: replace(options, target=CudaTarget.from_name(OLD_ARCH))
    )
    return ComputeClient((cuda.device, OLD_ARCH), server, None, cuda.runtime)


def _bare_subgroups_client(opencl: ComputeClient) -> ComputeClient:
    """A second server on the device of ``opencl`` that generates code without the capabilities
    of :data:`BARE_DROPS` (the driver still offers them)."""
    from ruda_opencl.server import OpenCLServer
    from ruda_opencl.target import OpenCLTarget

    def drop(options: CompileOptions) -> CompileOptions:
        return replace(options, target=options.target_as(OpenCLTarget).without(BARE_DROPS))

    base = OpenCLServer(opencl.device)
    storage = base.driver.storage  # type: ignore[attr-defined]  # an OpenCLDriver's
    server = _server_with_options(base, storage, drop)
    return ComputeClient((opencl.device, "bare"), server, None, opencl.runtime)


@pytest.fixture(scope="session")
def opencl_device(
    request: pytest.FixtureRequest, open_device: Callable[[str], ComputeClient]
) -> Target:
    """Each OpenCL device in turn."""
    return Target(open_device(request.param))


def _target(name: str, open_device: Callable[[str], ComputeClient]) -> Target:
    device, _, variant = name.partition("-")
    client = open_device(device)
    if variant == "bare":
        return Target(_bare_subgroups_client(client))
    return Target(_old_arch_client(client) if variant else client)


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest, open_device: Callable[[str], ComputeClient]) -> Target:
    """Each C-family device in turn (a test using it runs once per device)."""
    return _target(request.param, open_device)


@pytest.fixture(scope="session")
def plane_device(
    request: pytest.FixtureRequest, open_device: Callable[[str], ComputeClient]
) -> Target:
    """Each C-family device in turn, and each OpenCL device again with the plane operations of
    its bare subgroups."""
    return _target(request.param, open_device)

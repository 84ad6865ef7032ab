"""Fixtures of the code generation tests: launchers for the devices this machine has."""

from __future__ import annotations

import pytest

from .launchers import CudaLauncher, OpenCLLauncher


@pytest.fixture(scope="session")
def opencl() -> OpenCLLauncher:
    """A launcher on the first OpenCL device (PoCL on CI); skips without PyOpenCL or a device."""
    pytest.importorskip("pyopencl")
    try:
        return OpenCLLauncher()
    except Exception as exc:  # any driver failure means: no OpenCL device here
        pytest.skip(f"no usable OpenCL device: {exc}")


@pytest.fixture(scope="session")
def cuda() -> CudaLauncher:
    """A launcher on the current CUDA GPU through CuPy; skips without CuPy or a GPU."""
    pytest.importorskip("cupy")
    try:
        return CudaLauncher()
    except Exception as exc:  # any driver failure means: no CUDA device here
        pytest.skip(f"no usable CUDA device: {exc}")


@pytest.fixture(scope="session")
def cuda_sm52(cuda: CudaLauncher) -> CudaLauncher:
    """The CUDA launcher generating code for sm_52: no native f64/f16/bf16 atomic adds and no
    ``__reduce_*_sync``, so the fallbacks run on the GPU."""
    return CudaLauncher(arch="52")


@pytest.fixture(params=["opencl", "cuda", "cuda_sm52"])
def device(request: pytest.FixtureRequest) -> OpenCLLauncher | CudaLauncher:
    """Each launcher in turn (a test using it runs once per available backend)."""
    return request.getfixturevalue(request.param)

"""The ``cuda`` driver plugin. Imports CuPy only when probed."""

from __future__ import annotations

from collections.abc import Mapping

from ruda_core import __version__
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, NoDevice, hookimpl

from .runtime import CudaDevice, CudaRuntime


def _probe() -> list[CudaDevice]:
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise NoDevice(f"CUDA reports no usable device: {exc}") from exc
    return [CudaDevice(k) for k in range(count)]


def _identify(device: object) -> str:
    """The GPU, its driver, the CUDA runtime and CuPy. Not NVRTC: loading it would cost a warm
    start more than the whole probe saves; a new NVRTC comes with a new CuPy or runtime."""
    import cupy

    assert isinstance(device, CudaDevice)
    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(device.index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    where = f"pci {props.get('pciDomainID')}:{props.get('pciBusID')}:{props.get('pciDeviceID')}"
    arch = f"sm_{props['major']}{props['minor']}"
    versions = f"driver {runtime.driverGetVersion()} runtime {runtime.runtimeGetVersion()}"
    return f"{name} {arch} {where} | cuda {versions} cupy {cupy.__version__}"


@hookimpl
def ruda_backend_info() -> BackendInfo:
    return BackendInfo(
        "cuda",
        __version__,
        PLUGIN_API_VERSION,
        CudaRuntime,
        _probe,
        install_hint="pip install 'ruda[cuda]' (CUDA 12) or 'ruda[cuda13]' (CUDA 13)",
        identify=_identify,
        dlpack_device_type=2,  # kDLCUDA: device pointers, indexed as CUDA orders the GPUs
    )


@hookimpl
def ruda_native_ops() -> Mapping[str, object]:
    """LayerNorm and its gradients: the CUDA C++ kernels of :mod:`ruda_cuda.ops.layer_norm`,
    with their replays. Imported here, at the first LayerNorm call on a CUDA client."""
    from .ops import layer_norm

    return {"layer_norm": layer_norm}

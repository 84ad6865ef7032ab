"""Compile-only tests: the representative kernels build on every OpenCL device and with NVRTC
(CUDA).

NVRTC comes from the ``nvidia-cuda-nvrtc-cu12`` and ``cuda-bindings`` wheels (no GPU needed);
the CUDA headers (cuda_fp16.h, cuda_bf16.h) from ``nvidia-cuda-runtime-cu12``. Without them the
CUDA tests skip and say which package is missing. WMMA's ``mma.h`` includes ``crt/mma.h``, which
only a CUDA toolkit ships: sources that include it also search ``$CUDA_PATH/include`` and
``/usr/local/cuda*/include``, and skip where no toolkit has it.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.ir import Elem, ExecutionMode
from ruda_core.ir.bounds import lower_bounds
from ruda_core.ops.sorting_kernels import radix_scatter
from ruda_core.runtime import Feature, KernelTask, UnsupportedFeature
from ruda_cuda.dialect import CudaDialect

from .kernels import KERNELS, partial_plane_kernel


@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_builds_with_opencl(opencl_device, name: str) -> None:
    """Every kernel builds on every OpenCL device, plane kernels too: a device without subgroups
    runs planes of one lane. PoCL, which has no planes, refuses a plane kernel when it is
    generated."""
    definition = KERNELS[name]()
    planes = KernelTask(definition).uses_planes
    if planes and not opencl_device.client.features().has(Feature.PLANE):
        with pytest.raises(UnsupportedFeature, match="plane operation"):
            opencl_device.emit(definition)
        return
    opencl_device.build(opencl_device.emit(definition))


def _toolkit_includes() -> list[str]:
    """The include folders of installed CUDA toolkits that hold ``crt/mma.h``."""
    roots = [os.environ.get("CUDA_PATH", ""), *sorted(glob.glob("/usr/local/cuda*"))]
    found = [os.path.join(r, "include") for r in roots if r]
    return [d for d in found if os.path.isfile(os.path.join(d, "crt", "mma.h"))]


def _nvrtc_compile(
    source: str, arch: int, target: str = "compute", options: tuple[str, ...] = ()
) -> tuple[bool, str]:
    """Whether NVRTC compiles ``source`` for ``{target}_{arch}`` (``compute``: PTX; ``sm``: a
    cubin, through ptxas) with ``options``, and its log."""
    ok, log, _ = _nvrtc_build(source, arch, target, options)
    return ok, log


def _nvrtc_ptx(source: str, arch: int) -> tuple[bool, str]:
    """Whether NVRTC compiles ``source`` for ``compute_{arch}``, and the PTX (else the log)."""
    ok, log, ptx = _nvrtc_build(source, arch, "compute", ())
    return ok, ptx if ok else log


def _nvrtc_build(
    source: str, arch: int, target: str, options: tuple[str, ...]
) -> tuple[bool, str, str]:
    """:func:`_nvrtc_compile`'s result and, for a ``compute`` target that builds, the PTX."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="install cuda-bindings for NVRTC")
    runtime = pytest.importorskip(
        "nvidia.cuda_runtime", reason="install nvidia-cuda-runtime-cu12 for the CUDA headers"
    )
    include = os.path.join(next(iter(runtime.__path__)), "include")
    try:
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    except RuntimeError as exc:  # the bindings load libnvrtc lazily
        pytest.skip(f"NVRTC is not loadable (install nvidia-cuda-nvrtc-cu12): {exc}")
    includes = [include]
    if "#include <mma.h>" in source:
        toolkits = _toolkit_includes()
        if not toolkits:
            pytest.skip("WMMA's mma.h needs crt/mma.h of a CUDA toolkit; set CUDA_PATH")
        includes += toolkits[-1:]
    flags = [f"--gpu-architecture={target}_{arch}", "-w", *options]
    flags += [f"-I{path}" for path in includes]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(flags), [f.encode() for f in flags])
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    # NVRTC writes the log into this buffer: it must be a mutable one of its own (``b" " * 1``
    # is the interpreter's shared one-byte ``b" "``, which the terminating NUL would overwrite)
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, log)
    ok = err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    ptx = bytearray()
    if ok and target == "compute":
        _, ptx_size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = bytearray(ptx_size)
        nvrtc.nvrtcGetPTX(prog, ptx)
    nvrtc.nvrtcDestroyProgram(prog)
    text = log.rstrip(b"\0").decode(errors="replace")
    return ok, text, ptx.rstrip(b"\0").decode(errors="replace")


def test_nvrtc_compile_leaves_the_interpreters_bytes_untouched() -> None:
    # a clean build's log is just its NUL: one byte, which must land in a buffer of its own
    ok, log = _nvrtc_compile('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', 90)
    assert ok and log == ""
    assert [bytes([b])[0] for b in range(256)] == list(range(256)), "a shared bytes was written"


def test_nvrtc_compile_returns_the_log_of_a_rejected_source() -> None:
    ok, log = _nvrtc_compile('extern "C" __global__ void k(float* x) { x[0] = y; }', 90)
    assert not ok
    assert '"y"' in log and "error" in log and "\0" not in log


@pytest.mark.parametrize("arch", [60, 75, 90])
@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_compiles_with_nvrtc(name: str, arch: int) -> None:
    source = CFamilyEmitter(CudaDialect(arch)).emit(KERNELS[name]()).source
    ok, log = _nvrtc_compile(source, arch)
    assert ok, f"NVRTC rejected {name} for sm_{arch}:\n{log}\n{source}"


@pytest.mark.parametrize("arch", [60, 90])
@pytest.mark.parametrize("elem", [E for E in Elem if E is not Elem.BOOL], ids=str)
def test_plane_operations_of_every_element_compile_with_nvrtc(elem: Elem, arch: int) -> None:
    source = CFamilyEmitter(CudaDialect(arch)).emit(partial_plane_kernel(elem)).source
    ok, log = _nvrtc_compile(source, arch)
    assert ok, f"NVRTC rejected plane operations on {elem} for sm_{arch}:\n{log}\n{source}"


#: The 32-bit registers of one multiprocessor from sm_50 to sm_90: what one cube's units share.
REGISTERS_PER_MULTIPROCESSOR = 65536


@pytest.mark.parametrize("elem", [Elem.F32, Elem.F64], ids=str)
def test_a_stated_bound_fits_the_radix_scatter_to_cubes_of_1024_units(elem: Elem) -> None:
    """``radix_scatter`` states ``launch_bounds(UNITS)``, written as ``__launch_bounds__``: NVRTC
    then fits it to the registers of a cube of 1024 units (without it, it took 72 registers per
    unit for f32 and 80 for f64, and such a launch failed for too many resources)."""
    key = Elem.U32 if elem.nbytes == 4 else Elem.U64
    defn = radix_scatter.definition(
        Numeric=elem, Key=key, Index=Elem.I64, UNITS=1024, ITEMS=8, PLANES=32, BALLOT=True,
        VALUES="flagged", RESULT=False, SIGN=1 << (8 * elem.nbytes - 1), KIND="float",
        CUBE=True, PASSES=elem.nbytes, LOOKBACK=False,
    )  # fmt: skip
    lowered = lower_bounds(defn, ExecutionMode.UNCHECKED)  # sorting launches it unchecked
    source = CFamilyEmitter(CudaDialect(90)).emit(lowered).source
    assert 'extern "C" __global__ void __launch_bounds__(1024) radix_scatter(' in source
    ok, log = _nvrtc_compile(source, 90, "sm", ("--ptxas-options=-v",))
    assert ok, f"NVRTC rejected radix_scatter:\n{log}"
    used = re.search(r"Used (\d+) registers", log)
    assert used is not None, log
    assert int(used.group(1)) * 1024 <= REGISTERS_PER_MULTIPROCESSOR, log

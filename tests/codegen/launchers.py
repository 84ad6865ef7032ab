"""Test-only launchers that run generated source through raw PyOpenCL or CuPy.

Each builds the argument list from :class:`~ruda_core.codegen.KernelArg` rows, exactly as a host
launcher would: buffers (bound at a non-zero byte offset on OpenCL, to exercise the prologue),
scalars packed to the row's dtype, and metadata from the definition's layout.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ruda_core.codegen import ArgKind, EmittedKernel
from ruda_core.ir import KernelDefinition
from ruda_core.runtime.compiler import CompileOptions
from ruda_core.runtime.launch import ExecutionMode

Dim = tuple[int, int, int]
#: Byte offset at which the OpenCL launcher binds every buffer.
OFFSET_BYTES = 64


def metadata(defn: KernelDefinition, arrays: Sequence[np.ndarray]) -> list[int]:
    """The u32 metadata of a launch: lengths, then tensor shapes and strides (in elements)."""
    by_param = dict(zip((p.index for p in defn.array_params), arrays, strict=True))
    values = []
    for what, p, axis in defn.metadata_layout():
        arr = by_param[p.index]
        if what == "len":
            values.append(arr.size)
        elif what == "shape":
            values.append(arr.shape[axis])
        else:
            values.append(arr.strides[axis] // arr.itemsize)
    return values


class OpenCLLauncher:
    """Compiles with :class:`OpenCLCompiler` for the capabilities of the first OpenCL device
    that passed ruda's probe, builds with its build options, as its server does, and runs on
    it."""

    name = "opencl"

    def __init__(self) -> None:
        import pyopencl as cl

        import ruda_core
        from ruda_opencl.capabilities import OpenCLCapabilities
        from ruda_opencl.compiler import OpenCLCompiler
        from ruda_opencl.platform import all_devices

        self.cl = cl
        status = next(s for s in ruda_core.backends() if s.name == "opencl")
        if not status.devices:  # none passed the probe: say why
            raise RuntimeError(f"opencl is {status.status.value}: {status.reason}")
        self.device = all_devices()[status.devices[0].index]
        self.ctx = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.ctx)
        self.capabilities = OpenCLCapabilities.of(self.device)
        self.options = self.capabilities.compile_options
        self.compiler = OpenCLCompiler()

    def emit(self, defn: KernelDefinition) -> EmittedKernel:
        compiled = self.compiler.compile(defn, self.options, ExecutionMode.UNCHECKED)
        return EmittedKernel(compiled.entrypoint, compiled.source, compiled.args)

    def build(self, source: str) -> object:
        with warnings.catch_warnings():  # a driver's informational build log is not an error
            warnings.simplefilter("ignore", self.cl.CompilerWarning)
            program = self.cl.Program(self.ctx, source)
            return program.build(options=list(self.capabilities.build_options))

    def run(
        self,
        defn: KernelDefinition,
        arrays: Sequence[np.ndarray],
        scalars: Sequence[object] = (),
        count: Dim = (1, 1, 1),
        dim: Dim = (1, 1, 1),
    ) -> list[np.ndarray]:
        """Launch ``defn`` and return the arrays after it ran (copies)."""
        cl = self.cl
        emitted = self.emit(defn)
        kernel = getattr(self.build(emitted.source), emitted.entrypoint)
        mf = cl.mem_flags
        buffers = []
        for arr in arrays:
            host = np.zeros(OFFSET_BYTES + max(arr.nbytes, 1), np.uint8)
            host[OFFSET_BYTES : OFFSET_BYTES + arr.nbytes] = (
                np.ascontiguousarray(arr).view(np.uint8).ravel()
            )
            buffers.append(cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host))
        meta = metadata(defn, arrays)
        args: list[object] = []
        for a in emitted.args:
            if a.kind is ArgKind.BUFFER:
                args.append(buffers[a.index])
            elif a.kind is ArgKind.OFFSET:
                args.append(np.uint64(OFFSET_BYTES))
            elif a.kind is ArgKind.SCALAR:
                args.append(np.asarray(scalars[a.index]).astype(a.dtype)[()])
            else:
                args.append(np.uint32(meta[a.index]))
        global_size = tuple(cn * dn for cn, dn in zip(count, dim, strict=True))
        kernel(self.queue, global_size, dim, *args)
        results = []
        for arr, buf in zip(arrays, buffers, strict=True):
            host = np.empty(OFFSET_BYTES + max(arr.nbytes, 1), np.uint8)
            cl.enqueue_copy(self.queue, host, buf)
            flat = host[OFFSET_BYTES : OFFSET_BYTES + arr.nbytes].view(arr.dtype)
            results.append(flat.reshape(arr.shape).copy())
        self.queue.finish()
        return results


class CudaLauncher:
    """Compiles with :class:`CudaCompiler` for the current GPU and runs through CuPy."""

    name = "cuda"

    def __init__(self, arch: str | None = None) -> None:
        """``arch`` overrides the architecture the code is generated for (an older one gets
        compare-and-swap loops instead of native atomics); NVRTC still targets the GPU."""
        import cupy

        from ruda_cuda.compiler import CudaCompiler

        self.cupy = cupy
        self.device_arch = cupy.cuda.Device().compute_capability  # e.g. "90"
        self.arch = arch or self.device_arch
        self.options = CompileOptions(extra=(("arch", f"sm_{self.arch}"),))
        self.compiler = CudaCompiler()

    def emit(self, defn: KernelDefinition) -> EmittedKernel:
        compiled = self.compiler.compile(defn, self.options, ExecutionMode.UNCHECKED)
        return EmittedKernel(compiled.entrypoint, compiled.source, compiled.args)

    def build(self, source: str) -> object:
        """NVRTC with its default options (CuPy's RawModule would add -ftz=true)."""
        import glob
        import os

        from cupy.cuda import function
        from cupy_backends.cuda.libs import nvrtc

        cuda_path = self.cupy.cuda.get_cuda_path() or ""
        core = os.path.dirname(self.cupy._core.__file__)
        includes = [os.path.join(cuda_path, "include")]
        includes += sorted(glob.glob(os.path.join(core, "include", "cupy", "_cuda", "cuda-*")))
        options = ["--std=c++17", f"-arch=compute_{self.device_arch}"]
        options += [f"-I{path}" for path in includes if os.path.isdir(path)]
        program = nvrtc.createProgram(source, "kernel.cu", [], [])
        try:
            nvrtc.compileProgram(program, options)
        except Exception as exc:
            raise RuntimeError(f"{exc}\n{nvrtc.getProgramLog(program)}") from exc
        module = function.Module()
        module.load(nvrtc.getPTX(program))
        return module

    def run(
        self,
        defn: KernelDefinition,
        arrays: Sequence[np.ndarray],
        scalars: Sequence[object] = (),
        count: Dim = (1, 1, 1),
        dim: Dim = (1, 1, 1),
    ) -> list[np.ndarray]:
        cp = self.cupy
        emitted = self.emit(defn)
        function = self.build(emitted.source).get_function(emitted.entrypoint)  # type: ignore[attr-defined]
        device = [cp.asarray(np.ascontiguousarray(arr)) for arr in arrays]
        meta = metadata(defn, arrays)
        args: list[object] = []
        for a in emitted.args:
            if a.kind is ArgKind.BUFFER:
                args.append(device[a.index])
            elif a.kind is ArgKind.SCALAR:
                args.append(np.asarray(scalars[a.index]).astype(a.dtype)[()])
            else:
                args.append(np.uint32(meta[a.index]))
        function(count, dim, tuple(args))
        cp.cuda.Device().synchronize()
        return [cp.asnumpy(d).reshape(arr.shape) for d, arr in zip(device, arrays, strict=True)]

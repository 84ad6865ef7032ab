"""``CudaSourceTask``: a kernel written in CUDA C++ instead of the kernel language, for the CUDA
runtime's native operations.

It is a :class:`~ruda_core.runtime.RudaTask` like any other, so a launch takes the ordinary path:
``ComputeClient.launch`` on the client's stream, the server's kernel cache (one NVRTC build per
task key and device, through :func:`ruda_cuda.driver.build_cubin`, kept on disk), its argument
packer, stream ordering, poisoning, profiling and capture. The entry point is an
``extern "C"`` wrapper generated here from the parameter list, so the argument rows the server
packs and the C signature come from one place. The launch ABI is the plain one: one pointer
per array parameter, then one value per scalar; no metadata. The source is trusted: the
bounds-check modes do not instrument it. Pure: imports no driver.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ruda_core.codegen import MemSpace
from ruda_core.codegen.abi import ArgKind, KernelArg
from ruda_core.ir import ExecutionMode, KernelDefinition, Param, SourceLoc
from ruda_core.runtime import CompiledKernel, CompileOptions, Compiler, RudaTask, UnsupportedFeature

from ..compiler import CudaCompiler

__all__ = ["CudaSourceTask"]


class CudaSourceTask(RudaTask):
    """The kernel ``name``: ``library`` (CUDA C++ defining what ``call`` calls) and an entry
    point ``name(params…)`` whose body is ``call``, with at most ``max_units`` threads per
    block (``__launch_bounds__``; a launch of a larger cube is refused before it runs).

    :param params: array parameters (pointers, ``const`` unless written) and scalar parameters,
        each with its element type; ``call`` refers to them by name. Bindings and scalars of a
        launch follow the order of the array and of the scalar parameters.
    :param where: the file ``library`` comes from, for compiler errors.
    """

    __slots__ = ("_call", "_library", "_writes", "definition", "key", "max_units", "name")

    key: str
    name: str

    def __init__(
        self,
        name: str,
        library: str,
        call: str,
        params: Sequence[Param],
        block_threads: int,
        where: str,
    ) -> None:
        self.name = name
        self._library = library
        self._call = call
        self.max_units = block_threads
        self.definition = KernelDefinition(
            name, tuple(params), (), (), (), (), source=SourceLoc(where, 1)
        )
        self._writes = tuple(not p.read_only for p in self.definition.array_params)
        text = "\n".join((library, call, repr(self.definition.params), str(block_threads)))
        self.key = f"cuda-source-{name}-{hashlib.sha256(text.encode()).hexdigest()}"

    def writes(self, binding_index: int) -> bool:
        writes = self._writes
        return binding_index >= len(writes) or writes[binding_index]

    def compile(
        self, compiler: Compiler, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        """The library and its entry point, the same in every mode.

        :raises UnsupportedFeature: for a compiler other than CUDA's.
        """
        if not isinstance(compiler, CudaCompiler):
            raise UnsupportedFeature(
                f"kernel {self.name} is CUDA C++; the {compiler.name or 'given'} compiler cannot "
                "build it: run it on a CUDA device"
            )
        dialect = compiler.dialect(options)
        args: list[KernelArg] = []
        decls: list[str] = []
        counts = {ArgKind.BUFFER: 0, ArgKind.SCALAR: 0}
        for p in self.definition.params:
            ctype = dialect.type_name(p.elem)
            if p.is_array:
                kind = ArgKind.BUFFER
                pointee = dialect.qualified(MemSpace.GLOBAL, ctype, const=p.read_only)
                ctype = f"{pointee}* __restrict__"
            else:
                kind = ArgKind.SCALAR
            args.append(KernelArg(p.name, kind, ctype, dialect.host_dtype(p.elem), counts[kind]))
            counts[kind] += 1
            decls.append(f"{ctype} {p.name}")
        source = (
            f"// {self.name}: native CUDA C++ of ruda_cuda ({self.definition.source})\n"
            f"{self._library}\n"
            f'extern "C" __global__ void __launch_bounds__({self.max_units})\n'
            f"{self.name}({', '.join(decls)}) {{\n"
            f"    {self._call};\n"
            "}\n"
        )
        return CompiledKernel(
            entrypoint=self.name,
            source=source,
            definition=self.definition,
            mode=mode,
            plane_dim=options.plane_dim,
            args=tuple(args),
        )

    def __repr__(self) -> str:
        return f"CudaSourceTask({self.name}, key={self.key[-12:]})"

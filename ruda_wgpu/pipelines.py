"""``KernelPipelines``: shader modules, compute pipelines and bind groups of one device.

A kernel's WGSL module is built once (``build``); its pipelines are specialised per
``RudaDim`` and dynamic shared sizes through override constants (``pipeline``), and cached on
the built kernel. Kernels with ``n`` array parameters share bind group layouts: the launch
records at binding 0 (a dynamic offset per launch) and ``n`` whole pages, those the kernel only
reads bound ``read-only-storage`` (a layout per pattern). WebGPU refuses a dispatch that binds
one buffer both read-only and writable, and the memory pool puts many arrays in one page, so a
launch whose read-only array shares its page with a written one runs the kernel's variant that
binds every array writable (``variant``), built at its first use. A bind group is cached per
(layout, record arena, pages) and dropped when a page is given back. Imports wgpu.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import wgpu

from ruda_core.codegen.printf import print_sites, record_format
from ruda_core.errors import CompilationError, TooManyResources
from ruda_core.runtime import Binding, CompiledKernel, RudaDim
from ruda_core.runtime.print_records import PrintTable

from .adapters import WgpuErrors, bind_group
from .storage import WebGpuStorage
from .wgsl import RecordLayout, all_writable, reports_faults, workgroup_nbytes
from .wgsl.layout import RECORD_WORDS

__all__ = ["RECORD_WINDOW_NBYTES", "BuiltKernel", "KernelPipelines"]

#: The bytes of launch records a dispatch sees from its dynamic offset: a kernel's record
#: (4 bytes per array, metadata value and scalar word) must fit.
RECORD_WINDOW_NBYTES = 4 * RECORD_WORDS


@dataclass(eq=False, slots=True)
class BuiltKernel:
    """A built shader module with what every launch of it needs, fixed once."""

    compiled: CompiledKernel  #: what its all-writable variant is built from
    module: Any
    layout: tuple[Any, Any]  #: the bind group layout and pipeline layout of its bindings
    kernel_id: int  #: what the kernel reports into the kernel-fault word
    #: the base of its print sites' numbers (:class:`PrintTable`); None: it prints nothing
    print_base: int | None
    #: the positions of the arrays its module binds writable, and of those it binds read-only
    written: tuple[int, ...]
    read_only: tuple[int, ...]
    faults: bool  #: whether its module binds the kernel-fault word
    #: the variant binding every array writable, once a launch has needed it
    writable: BuiltKernel | None = None
    pipelines: dict[tuple[RudaDim, tuple[int, ...]], Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.compiled.definition.name


class KernelPipelines:
    """The shader modules, pipelines and bind groups of one device."""

    def __init__(
        self, device: Any, storage: WebGpuStorage, faults: Any, loop_limit: int, local_words: int
    ) -> None:
        """:param faults: the kernel-fault word's buffer, bound after the arrays (and print
            records) of the kernels :func:`~ruda_wgpu.wgsl.reports_faults` names.
        :param loop_limit: the turns after which the driver stops a unit's loops (0: none).
        :param local_words: the longest local array, in 4-byte words, the driver builds in a
            reasonable time (0: any)."""
        self._device = device
        self._storage = storage
        self._faults = faults
        self._loop_limit = loop_limit
        self._local_words = local_words
        #: the names of the built kernels, by the id they report (from 1)
        self.names: list[str] = []
        self._layouts: dict[tuple[int, tuple[int, ...], int], tuple[Any, Any]] = {}
        #: the print sites of the printing kernels built
        self.prints = PrintTable()
        self._groups: dict[tuple[Any, ...], Any] = {}
        self._generation = storage.generation
        limits = device.limits
        #: storage buffers one dispatch binds (the launch record is a uniform buffer)
        buffers = int(limits["max-storage-buffers-per-shader-stage"])
        self._max_storage = min(buffers, int(limits["max-bindings-per-bind-group"]) - 1)
        self._workgroup = int(limits["max-compute-workgroup-storage-size"])

    def _layout(self, narrays: int, written: tuple[int, ...], extra: int) -> tuple[Any, Any]:
        """The bind group layout and pipeline layout of kernels with ``narrays`` arrays, those
        not among ``written`` bound read-only, and ``extra`` writable buffers after them (the
        print records, the kernel-fault word)."""
        key = (narrays, written, extra)
        if key not in self._layouts:
            kinds = ["storage" if k in written else "read-only-storage" for k in range(narrays)]
            kinds += ["storage"] * extra
            buffers = [{"type": "uniform", "has_dynamic_offset": True}]
            buffers += [{"type": kind} for kind in kinds]
            visible = wgpu.ShaderStage.COMPUTE
            entries = [
                {"binding": k, "visibility": visible, "buffer": b} for k, b in enumerate(buffers)
            ]
            group = self._device.create_bind_group_layout(entries=entries)
            pipeline = self._device.create_pipeline_layout(bind_group_layouts=[group])
            self._layouts[key] = (group, pipeline)
        return self._layouts[key]

    def build(self, compiled: CompiledKernel) -> BuiltKernel:
        """Build ``compiled.source`` into a shader module.

        :raises TooManyResources: the kernel has more array parameters than the device binds,
            or a local array longer than the driver builds in a reasonable time.
        :raises CompilationError: with wgpu's report and the numbered source.
        """
        definition = compiled.definition
        narrays = len(definition.array_params)
        sites = print_sites(definition)
        extra = ["the print records"] if sites else []
        faults = reports_faults(definition, self._loop_limit, compiled.plane_dim)
        extra += ["the kernel-fault word"] if faults else []
        if narrays + len(extra) > self._max_storage:
            also = f", and {' and '.join(extra)}," if extra else ""
            raise TooManyResources(
                f"kernel {definition.name} binds {narrays} arrays{also} where one WebGPU "
                f"dispatch on this device binds {self._max_storage} storage buffers "
                "(max-storage-buffers-per-shader-stage). Pass fewer arrays, e.g. several in one"
            )
        for local in definition.local_arrays:
            words = local.length * -(-local.elem.nbytes // 4)
            if self._local_words and words > self._local_words:
                raise TooManyResources(
                    f"kernel {definition.name} has a local array of {local.length} {local.elem} "
                    f"({words} 4-byte words); lavapipe's time to build a kernel grows faster "
                    "than the square of a local array's length (two minutes at 2 048 words), "
                    f"so ruda builds none over {self._local_words} words there. Keep a longer "
                    "array in shared memory or in a device array, or run it on another device"
                )
        record = RecordLayout.of(definition).packer.size
        if record > RECORD_WINDOW_NBYTES:
            raise TooManyResources(
                f"kernel {definition.name} takes {record} bytes of arguments, array lengths and "
                f"tensor shapes; a WebGPU launch of ruda passes at most {RECORD_WINDOW_NBYTES}. "
                "Pass fewer or lower-rank tensors"
            )
        module = self._module(compiled, compiled.source)
        self.names.append(definition.name)
        base = self.prints.register([record_format(i) for i in sites]) if sites else None
        written = compiled.written
        layout = self._layout(narrays, written, len(extra))
        read_only = tuple(k for k in range(narrays) if k not in written)
        kernel_id = len(self.names)
        return BuiltKernel(compiled, module, layout, kernel_id, base, written, read_only, faults)

    def _module(self, compiled: CompiledKernel, source: str) -> Any:
        """The shader module of ``source``, generated for ``compiled``.

        :raises CompilationError: with wgpu's report and the numbered source.
        """
        try:
            return self._device.create_shader_module(code=source)
        except Exception as exc:  # wgpu raises plain Exceptions with naga's report
            numbered = "\n".join(f"{k:4d}  {line}" for k, line in enumerate(source.splitlines(), 1))
            definition = compiled.definition
            loc = definition.source
            raise CompilationError(
                f"kernel {definition.name} did not build for WebGPU: {exc}\n{numbered}",
                file=loc.file if loc else None,
                line=loc.line if loc else None,
            ) from exc

    def variant(self, built: BuiltKernel, bindings: Sequence[Binding]) -> BuiltKernel:
        """``built``, or its variant that binds every array writable where one of the pages
        ``bindings`` holds is bound to an array ``built`` reads only and to one it writes
        (built at the first such launch; it reports and prints as ``built``)."""
        if not built.read_only:
            return built
        written = {bindings[k].resource for k in built.written}
        if not any(bindings[k].resource in written for k in built.read_only):
            return built
        if built.writable is None:
            module = self._module(built.compiled, all_writable(built.compiled.source))
            every = tuple(range(len(bindings)))
            layout = self._layout(
                len(bindings), every, (built.print_base is not None) + built.faults
            )
            built.writable = replace(
                built, module=module, layout=layout, written=every, read_only=(), pipelines={}
            )
        return built.writable

    def pipeline(self, built: BuiltKernel, dim: RudaDim, shared: tuple[int, ...]) -> Any:
        """The pipeline of ``built`` for cubes of ``dim`` and dynamic shared lengths
        ``shared``, made at its first use.

        :raises TooManyResources: its workgroup memory passes the device's: wgpu does not
            refuse such a pipeline, and a driver may then run it wrongly or not at all.
        """
        key = (dim, shared)
        found = built.pipelines.get(key)
        if found is not None:
            return found
        static, elements = workgroup_nbytes(built.compiled.definition)
        needed = static + sum(max(n, 1) * e for n, e in zip(shared, elements, strict=True))
        if needed > self._workgroup:
            raise TooManyResources(
                f"kernel {built.name} needs {needed} bytes of workgroup memory on WebGPU, "
                f"over the device's {self._workgroup} (max-compute-workgroup-storage-size): "
                "WGSL holds each shared element of bool or an 8- or 16-bit integer in a 4-byte "
                "word. Use shorter shared arrays, or u32 elements that pack several values"
            )
        constants: dict[str, int] = {"WX": dim.x, "WY": dim.y, "WZ": dim.z}
        constants.update({f"RUDA_SHARED_{k}": max(n, 1) for k, n in enumerate(shared)})
        if built.faults:
            constants["RUDA_KERNEL_ID"] = built.kernel_id
        if built.print_base is not None:
            constants["RUDA_PRINT_BASE"] = built.print_base
        with WgpuErrors(f"making the pipeline of kernel {built.name} for {dim}"):
            made = self._device.create_compute_pipeline(
                layout=built.layout[1],
                compute={"module": built.module, "entry_point": "main", "constants": constants},
            )
        built.pipelines[key] = made
        return made

    def group(
        self, built: BuiltKernel, records: Any, bindings: Sequence[Binding], prints: Any = None
    ) -> Any:
        """The bind group of the launch records ``records``, the bindings' pages and, for a
        printing kernel, the stream's print-record buffer ``prints``."""
        if self._generation != self._storage.generation:
            self._groups.clear()  # a page was given back: groups over it must go
            self._generation = self._storage.generation
        layout = built.layout[0]
        key = (layout, records, prints, *(b.resource for b in bindings))
        found = self._groups.get(key)
        if found is not None:
            return found
        pages: list[Any] = [b.resource for b in bindings]  # GPUBuffers, bound whole
        if built.print_base is not None:
            pages.append(prints)
        if built.faults:
            pages.append(self._faults)
        windows = [(records, 0, RECORD_WINDOW_NBYTES), *((page, 0, page.size) for page in pages)]
        with WgpuErrors(f"binding the arrays of kernel {built.name}"):
            made = bind_group(self._device, layout, windows)
        self._groups[key] = made
        return made

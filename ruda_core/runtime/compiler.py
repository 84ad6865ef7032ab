"""The compile contract: ``Compiler`` (IR -> source), ``CompiledKernel`` and ``RudaTask``.

A backend's :class:`Compiler` is pure: a lowered :class:`KernelDefinition`, options and a mode go
in, source text comes out, with no driver call. Building that source into something runnable
(NVRTC, ``clBuildProgram``, ``exec``) is the server's job, cached per (kernel, device).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..errors import LaunchConfigError
from ..ir import (
    BARRIER_OPS,
    MATRIX_OPS,
    PLANE_OPS,
    WARPGROUP_OPS,
    BuiltinKind,
    ExecutionMode,
    Instr,
    KernelDefinition,
    MatrixConfig,
    builtins_read,
    line_alignment,
    walk,
)
from ..ir.bounds import lower_bounds, report_names
from ..ir.kernel import dynamic_shared_bytes
from .memory.handle import Binding

if TYPE_CHECKING:  # types only: the runtime does not import codegen
    from ..codegen.abi import KernelArg

__all__ = [
    "UNBOUNDED_UNITS",
    "WIDE_LIMIT",
    "WIDE_POSITIONS",
    "CompileOptions",
    "CompiledKernel",
    "Compiler",
    "KernelTask",
    "RudaTask",
]


#: The positions that count over the whole launch, not within one cube or along one axis of
#: cubes: each a ``u32`` that wraps past ``2**32 - 1`` (:attr:`RudaTask.wide_positions`).
WIDE_POSITIONS = frozenset(
    {
        BuiltinKind.ABSOLUTE_POS,
        BuiltinKind.ABSOLUTE_POS_X,
        BuiltinKind.ABSOLUTE_POS_Y,
        BuiltinKind.ABSOLUTE_POS_Z,
        BuiltinKind.RUDA_POS,
        BuiltinKind.RUDA_COUNT,
    }
)
#: Launches of a task with :attr:`RudaTask.wide_positions` hold fewer units than this.
WIDE_LIMIT = 2**32

#: A backend's compile target type (see :attr:`CompileOptions.target`).
_Target = TypeVar("_Target")

#: A task's :attr:`~RudaTask.max_units` where it states no bound: more units than any cube has.
UNBOUNDED_UNITS = 1 << 62
#: The largest metadata value: kernels read each as a ``u32``.
_U32_MAX = (1 << 32) - 1


@dataclass(frozen=True, slots=True)
class CompileOptions:
    """Backend options that change the generated code. Part of every cache key.

    :param plane_dim: the plane width the code is generated for.
    :param target: what else the backend's code generator needs, as the backend's own frozen
        dataclass (its architecture, its capabilities …), read back with :meth:`target_as`;
        None gives the backend's defaults. It is hashable and picklable, and its ``repr`` is a
        cache key, so it holds no set whose order varies between processes (sorted tuples).
    """

    plane_dim: int = 32
    target: Hashable | None = None

    def target_as(self, kind: type[_Target]) -> _Target:
        """:attr:`target` as the backend's ``kind``; ``kind()`` (its defaults) where it is None.

        :raises TypeError: when :attr:`target` is something else (another backend's).
        """
        target = self.target
        if target is None:
            return kind()
        if not isinstance(target, kind):
            raise TypeError(
                f"CompileOptions.target is a {type(target).__qualname__}, not the "
                f"{kind.__qualname__} this compiler reads"
            )
        return target


@dataclass(frozen=True, slots=True)
class CompiledKernel:
    """The output of :meth:`Compiler.compile`: generated source and every fact a server needs to
    build and launch it. Immutable and picklable (the persistent cache stores it).

    :param entrypoint: the function name to look up in the built module/program.
    :param source: the generated source text (what ``RUDA_DUMP_SOURCE`` writes).
    :param definition: the lowered definition the source was generated from.
    :param mode: the execution mode the source implements.
    :param plane_dim: the plane width the source was generated for
        (``CompileOptions.plane_dim``).
    :param args: the generated kernel's argument list as
        :class:`~ruda_core.codegen.abi.KernelArg` rows, what a C-family server packs; empty for
        targets without one (the NumPy device).
    :param written: binding positions of the array parameters the generated code may write, where
        the compiler analyses writes (the NumPy compiler does); empty otherwise.
    :param report_names: in Validate mode, the array names a report's buffer number indexes
        (:func:`~ruda_core.ir.report_names`; set by :meth:`KernelTask.compile`); else empty.
    """

    entrypoint: str
    source: str
    definition: KernelDefinition
    mode: ExecutionMode
    plane_dim: int
    args: tuple[KernelArg, ...] = ()
    written: tuple[int, ...] = ()
    report_names: tuple[str, ...] = ()

    @property
    def shared_bytes(self) -> int:
        """Static shared memory per cube, in bytes (the definition's)."""
        return self.definition.shared_bytes

    @property
    def local_bytes(self) -> int:
        """Local-array memory per unit, in bytes (the definition's)."""
        return self.definition.local_bytes


class Compiler(ABC):
    """Turns a lowered kernel definition into source text for one target language."""

    #: A short name of the target language, e.g. ``"cuda"``, ``"opencl"``, ``"numpy"``.
    name: str = ""
    #: File suffix of the generated source (used when dumping it for debugging).
    source_suffix: str = "txt"

    @abstractmethod
    def compile(
        self, definition: KernelDefinition, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        """Generate source for ``definition`` (already lowered for ``mode`` by the bounds pass).

        Deterministic: equal inputs give equal source.

        :raises CompilationError: when the definition uses something the target cannot express.
        """


class RudaTask(ABC):
    """Something a server can compile and launch: a kernel with a stable cache ``key``."""

    @property
    @abstractmethod
    def key(self) -> str:
        """Identity of the task for caches; equal keys mean interchangeable compiled code."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The kernel's name, used in error messages."""

    @property
    def shared_bytes(self) -> int:
        """Static shared memory per cube, in bytes (checked against the device before launch)."""
        return 0

    #: Whether the task has shared memory sized by its scalars (see :meth:`dynamic_shared_bytes`).
    dynamic_shared: bool = False
    #: The most units a cube of its launches may have (a kernel's ``launch_bounds``): a launch of
    #: a larger cube is refused before it runs. :data:`UNBOUNDED_UNITS` where the task states no
    #: bound, so that the launch check stays one comparison.
    max_units: int = UNBOUNDED_UNITS
    #: The fewest units a cube of its launches may have: :attr:`max_units` where the kernel
    #: states its exact cube (``cube_units``), else 1; a launch of a smaller cube is refused.
    min_units: int = 1
    #: The bindings, scalars and metadata values each launch passes (a kernel's arrays, its
    #: scalar parameters, and the slots of its metadata layout), checked by
    #: ``ComputeClient.launch``, ``launch_unchecked`` and ``prepare`` before anything runs;
    #: None where the task does not say.
    arity: tuple[int, int, int] | None = None
    #: The byte multiple each binding must start at (its element's size, or its line's where
    #: the kernel reads or writes it in lines: GPUs load elements at such multiples only),
    #: checked with :attr:`arity`; None where the task does not say.
    alignment: tuple[int, ...] | None = None
    #: The bytes of an element of each binding, where the first metadata values are the
    #: bindings' lengths in elements (a kernel's: its checked accesses stop at those lengths),
    #: so that a length past its binding's bytes is refused; checked with :attr:`alignment`
    #: (where that is given); None where the task does not say.
    element_nbytes: tuple[int, ...] | None = None
    #: The NumPy scalar type of each scalar a launch passes (the launch ABI's: a driver packs
    #: what it is given, converting or refusing another type in its own way), checked with
    #: :attr:`arity`; None where the task does not say.
    scalar_types: tuple[type, ...] | None = None

    def describe_binding(self, k: int) -> str:
        """How errors name the ``k``-th binding of a launch (``"binding 2 of kernel scale"``;
        a kernel's own arrays by their parameters: ``"argument 'out' of kernel scale"``)."""
        return f"binding {k} of kernel {self.name}"

    def describe_count(self, _: int = 0) -> str:
        """How errors name the binding of a launch's dynamic count (``"the dynamic count of
        kernel scale"``); takes a binding index, unused, to stand where
        :meth:`describe_binding` does."""
        return f"the dynamic count of kernel {self.name}"

    def check_arity(
        self, bindings: Sequence[Binding], scalars: Sequence[object], metadata: Sequence[int]
    ) -> None:
        """Raise ``LaunchConfigError`` unless a launch passes the bindings, scalars and metadata
        values the task takes (:attr:`arity`), each binding a :class:`~.memory.Binding`, each
        metadata value an integer a ``u32`` holds, each scalar of its :attr:`scalar_types`,
        each binding starting at a multiple of its :attr:`alignment` and holding the length its
        metadata value gives it (:attr:`element_nbytes`); nothing to check where these are
        None."""
        arity, got = self.arity, (len(bindings), len(scalars), len(metadata))
        if arity is not None and got != arity:
            raise LaunchConfigError(
                f"kernel {self.name} takes {arity[0]} bindings, {arity[1]} scalars and "
                f"{arity[2]} metadata values; the launch passes {got[0]}, {got[1]} and {got[2]}"
            )
        for k, binding in enumerate(bindings):
            if type(binding) is not Binding:
                hint = " (handle.binding() gives one)" if hasattr(binding, "binding") else ""
                raise LaunchConfigError(
                    f"binding {k} of kernel {self.name} is {binding!r}; a launch takes "
                    f"Bindings{hint}"
                )
        for k, value in enumerate(metadata):
            if not (type(value) is int or isinstance(value, np.integer)) or not (
                0 <= value <= _U32_MAX
            ):
                raise LaunchConfigError(
                    f"metadata value {k} of kernel {self.name} is {value!r}: metadata values "
                    f"(lengths, shapes, strides) are integers from 0 to {_U32_MAX}"
                )
        types = self.scalar_types
        if types is not None and len(types) == len(scalars):
            for k, kind in enumerate(types):
                if type(scalars[k]) is not kind:
                    name = f"{kind.__module__}.{kind.__name__}"
                    raise LaunchConfigError(
                        f"scalar {k} of kernel {self.name} is a {name}; the launch passes "
                        f"{scalars[k]!r}. Pass {name}(value): a launch through the runtime API "
                        "passes its scalars as they are"
                    )
        alignment, sizes = self.alignment, self.element_nbytes
        if alignment is None or len(alignment) != len(bindings) or len(metadata) < len(bindings):
            return
        for k, n in enumerate(alignment):
            binding = bindings[k]
            if binding.offset_bytes % n:
                raise LaunchConfigError(
                    f"{self.describe_binding(k)} starts {binding.offset_bytes} B into its "
                    f"memory; the kernel accesses it in elements or lines of {n} B, which need a "
                    f"start at a multiple of {n} B"
                )
            # a division, not a product: a NumPy integer length would wrap in a product
            if sizes is not None and metadata[k] > binding.nbytes // sizes[k]:
                raise LaunchConfigError(
                    f"{self.describe_binding(k)} holds {binding.nbytes} B, but the "
                    f"launch's metadata gives it a length of {metadata[k]} elements of "
                    f"{sizes[k]} B: a checked access within that length could pass the "
                    "binding's end. Pass the length the binding holds"
                )

    def dynamic_shared_bytes(self, scalars: Sequence[object]) -> int:
        """The shared memory per cube that a launch with ``scalars`` needs beyond
        :attr:`shared_bytes` (checked against the device before launch)."""
        return 0

    def writes(self, binding_index: int) -> bool:
        """Whether the task may write its ``binding_index``-th binding (True unless known
        read-only). A failed launch poisons only the bindings it may write."""
        return True

    @property
    def uses_planes(self) -> bool:
        """Whether the task uses plane operations (a driver may refuse some cube shapes for
        them)."""
        return False

    @property
    def wide_positions(self) -> bool:
        """Whether the task reads a position that counts over the whole launch
        (:data:`WIDE_POSITIONS`): a ``u32`` that a launch of ``2**32`` units or more wraps, so
        such a launch is refused."""
        return False

    @property
    def matrix_configs(self) -> frozenset[MatrixConfig]:
        """The cooperative-matrix configurations the task multiplies: a device that lacks one
        refuses to compile it."""
        return frozenset()

    @property
    def uses_warpgroups(self) -> bool:
        """Whether the task uses warpgroup matrix operations (``wgmma``): a device without
        ``Feature.WARPGROUP_MMA`` refuses to compile it."""
        return False

    @property
    def uses_barriers(self) -> bool:
        """Whether the task uses asynchronous barriers or bulk copies (``mbarrier``): a device
        without ``Feature.ASYNC_BARRIER`` refuses to compile it."""
        return False

    @abstractmethod
    def compile(
        self, compiler: Compiler, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        """Compile with ``compiler``; never launches anything."""


class KernelTask(RudaTask):
    """A task for a specialised :class:`KernelDefinition`. Applies the shared bounds pass for the
    mode, then the backend compiler. Its facts are plain attributes, computed once: every launch
    reads them (a property would be a call each time)."""

    __slots__ = (
        "_dynamic",
        "_writes",
        "alignment",
        "arity",
        "definition",
        "dynamic_shared",
        "element_nbytes",
        "key",
        "matrix_configs",
        "max_units",
        "min_units",
        "name",
        "scalar_types",
        "shared_bytes",
        "uses_barriers",
        "uses_planes",
        "uses_warpgroups",
        "wide_positions",
    )

    key: str
    name: str
    alignment: tuple[int, ...]
    element_nbytes: tuple[int, ...]
    scalar_types: tuple[type, ...]
    shared_bytes: int
    uses_planes: bool
    uses_warpgroups: bool
    uses_barriers: bool
    wide_positions: bool
    dynamic_shared: bool
    max_units: int
    min_units: int
    matrix_configs: frozenset[MatrixConfig]

    def __init__(self, definition: KernelDefinition) -> None:
        self.definition = definition
        self.key = definition.fingerprint()
        self.name = definition.name
        self.shared_bytes = definition.shared_bytes
        bound = definition.max_units
        self.max_units = UNBOUNDED_UNITS if bound is None else bound
        self.min_units = self.max_units if definition.exact_units else 1
        self._dynamic = definition.dynamic_shared  # read by every launch: computed once
        self.dynamic_shared = bool(self._dynamic)
        self._writes = tuple(not p.read_only for p in definition.array_params)
        arrays, scalars = definition.array_params, definition.scalar_params
        self.arity = (len(arrays), len(scalars), len(definition.metadata_layout()))
        lined = line_alignment(definition)
        self.alignment = tuple(max(p.elem.nbytes, lined.get(p, 1)) for p in arrays)
        self.element_nbytes = tuple(p.elem.nbytes for p in arrays)
        self.scalar_types = tuple(p.elem.numpy.type for p in scalars)
        self.uses_planes = any(
            isinstance(s, Instr) and s.op in PLANE_OPS | MATRIX_OPS for s in walk(definition.body)
        )
        self.matrix_configs = definition.matrix_configs
        self.uses_warpgroups = any(
            isinstance(s, Instr) and s.op in WARPGROUP_OPS for s in walk(definition.body)
        )
        self.uses_barriers = any(
            isinstance(s, Instr) and s.op in BARRIER_OPS for s in walk(definition.body)
        )
        self.wide_positions = not WIDE_POSITIONS.isdisjoint(builtins_read(definition.body))

    def dynamic_shared_bytes(self, scalars: Sequence[object]) -> int:
        return dynamic_shared_bytes(self._dynamic, scalars) if self._dynamic else 0

    def describe_binding(self, k: int) -> str:
        arrays = self.definition.array_params
        if k < len(arrays):
            return f"argument {arrays[k].name!r} of kernel {self.name}"
        return super().describe_binding(k)

    def writes(self, binding_index: int) -> bool:
        writes = self._writes
        return binding_index >= len(writes) or writes[binding_index]

    def compile(
        self, compiler: Compiler, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        compiled = compiler.compile(lower_bounds(self.definition, mode), options, mode)
        if mode is ExecutionMode.VALIDATE:  # the server names buffers in ValidationErrors
            compiled = replace(compiled, report_names=report_names(self.definition))
        return compiled

    def __repr__(self) -> str:
        return f"KernelTask({self.definition.name}, key={self.key[:12]})"

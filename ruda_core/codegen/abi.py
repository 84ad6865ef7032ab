"""The argument list of a generated kernel, as data for the host launcher.

The order is fixed (see :mod:`ruda_core.ir.kernel`): one pointer per ARRAY/TENSOR parameter —
followed, where the dialect has an ``offset_type``, by that buffer's byte offset — then one value
per SCALAR parameter, then the ``u32`` metadata slots of
:meth:`~ruda_core.ir.KernelDefinition.metadata_layout`, one ``unsigned int`` each, then, where
the dialect passes dynamic shared memory as an argument (``dynamic_shared == "argument"``), one
shared byte pointer that the kernel carves into its dynamic shared arrays, whose sizes the host
gives at launch (one argument however many arrays: drivers differ, and some fail, on several
shared-memory arguments), then, where the dialect records prints and the kernel prints, the
stream's print-record buffer and the ``u32`` its print sites are numbered from (see
:mod:`ruda_core.codegen.printf`). A launcher
builds its packer from :class:`KernelArg` rows once per kernel and never parses source.
This module only describes and declares arguments; it writes no kernel body.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ..errors import UnsupportedFeature
from ..ir import DYNAMIC_SHARED_ALIGN, Const, Elem, Instr, KernelDefinition, Op, Param, walk
from .dialect import Dialect, MemSpace
from .printf import print_sites

__all__ = [
    "ArgKind",
    "KernelArg",
    "Signature",
    "arg_values",
    "build_signature",
    "make_arg_reader",
    "tensor_map_key",
]


class ArgKind(enum.Enum):
    """What the host passes for one kernel argument."""

    BUFFER = "buffer"  #: the device pointer of ``bindings[index]``
    OFFSET = "offset"  #: the byte offset of ``bindings[index]`` within its pointer
    SCALAR = "scalar"  #: ``scalars[index]`` converted to ``dtype``
    METADATA = "metadata"  #: ``metadata[index]`` as ``u32``
    #: the shared bytes of the static shared arrays placed in it (``index`` bytes) and of the
    #: dynamic shared arrays listed in ``parts``
    SHARED = "shared"
    PRINT = "print"  #: the stream's print-record buffer (``Dialect.print_records``)
    PRINT_BASE = "print_base"  #: ``u32``: what the kernel's print sites are numbered from
    #: the tensor map of ``bindings[index]`` as the matrix ``parts`` describe
    TENSOR_MAP = "tensor_map"


@dataclass(frozen=True, slots=True)
class KernelArg:
    """One argument of a generated kernel.

    :param name: the C parameter name.
    :param kind: what the host passes.
    :param ctype: the C type as declared.
    :param dtype: for BUFFER the element layout the kernel reads (``uint16`` bits for bf16); for
        the others the exact scalar type to pack.
    :param index: position in the launch's bindings, scalars or metadata (by ``kind``); for
        SHARED, the bytes its static shared arrays take before the dynamic ones
        (:meth:`~ruda_core.codegen.Dialect.buffered_shared_nbytes`).
    :param parts: for SHARED, the ``(scalar index, element bytes)`` of each dynamic shared array
        carved out of it, in order: each takes its size scalar times its element bytes, rounded
        up to :data:`~ruda_core.ir.DYNAMIC_SHARED_ALIGN`; for TENSOR_MAP, ``((rows, cols),
        (box_rows, box_cols))``: the scalar indices of the matrix's rows and columns and the
        box's size (``dtype`` is then the element's host dtype).
    """

    name: str
    kind: ArgKind
    ctype: str
    dtype: np.dtype
    index: int
    parts: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Signature:
    """A kernel's arguments, the prologue statements that finish them (offsets applied, raw
    scalars converted) and the C name of each metadata slot, keyed ``(what, param, axis)``."""

    args: tuple[KernelArg, ...]
    prologue: tuple[str, ...]
    metadata: dict[tuple[str, str, int], str] = field(default_factory=dict)
    #: the C name of each tensor map, keyed by :func:`tensor_map_key` of its copies
    tensor_maps: dict[tuple[str, str, str, int, int], str] = field(default_factory=dict)


def tensor_map_key(ins: Instr) -> tuple[str, str, str, int, int]:
    """What one tensor map of a ``TENSOR_COPY`` describes: its array's, rows' and columns'
    parameter names and its box."""
    src, rows, cols = (cast(Param, ins.args[k]).name for k in (2, 3, 4))
    box_rows, box_cols = (int(cast(Const, ins.args[k]).value) for k in (7, 8))
    return src, rows, cols, box_rows, box_cols


def build_signature(
    definition: KernelDefinition,
    dialect: Dialect,
    names: dict[str, str],
    claim: Callable[[str], str],
) -> Signature:
    """The arguments of ``definition``. ``names`` maps parameter names to their C names;
    ``claim`` hands out fresh identifiers for derived names (offsets, metadata, raw scalars)."""
    args: list[KernelArg] = []
    prologue: list[str] = []
    for k, p in enumerate(definition.array_params):
        name = names[p.name]
        storage = dialect.storage_type(p.elem, MemSpace.GLOBAL)
        pointer = f"{dialect.qualified(MemSpace.GLOBAL, storage, const=p.read_only)}*"
        restrict = f" {dialect.restrict}" if p.read_only and dialect.restrict else ""
        args.append(
            KernelArg(name, ArgKind.BUFFER, pointer + restrict, dialect.host_dtype(p.elem), k)
        )
        if dialect.offset_type is not None:
            offset = claim(f"{name.rstrip('_')}_offset")
            args.append(
                KernelArg(offset, ArgKind.OFFSET, dialect.offset_type, np.dtype(np.uint64), k)
            )
            byte = dialect.qualified(MemSpace.GLOBAL, dialect.type_name(Elem.U8), const=p.read_only)
            prologue.append(f"{name} = ({pointer})(({byte}*){name} + {offset});")
    for k, p in enumerate(definition.scalar_params):
        name = names[p.name]
        ctype, dtype = dialect.scalar_arg(p.elem)
        value_type = dialect.type_name(p.elem)
        if ctype == value_type:
            args.append(KernelArg(name, ArgKind.SCALAR, ctype, dtype, k))
        else:
            raw = claim(f"{name.rstrip('_')}_arg")
            args.append(KernelArg(raw, ArgKind.SCALAR, ctype, dtype, k))
            prologue.append(f"const {value_type} {name} = {dialect.arg_to_value(p.elem, raw)};")
    u32 = dialect.type_name(Elem.U32)
    metadata: dict[tuple[str, str, int], str] = {}
    for k, (what, p, axis) in enumerate(definition.metadata_layout()):
        suffix = "len" if what == "len" else f"{what}{axis}"
        meta = claim(f"{names[p.name].rstrip('_')}_{suffix}")
        metadata[(what, p.name, axis)] = meta
        args.append(KernelArg(meta, ArgKind.METADATA, u32, np.dtype(np.uint32), k))
    dynamic = definition.dynamic_shared
    buffered = dialect.buffered_shared_nbytes(definition)
    if (dynamic or buffered) and dialect.dynamic_shared == "argument":
        element = dialect.shared_argument_ctype or dialect.storage_type(Elem.U8, MemSpace.SHARED)
        pointer = f"{dialect.qualified(MemSpace.SHARED, element)}*"
        parts = tuple((k, s.elem.nbytes) for s, k in dynamic)
        buffer = claim("dynamic_shared")
        uint8 = np.dtype(np.uint8)
        args.append(KernelArg(buffer, ArgKind.SHARED, pointer, uint8, buffered, parts))
    if dialect.print_records and print_sites(definition):
        pointer = f"{dialect.qualified(MemSpace.GLOBAL, u32)}*"
        records, base = claim("print_records"), claim("print_base")
        args.append(KernelArg(records, ArgKind.PRINT, pointer, np.dtype(np.uint32), 0))
        args.append(KernelArg(base, ArgKind.PRINT_BASE, u32, np.dtype(np.uint32), 0))
    tensor_maps: dict[tuple[str, str, str, int, int], str] = {}
    arrays = {p.name: k for k, p in enumerate(definition.array_params)}
    scalars = {p.name: k for k, p in enumerate(definition.scalar_params)}
    for ins in walk(definition.body):
        if not isinstance(ins, Instr) or ins.op is not Op.TENSOR_COPY:
            continue
        key = tensor_map_key(ins)
        if key in tensor_maps:
            continue
        if dialect.tensor_map_type is None:
            raise UnsupportedFeature(f"{dialect.name} has no tensor copies (tensor maps)")
        src, rows, cols, box_rows, box_cols = key
        tensor_maps[key] = name = claim(f"{names[src].rstrip('_')}_map")
        dtype = dialect.host_dtype(cast(Param, ins.args[2]).elem)
        parts = ((scalars[rows], scalars[cols]), (box_rows, box_cols))
        args.append(
            KernelArg(name, ArgKind.TENSOR_MAP, dialect.tensor_map_type, dtype, arrays[src], parts)
        )
    return Signature(tuple(args), tuple(prologue), metadata, tensor_maps)


ArgReader = Callable[[Sequence[object], Sequence[object], Sequence[int]], tuple[object, ...]]


def arg_values(
    args: Sequence[KernelArg],
    buffer_expr: str,
    scalar_dtypes: Sequence[np.dtype] = (),
    shared: Callable[[int], object] | None = None,
    print_exprs: tuple[str, str] = ("None", "0"),
    tensor_map: Callable[[KernelArg], Callable[[object, int, int], object]] | None = None,
) -> tuple[str, dict[str, object]]:
    """The kernel's argument values, in order, as Python source: comma-separated expressions
    over ``b`` (the bindings), ``s`` (the scalars) and ``m`` (the metadata), with the names they
    use. For a backend that generates its launch function with the values inline;
    :func:`make_arg_reader` wraps them in a function of their own.

    ``buffer_expr`` is the backend's expression for a BUFFER argument, with ``{b}`` standing for
    the binding (e.g. ``"{b}.resource + {b}.offset_bytes"`` for a raw pointer).
    OFFSET arguments are the binding's ``offset_bytes``. When ``scalar_dtypes`` (the scalar
    parameters' own dtypes) is given, a SCALAR whose argument dtype differs is converted to the
    argument's dtype (bool passed as ``uchar``, f16 passed as ``float``), or reinterpreted where
    the argument holds a float's bits in an integer of its size (bf16 passed as ``ushort``).
    ``shared`` makes the value of a SHARED argument from its size in bytes (at least 1): its
    static bytes (``index``) and its ``parts``, each rounded up to
    :data:`~ruda_core.ir.DYNAMIC_SHARED_ALIGN` as the kernel carves them (once, where it has
    static bytes alone). ``print_exprs`` are
    the backend's expressions for the PRINT and PRINT_BASE arguments. ``tensor_map`` makes, for
    a TENSOR_MAP argument, the function of (binding, rows, cols) that gives its value.
    """
    env: dict[str, object] = {}
    parts = []
    for a in args:
        if a.kind is ArgKind.BUFFER:
            parts.append(buffer_expr.format(b=f"b[{a.index}]"))
        elif a.kind is ArgKind.OFFSET:
            parts.append(f"b[{a.index}].offset_bytes")
        elif a.kind is ArgKind.SCALAR:
            own = scalar_dtypes[a.index] if scalar_dtypes else a.dtype
            if own == a.dtype:
                parts.append(f"s[{a.index}]")
            elif own.itemsize == a.dtype.itemsize and own.kind != "b":  # a float's bits
                env[f"S{a.index}"], env[f"T{a.index}"] = own.type, a.dtype.type
                parts.append(f"S{a.index}(s[{a.index}]).view(T{a.index})")
            else:
                env[f"T{a.index}"] = a.dtype.type
                parts.append(f"T{a.index}(s[{a.index}])")
        elif a.kind is ArgKind.SHARED:
            if shared is None:
                raise ValueError(f"argument {a.name} is shared memory, and no maker was given")
            if not a.parts:  # static arrays alone: one value, made once (a launch of the same
                # values as the last sets no argument again)
                env[a.name] = shared(max(a.index, 1))
                parts.append(a.name)
                continue
            env["L"] = shared
            align = DYNAMIC_SHARED_ALIGN
            sized = [f"(int(s[{k}]) * {n} + {align - 1}) // {align} * {align}" for k, n in a.parts]
            nbytes = " + ".join([str(a.index), *sized])
            parts.append(f"L(max({nbytes}, 1))")
        elif a.kind is ArgKind.PRINT:
            parts.append(print_exprs[0])
        elif a.kind is ArgKind.PRINT_BASE:
            parts.append(print_exprs[1])
        elif a.kind is ArgKind.TENSOR_MAP:
            if tensor_map is None:
                raise ValueError(f"argument {a.name} is a tensor map, and no maker was given")
            env[a.name] = tensor_map(a)
            (rows, cols), _ = a.parts
            parts.append(f"{a.name}(b[{a.index}], s[{rows}], s[{cols}])")
        else:
            parts.append(f"m[{a.index}]")
    return ", ".join(parts), env


def make_arg_reader(
    args: Sequence[KernelArg],
    buffer_expr: str,
    scalar_dtypes: Sequence[np.dtype] = (),
    shared: Callable[[int], object] | None = None,
    print_exprs: tuple[str, str] = ("None", "0"),
    tensor_map: Callable[[KernelArg], Callable[[object, int, int], object]] | None = None,
) -> ArgReader:
    """A function ``(bindings, scalars, metadata) -> tuple`` of the kernel's argument values, in
    order (:func:`arg_values`), generated once per kernel so a launch does no per-argument
    dispatch."""
    values, env = arg_values(args, buffer_expr, scalar_dtypes, shared, print_exprs, tensor_map)
    source = f"def read(b, s, m):\n    return ({values}{',' if values else ''})\n"
    exec(compile(source, "<ruda kernel arguments>", "exec"), env)
    return env["read"]  # type: ignore[return-value]  # the function defined above

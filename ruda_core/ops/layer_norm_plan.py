"""Launch plans of the portable LayerNorm: everything about a call that depends only on its
shapes, element types, options and device, decided once and replayed.

A plan holds the kernel tasks, their counts, cube shapes, scalars and metadata (the launch
ABI of :mod:`ruda_core.ir.kernel`), and the layout of the one allocation that holds a call's
results and scratch. :func:`forward_plan` and :func:`backward_plan` build them from operands
:mod:`.layer_norm` has already checked; replaying one (``run``) allocates that one buffer,
views the results in it and enqueues the launches with the operands' bindings, each through
the client's ``launcher`` made at the plan's first launch. Nothing here checks operands or is
cached: :mod:`.layer_norm` keys and keeps the plans. :class:`Launch`, :class:`Part` and
:func:`allocation` are also what a runtime's native LayerNorm plans with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..ir import Elem, ExecutionMode
from ..lang.kernel import Kernel
from ..runtime import ComputeClient, LaunchConfigError, RudaCount, RudaDim
from ..runtime.client import ClientLaunch
from ..runtime.compiler import KernelTask, RudaTask
from ..runtime.layer_norm_args import TensorBuffer, part_views
from ..runtime.layout import contiguous_strides
from ..runtime.memory import Binding
from .geometry import HeldGeometry, accumulator, held_geometry, line_width, row_geometry
from .layer_norm_kernels import (
    FINISH_X,
    FINISH_Y,
    layer_norm_forward,
    layer_norm_forward_held,
    layer_norm_grad_affine_finish,
    layer_norm_grad_affine_partials,
    layer_norm_grad_input,
    layer_norm_grad_input_held,
)

__all__ = [
    "CHUNK_ROWS",
    "MAX_CHUNKS",
    "BackwardPlan",
    "ForwardPlan",
    "Launch",
    "Part",
    "allocation",
    "backward_plan",
    "forward_plan",
]

#: Rows each first-pass unit of the weight and bias gradients sums, at least.
CHUNK_ROWS = 32
#: The most row chunks the weight and bias gradients are split into (256: twice the units of
#: 128 for the first pass, 8192x1024 f32 on the H200 in 28.8 µs instead of 42.2).
MAX_CHUNKS = 256
#: Units per cube of the per-feature kernels.
_FEATURE_BLOCK = 256
#: Alignment of each part of a call's one allocation, in bytes.
_PART_ALIGN = 256


@dataclass(frozen=True, slots=True)
class Launch:
    """One launch of a plan, all but its bindings, and its client's launcher for the last
    execution mode it ran in (remade when the mode changes: the plan belongs to one client)."""

    task: RudaTask
    count: RudaCount
    dim: RudaDim
    scalars: tuple[np.generic, ...]
    metadata: tuple[int, ...]
    #: ``[(mode, launcher)]`` of the last launch, replaced as one tuple (thread-safe; an
    #: enum's hash is a Python call, so no dict by mode)
    last: list[tuple[ExecutionMode, ClientLaunch] | None] = field(
        default_factory=lambda: [None], compare=False
    )

    def enqueue(self, client: ComputeClient, mode: ExecutionMode, bindings: list[Binding]) -> None:
        """``client.launch_unchecked`` of this launch in ``mode`` (what
        ``BoundsCheckMode.current()`` selects), with the same checks raised at once."""
        pair = self.last[0]
        if pair is None or pair[0] is not mode:
            pair = self.last[0] = (mode, client.launcher(self.task, mode))
        pair[1](self.count, self.dim, bindings, self.scalars, self.metadata)


class Part(NamedTuple):
    """A tensor at ``start`` of a call's allocation: a
    :data:`~ruda_core.runtime.layer_norm_args.Spec`, which unpacks in one step."""

    start: int
    nbytes: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem

    @property
    def end(self) -> int:
        return self.start + self.nbytes


def buffers(
    client: ComputeClient, nbytes: int, parts: tuple[Part, ...], scratch: int = 0
) -> tuple[list[TensorBuffer], list[Binding]]:
    """One allocation of a call's results and scratch, laid out as ``parts``: the results as
    views, and the bindings of every part, the last ``scratch`` of which have no handles of
    their own (used only by the call's launches; the results' handles keep the allocation
    alive)."""
    return part_views(client.empty(nbytes), parts, len(parts) - scratch)


def allocation(*specs: tuple[tuple[int, ...], Elem]) -> tuple[int, tuple[Part, ...]]:
    """The parts of one allocation of contiguous tensors (shape, element type), each at a
    multiple of 256 bytes (the widest vector's alignment and more), and its total size."""
    parts = []
    start = 0
    for shape, elem in specs:
        part = Part(start, math.prod(shape) * elem.nbytes, shape, contiguous_strides(shape), elem)
        parts.append(part)
        start += -(-part.nbytes // _PART_ALIGN) * _PART_ALIGN
    return start, tuple(parts)


def _launch(
    kernel: Kernel,
    count: RudaCount,
    dim: RudaDim,
    lengths: tuple[int, ...],
    scalars: tuple[tuple[float, Elem], ...],
    **spec: object,
) -> Launch:
    """The launch of ``kernel``'s specialisation ``spec`` with array ``lengths`` (the launch
    ABI's metadata) and ``scalars`` converted to their parameters' types.

    :raises LaunchConfigError: for a float scalar its type cannot hold.
    """
    task = KernelTask(kernel.definition(**spec))
    values = []
    for value, elem in scalars:
        if elem.is_float and abs(value) > float(np.finfo(elem.numpy).max):
            raise LaunchConfigError(f"{task.name}: {value!r} overflows {elem}")
        values.append(elem.numpy.type(value))
    return Launch(task, count, dim, tuple(values), lengths)


@dataclass(frozen=True, slots=True)
class ForwardPlan:
    """The forward of one (shape, element type, bias or not, epsilon, alignment) on a device."""

    nbytes: int
    parts: tuple[Part, ...]
    launch: Launch | None

    def run(
        self,
        client: ComputeClient,
        mode: ExecutionMode,
        x: Binding,
        w: Binding,
        b: Binding | None = None,
    ) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer]:
        """Allocate the results and enqueue the launch in ``mode`` with the bindings of these
        operands' handles."""
        (out, mean, rstd), bound = buffers(client, self.nbytes, self.parts)
        if self.launch is not None:
            self.launch.enqueue(client, mode, [x, w, w if b is None else b, *bound])
        return out, mean, rstd


@dataclass(frozen=True, slots=True)
class BackwardPlan:
    """The backward of one (shape, element type, alignment) on a device."""

    nbytes: int
    parts: tuple[Part, ...]
    grad_input: Launch | None
    partials: Launch
    finish: Launch

    def run(
        self,
        client: ComputeClient,
        mode: ExecutionMode,
        x: Binding,
        w: Binding,
        g: Binding,
        mean: Binding,
        rstd: Binding,
    ) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer]:
        """Allocate the results and scratch and enqueue the launches in ``mode`` with the
        bindings of these operands' handles."""
        (grad_input, grad_weight, grad_bias), (gi, gw, gb, part_w, part_b) = buffers(
            client, self.nbytes, self.parts, scratch=2
        )
        if self.grad_input is not None:
            self.grad_input.enqueue(client, mode, [x, w, g, mean, rstd, gi])
        self.partials.enqueue(client, mode, [x, g, mean, rstd, part_w, part_b])
        self.finish.enqueue(client, mode, [part_w, part_b, gw, gb])
        return grad_input, grad_weight, grad_bias


def _max_cubes(client: ComputeClient) -> int:
    """The most cubes a row kernel launches (the device's limit); groups stride beyond it."""
    return client.properties().max_ruda_count[0]


def _row_launches(
    client: ComputeClient, rows: int, features: int, elem: Elem, offset_bytes: int
) -> tuple[dict[str, object], RudaCount, RudaDim, HeldGeometry | None]:
    """The specialisation, count and cube of the row kernels: held where the row fits
    registers, else strided."""
    acc = accumulator(elem)
    line = line_width(features, elem.nbytes, offset_bytes)
    held = held_geometry(client, features, line)
    max_cubes = _max_cubes(client)
    if held is None:
        geometry = row_geometry(client, features)
        spec: dict[str, object] = {"Float": elem, "Acc": acc, "PLANES": geometry.planes}
        return spec, RudaCount(min(rows, max_cubes)), RudaDim(geometry.block), None
    spec = {
        "Float": elem,
        "Acc": acc,
        "N": held.line,
        "ITEMS": held.items,
        "PLANE_ROWS": held.plane_rows,
        "PLANES": held.planes,
    }
    cubes = min(-(-rows // held.rows_per_cube), max_cubes)
    return spec, RudaCount(cubes), RudaDim(held.block), held


def forward_plan(
    client: ComputeClient,
    shape: tuple[int, int],
    elem: Elem,
    has_bias: bool,
    epsilon: float,
    offset_bytes: int,
) -> ForwardPlan:
    """The plan of :func:`.layer_norm.layer_norm` for checked operands; ``offset_bytes`` is
    the bitwise or of the operands' byte offsets (it bounds the line width)."""
    rows, features = shape
    acc = accumulator(elem)
    nbytes, parts = allocation((shape, elem), ((rows,), acc), ((rows,), acc))
    launch = None
    if rows > 0:
        spec, count, dim, held = _row_launches(client, rows, features, elem, offset_bytes)
        kernel = layer_norm_forward if held is None else layer_norm_forward_held
        size = rows * features
        launch = _launch(
            kernel,
            count,
            dim,
            (size, features, features, size, rows, rows),
            ((rows, Elem.U32), (features, Elem.U32), (epsilon, acc), (has_bias, Elem.BOOL)),
            **spec,
        )
    return ForwardPlan(nbytes, parts, launch)


def backward_plan(
    client: ComputeClient, shape: tuple[int, int], elem: Elem, offset_bytes: int
) -> BackwardPlan:
    """The plan of :func:`.layer_norm.layer_norm_backward` for checked operands.

    The weight and bias gradients are chunked by a function of ``rows`` only (on any device
    that allows 256 cubes along y), so every device adds them in the same order."""
    rows, features = shape
    acc = accumulator(elem)
    props = client.properties()
    chunks = min(max(1, -(-rows // CHUNK_ROWS)), MAX_CHUNKS, props.max_ruda_count[1])
    rows_per_chunk = max(1, -(-rows // chunks))
    chunks = max(1, -(-rows // rows_per_chunk))
    nbytes, parts = allocation(
        (shape, elem),
        ((features,), elem),
        ((features,), elem),
        ((chunks, features), acc),
        ((chunks, features), acc),
    )
    size = rows * features
    grad_input = None
    line = line_width(features, elem.nbytes, offset_bytes)
    if rows > 0:
        spec, count, dim, held = _row_launches(client, rows, features, elem, offset_bytes)
        kernel = layer_norm_grad_input if held is None else layer_norm_grad_input_held
        grad_input = _launch(
            kernel,
            count,
            dim,
            (size, features, size, rows, rows, size),
            ((rows, Elem.U32), (features, Elem.U32)),
            **spec,
        )
    block = min(_FEATURE_BLOCK, props.max_units_per_ruda, props.max_ruda_dim[0])
    partial_size = chunks * features
    partials = _launch(
        layer_norm_grad_affine_partials,
        RudaCount(-(-features // line // block), chunks),
        RudaDim(block),
        (size, size, rows, rows, partial_size, partial_size),
        ((rows, Elem.U32), (features, Elem.U32), (rows_per_chunk, Elem.U32)),
        Float=elem,
        Acc=acc,
        N=line,
    )
    finish = _launch(
        layer_norm_grad_affine_finish,
        RudaCount(-(-features // FINISH_X)),
        RudaDim(FINISH_X, FINISH_Y),
        (partial_size, partial_size, features, features),
        ((features, Elem.U32), (chunks, Elem.U32)),
        Float=elem,
        Acc=acc,
    )
    return BackwardPlan(nbytes, parts, grad_input, partials, finish)

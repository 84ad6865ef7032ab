"""The CUDA runtime's native LayerNorm: :func:`layer_norm` and :func:`layer_norm_backward`, the
bodies of ``CudaRuntime.layer_norm`` / ``layer_norm_backward``, and their replays
(:func:`forward_replay`, :func:`backward_replay`). The module is a
:class:`~ruda_core.ops.layer_norm.NativeLayerNorm`, which the ``cuda`` plugin registers as the
runtime's ``"layer_norm"``.

They take operands already checked by :mod:`ruda_core.ops.layer_norm` and keep its contract
(shapes, element types, f32 ``mean``/``rstd``, deterministic gradients). f32, f16 and bf16 rows
that a :class:`~.layer_norm_plan.RowClass` covers run the kernels of ``layer_norm.cu``,
enqueued on the client's stream in Checked mode (the source is trusted: every mode runs the
same code); f64, and rows too wide to hold in registers, run the portable kernels
(``portable_layer_norm``).

The backward computes the input gradient with one row of f32 weight and bias partial sums per
block, then reduces those rows in a fixed order: in a second launch or, where they are few
(:func:`~.layer_norm_plan.fuses`), in the last block of the same launch to finish, found by a
ticket counter. That one launch keeps its partial sums and counter in a scratch of the plan's
per server stream (zeroed when made; each launch sets the counter back to 0, and launches on
one stream do not overlap), so its call allocates the results alone. No capture records it
(a capture refuses the call's allocation), so it never runs on a stream other than the one
its scratch was made for. Both forms add the same values in the same order, and the number
of blocks depends only on ``rows``, the row class and the device's multiprocessor count, so
the same inputs on the same device give the same bits. Returns at once; faults surface at the
next sync or read, as for any launch. Imports no driver.

Cost of a call: as the portable path does, the row class, grid, scalars and the layout of the
one allocation holding a call's results (and the backward's partial sums) are planned once per
(client, shape, element type, bias or not, epsilon, operand alignment modulo 16 bytes) and
kept (:func:`forward_plan`, :func:`backward_plan`); a repeated call allocates once and
enqueues the kept launches through the client's launchers: one launch per call in each
direction for small shapes, whose host cost is the call's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np

from ruda_core.ir import Elem, ExecutionMode
from ruda_core.ops import portable_layer_norm, portable_layer_norm_backward
from ruda_core.ops.layer_norm_plan import ForwardPlan, Launch, Part, allocation, buffers
from ruda_core.runtime import Binding, ComputeClient, Handle, RudaCount, RudaDim
from ruda_core.runtime.layer_norm_args import TensorBuffer

from .layer_norm_plan import (
    VECTOR_NBYTES,
    backward_blocks,
    backward_class,
    forward_class,
    fuses,
    vector_width,
)
from .layer_norm_tasks import (
    ELEMS,
    FINISH_DIM,
    backward_task,
    finish_task,
    forward_task,
    fused_backward_task,
    scratch_nbytes,
)

__all__ = [
    "BackwardPlan",
    "backward_plan",
    "backward_replay",
    "forward_plan",
    "forward_replay",
    "layer_norm",
    "layer_norm_backward",
]

Outputs = tuple[TensorBuffer, TensorBuffer, TensorBuffer]
Key = tuple[object, ...]
_CHECKED = ExecutionMode.CHECKED
#: The most plans kept per direction; a full table is emptied (a plan is cheap to rebuild).
_MAX_PLANS = 256
P = TypeVar("P", "ForwardPlan", "BackwardPlan")


@dataclass(frozen=True, slots=True)
class BackwardPlan:
    """The native backward of one (shape, element type, alignment): the two-launch form, whose
    call allocates its results and partial sums as ``parts``, and, where
    :func:`~.layer_norm_plan.fuses` allows it, the one-launch form, whose call allocates its
    results alone (``fused_parts``, the first three parts)."""

    nbytes: int
    parts: tuple[Part, ...]
    grads: Launch | None
    finish: Launch
    fused: Launch | None = None
    #: a one-launch call's allocation: its three results
    fused_nbytes: int = 0
    fused_parts: tuple[Part, ...] = ()
    scratch_nbytes: int = 0
    #: the fused launch's scratch per server stream (stream value modulo the server's
    #: ``max_streams``: values that share a CUDA stream share a scratch, and threads that come
    #: and go add none), made at its first use there
    scratches: dict[int, Handle] = field(default_factory=dict, compare=False)

    def run(
        self,
        client: ComputeClient,
        x: Binding,
        w: Binding,
        g: Binding,
        mean: Binding,
        rstd: Binding,
    ) -> Outputs:
        """Allocate the gradients (and the partial sums of two launches) and enqueue the
        launches with the bindings of these operands' handles."""
        fused = self.fused
        if fused is not None:
            (grad_input, grad_weight, grad_bias), bound = buffers(
                client, self.fused_nbytes, self.fused_parts
            )
            queue = client.execution_stream().value % client.server.streams.size
            scratch = self.scratches.get(queue)
            if scratch is None:
                scratch = self._new_scratch(client, queue)
            fused.enqueue(client, _CHECKED, [x, w, g, mean, rstd, *bound, scratch.binding()])
            return grad_input, grad_weight, grad_bias
        (grad_input, grad_weight, grad_bias), (gi, gw, gb, part_w, part_b) = buffers(
            client, self.nbytes, self.parts, scratch=2
        )
        if self.grads is not None:
            self.grads.enqueue(client, _CHECKED, [x, w, g, mean, rstd, gi, part_w, part_b])
        finish = [part_w, part_b, gw, gb]
        self.finish.enqueue(client, _CHECKED, finish)
        return grad_input, grad_weight, grad_bias

    def _new_scratch(self, client: ComputeClient, queue: int) -> Handle:
        """The fused launch's scratch for the server's stream ``queue``, zeroed (two threads of
        one stream may both make one: either serves)."""
        zeros = np.zeros(self.scratch_nbytes, np.uint8)
        scratch = self.scratches[queue] = client.create_from_slice(zeros)
        return scratch


#: Kept plans by (client, shape, element type, [bias or not, epsilon,] alignment); None: the
#: key's calls run the portable kernels.
_forward_plans: dict[Key, ForwardPlan | None] = {}
_backward_plans: dict[Key, BackwardPlan | None] = {}


def layer_norm(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    bias: TensorBuffer | None,
    epsilon: float,
) -> Outputs:
    """``(output, mean, rstd)`` of checked operands (see the module docstring)."""
    plan = _forward_plan_of(client, x, weight, bias, epsilon)
    if plan is None:
        return portable_layer_norm(client, x, weight, bias, epsilon)
    b = None if bias is None else bias.handle.binding()
    return plan.run(client, _CHECKED, x.handle.binding(), weight.handle.binding(), b)


def forward_replay(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    bias: TensorBuffer | None,
    epsilon: float,
) -> Callable[..., Outputs] | None:
    """:func:`layer_norm` again for operands like these (``NativeLayerNorm.forward_replay``):
    ``run(x, weight[, bias])`` of their bindings; None where the portable kernels run."""
    plan = _forward_plan_of(client, x, weight, bias, epsilon)
    return None if plan is None else functools.partial(plan.run, client, _CHECKED)


def _forward_plan_of(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    bias: TensorBuffer | None,
    epsilon: float,
) -> ForwardPlan | None:
    """The kept forward plan of these operands' key, made at its first call."""
    operands = (x, weight) if bias is None else (x, weight, bias)
    alignment = _alignment(*(buf.handle.binding() for buf in operands))
    key = (client, x.shape, x.elem, bias is None, epsilon, alignment)
    plan = _forward_plans.get(key)
    if plan is None and key not in _forward_plans:
        rows, features = x.shape
        plan = forward_plan((rows, features), x.elem, bias is not None, epsilon, alignment)
        _keep(_forward_plans, key, plan)
    return plan


def layer_norm_backward(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    grad: TensorBuffer,
    mean: TensorBuffer,
    rstd: TensorBuffer,
) -> Outputs:
    """``(grad_input, grad_weight, grad_bias)`` of checked operands (see the module
    docstring)."""
    plan = _backward_plan_of(client, x, weight, grad)
    if plan is None:
        return portable_layer_norm_backward(client, x, weight, grad, mean, rstd)
    return plan.run(client, *(buf.handle.binding() for buf in (x, weight, grad, mean, rstd)))


def backward_replay(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    grad: TensorBuffer,
    mean: TensorBuffer,
    rstd: TensorBuffer,
) -> Callable[..., Outputs] | None:
    """:func:`layer_norm_backward` again for operands like these
    (``NativeLayerNorm.backward_replay``): ``run(x, weight, grad, mean, rstd)`` of their
    bindings; None where the portable kernels run."""
    plan = _backward_plan_of(client, x, weight, grad)
    return None if plan is None else functools.partial(plan.run, client)


def _backward_plan_of(
    client: ComputeClient, x: TensorBuffer, weight: TensorBuffer, grad: TensorBuffer
) -> BackwardPlan | None:
    """The kept backward plan of these operands' key, made at its first call."""
    alignment = _alignment(*(buf.handle.binding() for buf in (x, weight, grad)))
    key = (client, x.shape, x.elem, alignment)
    plan = _backward_plans.get(key)
    if plan is None and key not in _backward_plans:
        rows, features = x.shape
        units = client.properties().compute_units
        plan = backward_plan((rows, features), x.elem, alignment, units)
        _keep(_backward_plans, key, plan)
    return plan


def forward_plan(
    shape: tuple[int, int], elem: Elem, has_bias: bool, epsilon: float, alignment: int
) -> ForwardPlan | None:
    """The native forward's plan for checked operands whose addresses are ``alignment`` modulo
    16 bytes (their bitwise or; the results are 256-byte aligned parts of one allocation), or
    None where the portable kernels run (f64, rows too wide for registers)."""
    rows, features = shape
    if elem not in ELEMS:
        return None
    row_class = forward_class(features, vector_width(features, elem.nbytes, [alignment]))
    if row_class is None:
        return None
    nbytes, parts = allocation((shape, elem), ((rows,), Elem.F32), ((rows,), Elem.F32))
    launch = None
    if rows:
        launch = Launch(
            forward_task(elem, row_class),
            RudaCount(-(-rows // row_class.rows_per_block)),
            RudaDim(row_class.block_threads),
            (np.uint32(rows), np.uint32(features), np.float32(epsilon), np.int32(has_bias)),
            (),
        )
    return ForwardPlan(nbytes, parts, launch)


def backward_plan(
    shape: tuple[int, int], elem: Elem, alignment: int, compute_units: int
) -> BackwardPlan | None:
    """The native backward's plan (as :func:`forward_plan`) on a device of ``compute_units``
    multiprocessors."""
    rows, features = shape
    if elem not in ELEMS:
        return None
    row_class = backward_class(features, vector_width(features, elem.nbytes, [alignment]))
    if row_class is None:
        return None
    blocks = backward_blocks(rows, row_class, compute_units)
    # partial rows are written with the row's vectors: each part is 256-byte aligned
    nbytes, parts = allocation(
        (shape, elem),
        ((features,), elem),
        ((features,), elem),
        ((blocks, features), Elem.F32),
        ((blocks, features), Elem.F32),
    )
    grads = None
    if rows:
        grads = Launch(
            backward_task(elem, row_class),
            RudaCount(blocks),
            RudaDim(row_class.block_threads),
            (np.uint32(rows), np.uint32(features)),
            (),
        )
    finish = Launch(
        finish_task(elem),
        RudaCount(-(-features // FINISH_DIM[0])),
        RudaDim(*FINISH_DIM),
        (np.uint32(features), np.uint32(blocks if rows else 0)),
        (),
    )
    if grads is None or not fuses(blocks, features, row_class):
        return BackwardPlan(nbytes, parts, grads, finish)
    fused = Launch(fused_backward_task(elem, row_class), grads.count, grads.dim, grads.scalars, ())
    fused_nbytes = parts[3].start  # the results' parts, each 256-byte aligned, come first
    scratch = scratch_nbytes(blocks, features)
    return BackwardPlan(nbytes, parts, grads, finish, fused, fused_nbytes, parts[:3], scratch)


def _alignment(*bindings: Binding) -> int:
    """The bitwise or of the operands' device addresses modulo :data:`VECTOR_NBYTES` (a CUDA
    page's resource is its pointer): what bounds the vector width."""
    bits = 0
    for binding in bindings:
        bits |= cast(int, binding.resource) + binding.offset_bytes
    return bits & (VECTOR_NBYTES - 1)


def _keep(plans: dict[Key, P | None], key: Key, plan: P | None) -> None:
    if len(plans) >= _MAX_PLANS:
        plans.clear()
    plans[key] = plan

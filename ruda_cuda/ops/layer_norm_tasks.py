"""The native LayerNorm kernels as :class:`~.source_task.CudaSourceTask` values: one per element
type and :class:`~.layer_norm_plan.RowClass` (forward, backward, fused backward) or per element
type (the weight and bias finish). Each is made once per process and built once per device by
the server's kernel cache. Pure: imports no driver, launches nothing.
"""

from __future__ import annotations

import functools
from importlib import resources

from ruda_core.ir import Elem, Param, ParamKind

from .layer_norm_plan import RowClass
from .source_task import CudaSourceTask

__all__ = [
    "ELEMS",
    "FINISH_DIM",
    "backward_task",
    "finish_task",
    "forward_task",
    "fused_backward_task",
    "library",
    "scratch_nbytes",
]

#: Element types the native kernels take (f64 runs the portable kernels).
ELEMS = frozenset({Elem.F32, Elem.F16, Elem.BF16})
#: Threads (x: columns, y: shares of the partial rows) of a finish block: FINISH_X, FINISH_Y
#: of layer_norm.cu.
FINISH_DIM = (32, 16)
_FILE = "layer_norm.cu"
_TEMPLATE_TYPE = {Elem.F32: "float", Elem.F16: "__half", Elem.BF16: "__nv_bfloat16"}


@functools.cache
def library() -> str:
    """The CUDA C++ of ``layer_norm.cu``, the templates every entry point instantiates."""
    return resources.files(__package__).joinpath(_FILE).read_text()


def _array(index: int, name: str, elem: Elem, written: bool = False) -> Param:
    return Param(index, name, ParamKind.ARRAY, elem, read_only=not written)


def _scalar(index: int, name: str, elem: Elem) -> Param:
    return Param(index, name, ParamKind.SCALAR, elem)


def _task(name: str, template: str, params: list[Param], block_threads: int) -> CudaSourceTask:
    names = ", ".join(p.name for p in params)
    return CudaSourceTask(
        name, library(), f"ruda_ln::{template}({names})", params, block_threads, _FILE
    )


def _instance(kind: str, elem: Elem, row_class: RowClass) -> tuple[str, str]:
    c = row_class
    args = f"{c.vector}, {c.vectors_per_thread}, {c.row_warps}, {c.rows_per_block}"
    name = f"ruda_layer_norm_{kind}_{elem.value}_{c.label}"
    return name, f"{kind}<{_TEMPLATE_TYPE[elem]}, {args}>"


@functools.cache
def forward_task(elem: Elem, row_class: RowClass) -> CudaSourceTask:
    """``(x, weight, bias, out, mean, rstd; rows, features, epsilon, has_bias)``: ``bias`` is
    not read when ``has_bias`` is 0 (pass any array of ``elem``)."""
    name, template = _instance("forward", elem, row_class)
    params = [
        _array(0, "x", elem),
        _array(1, "weight", elem),
        _array(2, "bias", elem),
        _array(3, "out", elem, written=True),
        _array(4, "mean", Elem.F32, written=True),
        _array(5, "rstd", Elem.F32, written=True),
        _scalar(6, "rows", Elem.U32),
        _scalar(7, "features", Elem.U32),
        _scalar(8, "epsilon", Elem.F32),
        _scalar(9, "has_bias", Elem.I32),
    ]
    return _task(name, template, params, row_class.block_threads)


def _backward_params(elem: Elem) -> list[Param]:
    """The operands and the input gradient of both forms of the backward."""
    return [
        _array(0, "x", elem),
        _array(1, "weight", elem),
        _array(2, "grad", elem),
        _array(3, "mean", Elem.F32),
        _array(4, "rstd", Elem.F32),
        _array(5, "grad_input", elem, written=True),
    ]


@functools.cache
def backward_task(elem: Elem, row_class: RowClass) -> CudaSourceTask:
    """``(x, weight, grad, mean, rstd, grad_input, partial_weight, partial_bias; rows,
    features)``: one row of f32 partial sums per block."""
    name, template = _instance("backward", elem, row_class)
    params = [
        *_backward_params(elem),
        _array(6, "partial_weight", Elem.F32, written=True),
        _array(7, "partial_bias", Elem.F32, written=True),
        _scalar(8, "rows", Elem.U32),
        _scalar(9, "features", Elem.U32),
    ]
    return _task(name, template, params, row_class.block_threads)


@functools.cache
def fused_backward_task(elem: Elem, row_class: RowClass) -> CudaSourceTask:
    """``(x, weight, grad, mean, rstd, grad_input, grad_weight, grad_bias, scratch; rows,
    features)``: :func:`backward_task` and :func:`finish_task` in one launch, the last block to
    finish reducing the partial rows. ``scratch`` holds ``2 * blocks * features`` f32 partial
    sums and then a u32 counter that is 0 before the launch and again after it; no other
    launch may use it meanwhile (:func:`scratch_nbytes`)."""
    name, template = _instance("backward_fused", elem, row_class)
    params = [
        *_backward_params(elem),
        _array(6, "grad_weight", elem, written=True),
        _array(7, "grad_bias", elem, written=True),
        _array(8, "scratch", Elem.F32, written=True),
        _scalar(9, "rows", Elem.U32),
        _scalar(10, "features", Elem.U32),
    ]
    return _task(name, template, params, row_class.block_threads)


def scratch_nbytes(blocks: int, features: int) -> int:
    """Bytes of a fused backward's scratch: the partial rows and the counter."""
    return (2 * blocks * features + 1) * 4


@functools.cache
def finish_task(elem: Elem) -> CudaSourceTask:
    """``(partial_weight, partial_bias, grad_weight, grad_bias; features, parts)``, launched
    with :data:`FINISH_DIM` threads per block and one block per 32 features."""
    params = [
        _array(0, "partial_weight", Elem.F32),
        _array(1, "partial_bias", Elem.F32),
        _array(2, "grad_weight", elem, written=True),
        _array(3, "grad_bias", elem, written=True),
        _scalar(4, "features", Elem.U32),
        _scalar(5, "parts", Elem.U32),
    ]
    name = f"ruda_layer_norm_finish_{elem.value}"
    template = f"finish<{_TEMPLATE_TYPE[elem]}>"
    return _task(name, template, params, FINISH_DIM[0] * FINISH_DIM[1])

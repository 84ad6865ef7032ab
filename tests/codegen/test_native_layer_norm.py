"""The CUDA runtime's native LayerNorm without a GPU: every kernel it would launch compiles with
NVRTC to an sm_90 cubin with the options of ``ruda_cuda.driver.build_cubin``, and the host plan
covers each row exactly once, in vectors that divide the row and fit the operands' alignment;
the launch plans a repeated call replays hold those launches and lay out the results.

On a GPU the kernels are checked against the float64 reference by
``tests/cuda/test_native_layer_norm.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, ExecutionMode
from ruda_core.runtime import CompileOptions, UnsupportedFeature
from ruda_cpu.compiler import CpuCompiler
from ruda_cuda.compiler import CudaCompiler
from ruda_cuda.dialect import CudaTarget
from ruda_cuda.ops.layer_norm import backward_plan as native_backward_plan
from ruda_cuda.ops.layer_norm import forward_plan as native_forward_plan
from ruda_cuda.ops.layer_norm_plan import (
    RowClass,
    backward_blocks,
    backward_class,
    forward_class,
    fuses,
    vector_width,
)
from ruda_cuda.ops.layer_norm_tasks import (
    ELEMS,
    backward_task,
    finish_task,
    forward_task,
    fused_backward_task,
    scratch_nbytes,
)

from .test_compile import _nvrtc_compile

#: The benchmark's widths and widths that are not a multiple of any vector.
WIDTHS = [1, 7, 33, 1000, 1024, 4096, 4097, 16384, 16385]
SM90 = CompileOptions(plane_dim=32, target=CudaTarget(90))
#: build_cubin's options besides the architecture and include folders
BUILD_OPTIONS = ("--std=c++17", "--fmad=false")


def _classes(width: int, elem: Elem) -> list[tuple[str, RowClass | None]]:
    vector = vector_width(width, elem.nbytes, [0])
    return [("forward", forward_class(width, vector)), ("backward", backward_class(width, vector))]


def _build(task) -> None:
    compiled = task.compile(CudaCompiler(), SM90, ExecutionMode.CHECKED)
    ok, log = _nvrtc_compile(compiled.source, 90, "sm", BUILD_OPTIONS)
    assert ok, f"NVRTC rejected {task.name} for sm_90:\n{log}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("elem", sorted(ELEMS, key=str), ids=str)
def test_native_kernels_compile_for_sm90(elem: Elem, width: int) -> None:
    for direction, row_class in _classes(width, elem):
        if row_class is None:
            continue
        if direction == "forward":
            _build(forward_task(elem, row_class))
        else:
            _build(backward_task(elem, row_class))
            _build(fused_backward_task(elem, row_class))
    _build(finish_task(elem))


def test_the_benchmark_shapes_run_natively() -> None:
    """Every width of the benchmark has a native class in both directions, with 128-bit
    accesses (the wide rows one row per block, the narrow ones one row per warp: up to 1024
    columns forward, fewer backward, whose threads hold two partial sums per element)."""
    for elem in ELEMS:
        for width in (1024, 4096, 16384):
            for direction, row_class in _classes(width, elem):
                assert row_class is not None, (elem, width, direction)
                assert row_class.vector * elem.nbytes == 16, (elem, width, direction)
                narrow = 1024 if direction == "forward" else 512
                assert (row_class.row_warps == 1) == (width <= narrow), (elem, width, direction)


def test_vector_width_divides_the_row_and_fits_every_address() -> None:
    assert vector_width(4096, 4, [0, 256, 4096]) == 4
    assert vector_width(4096, 2, [0, 256]) == 8
    assert vector_width(4096, 4, [0, 8]) == 2  # one operand only 8-byte aligned
    assert vector_width(1000, 2, [0]) == 8
    assert vector_width(1002, 2, [0]) == 2
    assert vector_width(4097, 4, [0]) == 1


def _owned_columns(row_class: RowClass, width: int, thread: int) -> list[int]:
    """The columns thread ``thread`` of a row group touches, by layer_norm.cu's indexing:
    vector i = k * ROW_THREADS + t for k < VPT, if i < width / V, holds columns i * V + e."""
    c = row_class
    columns = []
    for k in range(c.vectors_per_thread):
        i = k * c.row_threads + thread
        if i < width // c.vector:
            columns.extend(i * c.vector + e for e in range(c.vector))
    return columns


@pytest.mark.parametrize("width", [*WIDTHS, 2048, 8192, 32768])
@pytest.mark.parametrize("elem", sorted(ELEMS, key=str), ids=str)
def test_a_row_group_touches_every_column_once(elem: Elem, width: int) -> None:
    for direction, row_class in _classes(width, elem):
        if row_class is None:
            assert width > 16384, (elem, width, direction)  # wider rows run portably
            continue
        assert width % row_class.vector == 0
        assert width <= row_class.capacity, (elem, width, direction)
        columns = [
            j for t in range(row_class.row_threads) for j in _owned_columns(row_class, width, t)
        ]
        assert sorted(columns) == list(range(width)), (elem, width, direction)


@pytest.mark.parametrize("rows", [0, 1, 5, 4096, 100_000])
def test_backward_blocks_visit_every_row_once(rows: int) -> None:
    """Block b's row groups g take rows b * ROWS + g, stepping by blocks * ROWS."""
    for width in (512, 4096):
        row_class = backward_class(width, 4)
        assert row_class is not None
        blocks = backward_blocks(rows, row_class, compute_units=132)
        step = blocks * row_class.rows_per_block
        assert 1 <= blocks <= max(1, -(-rows // row_class.rows_per_block))
        visited = sorted(
            r
            for b in range(blocks)
            for g in range(row_class.rows_per_block)
            for r in range(b * row_class.rows_per_block + g, rows, step)
        )
        assert visited == list(range(rows))


def test_a_source_task_is_refused_by_another_compiler() -> None:
    task = finish_task(Elem.F32)
    with pytest.raises(UnsupportedFeature, match="CUDA C\\+\\+"):
        task.compile(CpuCompiler(), CompileOptions(), ExecutionMode.CHECKED)


@pytest.mark.parametrize("shape", [(0, 64), (1, 7), (40, 1000), (8192, 4096)])
@pytest.mark.parametrize("elem", sorted(ELEMS, key=str), ids=str)
def test_the_kept_plans_cover_the_rows_and_lay_out_the_results(
    elem: Elem, shape: tuple[int, int]
) -> None:
    """A native plan (made once per key, replayed by every later call) launches one row group
    per row, packs the scalars the kernels take, and holds the results in one allocation of
    256-byte aligned parts of the results' sizes."""
    rows, features = shape
    forward = native_forward_plan(shape, elem, True, 1e-5, 0)
    assert forward is not None
    assert [(p.shape, p.elem, p.start % 256) for p in forward.parts] == [
        (shape, elem, 0),
        ((rows,), Elem.F32, 0),
        ((rows,), Elem.F32, 0),
    ]
    assert forward.nbytes >= forward.parts[-1].end
    if rows == 0:
        assert forward.launch is None
    else:
        launch = forward.launch
        assert launch is not None
        row_class = forward_class(features, vector_width(features, elem.nbytes, [0]))
        assert row_class is not None and launch.task is forward_task(elem, row_class)
        assert (
            launch.count.x * row_class.rows_per_block
            >= rows
            > (launch.count.x - 1) * (row_class.rows_per_block)
        )
        assert [type(s) for s in launch.scalars] == [np.uint32, np.uint32, np.float32, np.int32]
        assert int(launch.scalars[3]) == 1
    backward = native_backward_plan(shape, elem, 0, compute_units=132)
    assert backward is not None
    blocks = backward.parts[3].shape[0]
    assert backward.parts[3].shape == backward.parts[4].shape == (blocks, features)
    assert all(p.start % 256 == 0 for p in backward.parts)
    assert (backward.grads is None) == (rows == 0)
    assert int(backward.finish.scalars[1]) == (blocks if rows else 0)
    row_class = backward_class(features, vector_width(features, elem.nbytes, [0]))
    fused = backward.fused
    assert (fused is not None) == (rows > 0 and fuses(blocks, features, row_class))
    if fused is not None and backward.grads is not None:
        assert fused.task is fused_backward_task(elem, row_class)
        assert (fused.count, fused.dim, fused.scalars) == (
            backward.grads.count,
            backward.grads.dim,
            backward.grads.scalars,
        )
        assert backward.fused_nbytes == backward.parts[3].start >= backward.parts[2].end
        assert backward.scratch_nbytes == scratch_nbytes(blocks, features)


def test_small_backwards_fuse_and_large_ones_do_not() -> None:
    """One launch where the last block adds few partial sums per thread (the host-bound
    shapes), two where one block would add many (the bandwidth-bound ones)."""
    for elem in ELEMS:
        for shape in [(1, 7), (64, 256), (128, 256)]:
            plan = native_backward_plan(shape, elem, 0, compute_units=132)
            assert plan is not None and plan.fused is not None, (elem, shape)
        for shape in [(64, 1024), (8192, 1024), (8192, 4096)]:
            plan = native_backward_plan(shape, elem, 0, compute_units=132)
            assert plan is not None and plan.fused is None, (elem, shape)


def test_plans_follow_the_alignment_and_leave_the_rest_to_the_portable_kernels() -> None:
    misaligned = native_forward_plan((33, 4096), Elem.F32, False, 1e-5, 4)
    assert misaligned is not None and misaligned.launch is not None
    assert "_v1_" in misaligned.launch.task.name  # 4-byte aligned: one element per access
    assert native_forward_plan((4, 64), Elem.F64, True, 1e-5, 0) is None
    assert native_backward_plan((4, 64), Elem.F64, 0, 132) is None
    assert native_backward_plan((6, 16385), Elem.F32, 0, 132) is None

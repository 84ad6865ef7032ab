"""The kernel language's cooperative matrices: the IR they build, what the front end and the
verifier refuse (a CompilationError naming the file and line), and the bounds pass's tile rule."""

from __future__ import annotations

import pytest

from ruda_core.ir import (
    Const,
    Elem,
    ExecutionMode,
    Fragment,
    If,
    Instr,
    KernelDefinition,
    MatrixConfig,
    MatrixElem,
    MatrixLayout,
    MatrixRole,
    Op,
    Param,
    ParamKind,
    lower_bounds,
    verify,
)
from ruda_core.lang import Array, LocalArray, cmma, f16, f32, kernel, u32
from ruda_core.runtime import CompilationError


@kernel
def product(x: Array[f16], y: Array[f16], out: Array[f32], at: u32):
    a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
    b = cmma.Matrix(cmma.B, 16, 16, 16, f16, cmma.COL_MAJOR)
    acc = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
    cmma.fill(acc, 0.0)
    cmma.load(a, x[at:], 0, 16)
    cmma.load(b, y, at, 16)
    cmma.execute(a, b, acc, acc)
    cmma.store(out, 0, acc, 16, cmma.COL_MAJOR)


def test_matrices_build_fragments_and_cmma_instructions():
    defn = product.definition()
    assert [f.name for f in defn.fragments] == ["a", "b", "acc"]
    a, _, acc = defn.fragments
    assert (a.role, a.rows, a.cols, a.layout) == (MatrixRole.A, 16, 16, MatrixLayout.ROW_MAJOR)
    assert (acc.role, acc.elem, acc.layout) == (MatrixRole.ACCUMULATOR, Elem.F32, None)
    ops = [s.op for s in defn.body if isinstance(s, Instr) and s.op.value.startswith("cmma")]
    assert ops == [Op.CMMA_FILL, Op.CMMA_LOAD, Op.CMMA_LOAD, Op.CMMA_EXECUTE, Op.CMMA_STORE]
    store = next(s for s in defn.body if isinstance(s, Instr) and s.op is Op.CMMA_STORE)
    assert store.args[4] == Const(MatrixLayout.COL_MAJOR.value, Elem.U32)
    assert not next(p for p in defn.params if p.name == "out").read_only
    assert defn.matrix_configs == {
        MatrixConfig(MatrixElem.F16, MatrixElem.F16, MatrixElem.F32, 16, 16, 16)
    }
    assert "fragment b: b 16x16x16 f16 col_major" in defn.dump()


def test_the_bounds_pass_guards_each_tile_as_one_access():
    defn = lower_bounds(product.definition(), ExecutionMode.CHECKED)
    guards = [s for s in defn.body if isinstance(s, If)]
    loads = [g for g in guards if isinstance(g.then[0], Instr) and g.then[0].op is Op.CMMA_LOAD]
    assert len(loads) == 2
    assert all(g.orelse[0].op is Op.CMMA_FILL for g in loads)  # type: ignore[union-attr]
    verify(defn)
    report = lower_bounds(product.definition(), ExecutionMode.VALIDATE)
    assert Op.REPORT_OOB.value in report.dump()


def test_tf32_matrices_hold_f32():
    @kernel
    def tf(x: Array[f32], out: Array[f32]):
        a = cmma.Matrix(cmma.A, 16, 16, 8, cmma.tf32, cmma.ROW_MAJOR)
        b = cmma.Matrix(cmma.B, 16, 16, 8, cmma.tf32, cmma.ROW_MAJOR)
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 8, f32)
        cmma.load(a, x, 0, 8)
        cmma.load(b, x, 0, 16)
        cmma.fill(c, 0.0)
        cmma.execute(a, b, c, c)
        cmma.store(out, 0, c, 16, cmma.ROW_MAJOR)

    a = tf.definition().fragments[0]
    assert a.tf32 and a.elem is Elem.F32 and a.matrix_elem is MatrixElem.TF32


def _refused(fn, match: str) -> None:
    with pytest.raises(CompilationError, match=match) as info:
        kernel(fn).definition()
    assert info.value.file == __file__


def test_a_and_b_need_a_layout():
    def k(x: Array[f16]):
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16)
        cmma.fill(a, 0.0)

    _refused(k, r"role a needs a layout: cmma.ROW_MAJOR or cmma.COL_MAJOR")


def test_execute_checks_roles_and_shapes():
    def roles(x: Array[f16]):
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
        cmma.execute(a, a, c, c)

    _refused(roles, r"b must be of role b, 'a' is a")

    def shapes(x: Array[f16]):
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
        b = cmma.Matrix(cmma.B, 32, 8, 16, f16, cmma.ROW_MAJOR)
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
        cmma.execute(a, b, c, c)

    _refused(shapes, r"one m, n, k for all four matrices")


def test_only_accumulators_are_stored_and_cast():
    def store(x: Array[f16]):
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
        cmma.store(x, 0, a, 16, cmma.ROW_MAJOR)

    _refused(store, r"cmma.store\(\) writes accumulators; 'a' is of role a")

    def cast(x: Array[f16]):
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
        h = cmma.cast(a, f32)
        cmma.fill(h, 0.0)

    _refused(cast, r"cmma.cast\(\) converts accumulators")


def test_tiles_move_through_global_or_shared_memory_of_the_fragment_type():
    def wrong_type(x: Array[f32]):
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
        cmma.load(a, x, 0, 16)

    _refused(wrong_type, r"needs an array of f16, not 'x' of f32")

    def local(x: Array[f16]):
        mem = LocalArray(f16, 256)
        a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
        cmma.load(a, mem, 0, 16)

    _refused(local, r"moves tiles of global arrays and SharedMemory")

    def no_layout(x: Array[f32]):
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
        cmma.load(c, x, 0, 16)

    _refused(no_layout, r"the accumulator 'c' has no layout to load with")


def test_a_matrix_is_not_a_value():
    def arithmetic(x: Array[f32]):
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
        x[0] = c + 1.0

    _refused(arithmetic, r"used only by cmma operations")

    def rebound(x: Array[f32]):
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
        c = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
        cmma.fill(c, 0.0)

    _refused(rebound, r"a cmma.Matrix can be bound only to a name assigned once")


def _definition(*body: Instr, frags: tuple[Fragment, ...]) -> KernelDefinition:
    x = Param(0, "x", ParamKind.ARRAY, Elem.F16)
    return KernelDefinition("k", (x,), (), (), (), body, fragments=frags)


def test_the_verifier_checks_fragments():
    a = Fragment("a", MatrixRole.A, 16, 16, 16, Elem.F16, MatrixLayout.ROW_MAJOR)
    x = Param(0, "x", ParamKind.ARRAY, Elem.F16)
    col = Const(MatrixLayout.COL_MAJOR.value, Elem.U32)
    load = Instr(Op.CMMA_LOAD, None, (a, x, Const(0, Elem.U32), Const(16, Elem.U32), col))
    with pytest.raises(CompilationError, match="is row_major; it cannot load a col_major tile"):
        verify(_definition(load, frags=(a,)))
    with pytest.raises(CompilationError, match="fragment 'a' is not declared"):
        verify(_definition(Instr(Op.CMMA_FILL, None, (a, Const(0.0, Elem.F16))), frags=()))
    bad = Fragment("t", MatrixRole.ACCUMULATOR, 16, 16, 8, Elem.F32, None, tf32=True)
    with pytest.raises(CompilationError, match="only an A or B fragment of f32"):
        verify(_definition(frags=(bad,)))

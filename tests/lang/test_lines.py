"""Lines in the front end and the IR: what ``load_line``/``store_line`` and lane-wise code build,
the errors before anything runs, the verifier's line rules, the bounds pass and the scalar
lowering."""

import pytest

from ruda_core.ir import (
    Const,
    Elem,
    ExecutionMode,
    Instr,
    KernelDefinition,
    Local,
    Op,
    line_alignment,
    lower_bounds,
    scalarize_lines,
    verify,
    walk,
)
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    Comptime,
    Float,
    Line,
    LocalArray,
    SharedMemory,
    f16,
    f32,
    i32,
    kernel,
    plane_sum,
    select,
    u32,
)
from ruda_core.runtime import CompilationError
from ruda_core.testing.irbuild import KernelBuilder, builtin, const


def _instrs(defn: KernelDefinition, op: Op) -> list[Instr]:
    return [s for s in walk(defn.body) if isinstance(s, Instr) and s.op is op]


@kernel
def scaled_copy(x: Array[Float], y: Array[Float], a: f32, N: Comptime[int]):
    i = ABSOLUTE_POS
    v = Float(x.load_line(i, N) * Float(a))
    y.store_line(i, v)


def test_load_line_gives_a_line_local_of_the_comptime_width():
    defn = scaled_copy.definition(N=8, Float="f16")
    (load,) = _instrs(defn, Op.LOAD_LINE)
    assert load.out.type_text == "f16x8"
    (mul,) = _instrs(defn, Op.MUL)
    assert mul.out.type_text == "f16x8"  # the scalar Float(a) is used in every lane
    assert [a.width for a in mul.args if isinstance(a, Local)] == [8, 1]
    (store,) = _instrs(defn, Op.STORE_LINE)
    assert store.args[2].type_text == "f16x8"
    assert "local v: f16x8" in defn.dump()


def test_each_width_specialises_the_kernel():
    four, eight = scaled_copy.definition(N=4, Float="f32"), scaled_copy.definition(N=8, Float="f32")
    assert four.fingerprint() != eight.fingerprint()


@kernel
def lanes_and_reductions(x: Array[i32], out: Array[i32]):
    v = x.load_line(ABSOLUTE_POS, 4)
    out[0] = v[3] + len(v)
    out[1] = v.sum()
    out[2] = Line(v[1], 2, v[0], 4).max()
    acc: Line[i32, 4] = 0
    acc += v
    out[3] = 1 if (acc > 0).any() else 0


def test_lanes_literals_and_reductions_build_scalars():
    defn = lanes_and_reductions.definition()
    lanes = _instrs(defn, Op.LINE_LANE)
    assert {int(i.args[1].value) for i in lanes} == {0, 1, 2, 3}
    assert all(i.out.width == 1 for i in lanes)
    (build,) = _instrs(defn, Op.LINE_BUILD)
    assert build.out.width == 4 and Const(2, Elem.I32) in build.args  # literals adopt i32
    assert any(i.out.elem is Elem.BOOL and i.out.width == 4 for i in _instrs(defn, Op.GT))


def _error(fn, **spec) -> str:
    with pytest.raises(CompilationError) as info:
        kernel(fn).definition(**spec)
    return str(info.value)


def test_width_must_be_a_compile_time_2_4_or_8():
    def three(x: Array[f32], N: Comptime[int]):
        x.store_line(0, x.load_line(0, N))

    assert "line width in (2, 4, 8), got 3" in _error(three, N=3)

    def runtime(x: Array[f32], n: u32):
        x.store_line(0, x.load_line(0, n))

    assert "got a run-time value" in _error(runtime)


def test_lines_of_two_widths_do_not_combine():
    def mixed(x: Array[f32]):
        x.store_line(0, x.load_line(0, 4) + x.load_line(0, 8))

    assert "lines of 4 and 8 lanes do not combine" in _error(mixed)


def test_a_line_is_never_a_condition_an_index_or_an_element():
    def condition(x: Array[f32]):
        if x.load_line(0, 4) > 0.0:
            x[0] = 1.0

    assert "reduce it with .any() or .all()" in _error(condition)

    def index(x: Array[f32], k: Array[u32]):
        x[k.load_line(0, 2)] = 1.0

    assert "an index must be one integer, got the line u32x2" in _error(index)

    def element(x: Array[f32]):
        x[0] = x.load_line(0, 4)

    assert "cannot assign f32x4 to an element of 'x'" in _error(element)

    def scalar_op(x: Array[f32]):
        x[0] = plane_sum(x.load_line(0, 4))

    assert "plane_sum takes scalars" in _error(scalar_op)


def test_store_line_needs_a_line_of_the_arrays_type():
    def scalar(x: Array[f32]):
        x.store_line(0, x[0])

    assert "stores a line" in _error(scalar)

    def other_type(x: Array[f32], y: Array[i32]):
        x.store_line(0, y.load_line(0, 4))

    assert "cast it with f32(v)" in _error(other_type)

    def typed_into_line(x: Array[f32]):
        v = x.load_line(0, 4)
        v = x[0]
        x.store_line(0, v)

    assert "Line.splat(v, 4)" in _error(typed_into_line)


def test_lanes_must_be_compile_time_and_inside_the_line():
    def outside(x: Array[f32]):
        x[0] = x.load_line(0, 4)[4]

    assert "lane 4 is outside the line" in _error(outside)

    def runtime(x: Array[f32], k: u32):
        x[0] = x.load_line(0, 4)[k]

    assert "compile-time int index" in _error(runtime)


def test_line_builders_and_reductions_check_their_arguments():
    def three_lanes(x: Array[f32]):
        x.store_line(0, Line(1.0, 2.0, 3.0))

    assert "takes (2, 4, 8) lanes, got 3" in _error(three_lanes)

    def sum_of_bools(x: Array[f32]):
        x[0] = f32((x.load_line(0, 4) > 0.0).sum())

    assert "sum() reduces a line of numbers" in _error(sum_of_bools)

    def view(x: Array[f32]):
        x[0] = x[4:].load_line(0, 4)[0]

    assert "not a view" in _error(view)


def test_select_picks_per_lane_with_a_bool_line():
    @kernel
    def pick(x: Array[f16], y: Array[f16]):
        v = x.load_line(ABSOLUTE_POS, 2)
        y.store_line(ABSOLUTE_POS, select(v > f16(0), v, -v))

    (sel,) = _instrs(pick.definition(), Op.SELECT)
    assert sel.args[0].type_text == "boolx2" and sel.out.type_text == "f16x2"


def _verified(op: Op, out: Local | None, *args: object) -> None:
    """Build (and so verify) a kernel doing ``op`` on a line of 4 f32 loaded from ``x``."""
    k = KernelBuilder("lines")
    x = k.array("x", Elem.F32)
    line = k.let(Op.LOAD_LINE, Elem.F32, x, const(0, Elem.U32), width=4)
    if out is not None:
        k.locals.append(out)
    k.do(op, out, *(line if a == "line" else a for a in args))
    verify(k.build())


def test_the_verifier_refuses_lines_where_scalars_go():
    with pytest.raises(CompilationError, match="must be a scalar; '_t1' is the line f32x4"):
        _verified(Op.PLANE_SUM, Local("s", Elem.F32), "line")
    with pytest.raises(CompilationError, match="of lines of width 4 cannot write 's'"):
        _verified(Op.ADD, Local("s", Elem.F32, 8), "line", "line")
    with pytest.raises(CompilationError, match="lane 4 is outside"):
        _verified(Op.LINE_LANE, Local("s", Elem.F32), "line", const(4, Elem.U32))
    _verified(Op.ADD, Local("s", Elem.F32, 4), "line", const(1.0, Elem.F32))
    _verified(Op.ASSIGN, Local("z", Elem.F32, 4), const(0.0, Elem.F32))


def test_bounds_pass_compares_line_indices_with_whole_lines():
    defn = lower_bounds(scaled_copy.definition(N=4, Float="f32"), ExecutionMode.CHECKED)
    counts = _instrs(defn, Op.FLOOR_DIV)  # LEN(x) // 4 and LEN(y) // 4, hoisted
    assert [c.args[1] for c in counts] == [Const(4, Elem.U32)] * 2
    assert all(c in defn.body for c in counts)
    assert len(_instrs(defn, Op.LT)) == 2
    verify(defn)
    validated = lower_bounds(scaled_copy.definition(N=4, Float="f32"), ExecutionMode.VALIDATE)
    verify(validated)
    assert len(_instrs(validated, Op.REPORT_OOB)) == 2


def test_scalarize_lines_leaves_only_scalars_and_element_accesses():
    checked = lower_bounds(scaled_copy.definition(N=4, Float="f16"), ExecutionMode.CHECKED)
    flat = scalarize_lines(checked)
    verify(flat)
    assert all(v.width == 1 for v in flat.locals)
    assert not _instrs(flat, Op.LOAD_LINE) and not _instrs(flat, Op.STORE_LINE)
    assert len(_instrs(flat, Op.INDEX)) == 4 and len(_instrs(flat, Op.INDEX_ASSIGN)) == 4
    assert scalarize_lines(flat) is flat


def test_scalarize_lines_keeps_the_accesses_a_target_moves_whole_through_lines_of_their_own():
    checked = lower_bounds(scaled_copy.definition(N=4, Float="f32"), ExecutionMode.CHECKED)
    flat = scalarize_lines(checked, lambda access: access.op is Op.LOAD_LINE)
    verify(flat)
    (load,) = _instrs(flat, Op.LOAD_LINE)
    assert load.out.width == 4 and [v.width for v in flat.locals].count(4) == 1
    assert len(_instrs(flat, Op.LINE_LANE)) == 4  # the loaded line's lanes, copied out
    assert not _instrs(flat, Op.STORE_LINE) and len(_instrs(flat, Op.INDEX_ASSIGN)) == 4


def test_line_alignment_is_the_line_size_up_to_16_bytes():
    sizes = {
        (Elem.F32, 2): 8,
        (Elem.F32, 4): 16,
        (Elem.F64, 8): 16,
        (Elem.F16, 2): 4,
        (Elem.U8, 2): 2,
    }
    for (elem, width), nbytes in sizes.items():
        k = KernelBuilder("aligned")
        x = k.array("x", elem)
        k.let(Op.LOAD_LINE, elem, x, builtin("ABSOLUTE_POS"), width=width)
        assert line_alignment(k.build()) == {x: nbytes}


@kernel
def shared_mirror(x: Array[f32], N: Comptime[int]):
    s = SharedMemory(f32, 30)  # 7 whole lines of 4, then 2 elements
    s.store_line(ABSOLUTE_POS, x.load_line(ABSOLUTE_POS, N))
    x.store_line(ABSOLUTE_POS, s.load_line(u32(1), N))


def test_shared_lines_are_checked_against_their_constant_count_of_whole_lines():
    raw = shared_mirror.definition(N=4)
    (shared,) = raw.shared
    assert line_alignment(raw)[shared] == 16
    defn = lower_bounds(raw, ExecutionMode.CHECKED)
    verify(defn)
    compared = [c.args[1] for c in _instrs(defn, Op.LT)]
    assert Const(7, Elem.U32) in compared  # the store at a run-time line index
    assert len(compared) == 3  # the constant line 1 is inside: no check
    validated = lower_bounds(raw, ExecutionMode.VALIDATE)
    verify(validated)
    reports = _instrs(validated, Op.REPORT_OOB)
    assert Const(30, Elem.U64) in [r.args[2] for r in reports]  # the length in elements


def test_lines_of_a_local_array_are_refused():
    def local(x: Array[f32]):
        a = LocalArray(f32, 8)
        x.store_line(0, a.load_line(0, 4))

    assert "reads and writes global and shared arrays; 'a' is neither" in _error(local)

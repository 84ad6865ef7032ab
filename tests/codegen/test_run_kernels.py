"""Run whole kernels on a device: atomics of every type on global and shared memory, range
loops at the edges of their types, loops with break/continue, every position builtin,
Validate-mode reports, a shared-memory reduction and scalar arguments."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ruda_core.ir import BuiltinKind as K
from ruda_core.ir import Elem, KernelDefinition, Op
from ruda_core.testing.irbuild import KernelBuilder, builtin, const

from .kernels import FILE, block_sum
from .references import FLOAT_ELEMS, INT_ELEMS, wrap

E = Elem
CUBES, UNITS = 2, 64
N = CUBES * UNITS
SLOTS = 4


def atomics_kernel(elem: Elem) -> KernelDefinition:
    k = KernelBuilder(f"atomics_{elem}", file=FILE, line=1)
    names = ["acc", "add_olds", "sub", "mx", "mn", "sw", "sw_olds", "cs", "cs_olds", "st", "ld"]
    if elem.is_int:
        names += ["orv", "andv", "xorv"]
    arr = {name: k.array(name, elem) for name in names}
    shout = k.array("shout", elem)
    tile = k.shared("tile", elem, SLOTS)
    g = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="g")
    unit = builtin("UNIT_POS")

    def cast(value: object) -> object:
        return k.let(Op.CAST, elem, value)

    one = const(1.0 if elem.is_float else 1, elem)
    slot = k.let(Op.MOD, E.U32, g, const(SLOTS, E.U32))
    first = k.let(Op.LT, E.BOOL, unit, const(SLOTS, E.U32))
    with k.if_(first):
        k.do(Op.INDEX_ASSIGN, None, tile, unit, const(0.0 if elem.is_float else 0, elem))
    k.do(Op.SYNC_UNITS, None)
    k.do(Op.ATOMIC_ADD, None, tile, k.let(Op.MOD, E.U32, unit, const(SLOTS, E.U32)), one)
    k.do(
        Op.INDEX_ASSIGN, None, arr["add_olds"], g, k.let(Op.ATOMIC_ADD, elem, arr["acc"], slot, one)
    )
    k.do(Op.ATOMIC_SUB, None, arr["sub"], slot, one)
    k.do(
        Op.ATOMIC_MAX,
        None,
        arr["mx"],
        const(0, E.U32),
        cast(k.let(Op.MOD, E.U32, g, const(50, E.U32))),
    )
    upto = k.let(Op.ADD, E.U32, k.let(Op.MOD, E.U32, g, const(100, E.U32)), const(1, E.U32))
    k.do(Op.ATOMIC_MIN, None, arr["mn"], const(0, E.U32), cast(upto))
    k.do(
        Op.INDEX_ASSIGN,
        None,
        arr["sw_olds"],
        g,
        k.let(Op.ATOMIC_SWAP, elem, arr["sw"], const(0, E.U32), cast(upto)),
    )
    zero = const(0.0 if elem.is_float else 0, elem)
    old = k.let(Op.ATOMIC_CAS, elem, arr["cs"], const(0, E.U32), zero, cast(upto))
    k.do(Op.INDEX_ASSIGN, None, arr["cs_olds"], g, old)
    k.do(Op.ATOMIC_STORE, None, arr["st"], g, cast(upto))
    k.do(Op.INDEX_ASSIGN, None, arr["ld"], g, k.let(Op.ATOMIC_LOAD, elem, arr["st"], g))
    if elem.is_int:
        bit = k.let(Op.SHL, elem, one, cast(k.let(Op.MOD, E.U32, g, const(7, E.U32))))
        k.do(Op.ATOMIC_OR, None, arr["orv"], const(0, E.U32), bit)
        k.do(Op.ATOMIC_AND, None, arr["andv"], const(0, E.U32), k.let(Op.BIT_NOT, elem, bit))
        k.do(Op.ATOMIC_XOR, None, arr["xorv"], const(0, E.U32), bit)
    k.do(Op.SYNC_UNITS, None)
    with k.if_(first):
        at = k.let(
            Op.ADD, E.U32, k.let(Op.MUL, E.U32, builtin("RUDA_POS"), const(SLOTS, E.U32)), unit
        )
        k.do(Op.INDEX_ASSIGN, None, shout, at, k.let(Op.INDEX, elem, tile, unit))
    return k.build()


@pytest.mark.parametrize("elem", [*INT_ELEMS, *FLOAT_ELEMS], ids=str)
def test_atomics_apply_each_update_once(device, elem: Elem) -> None:
    dt = elem.numpy
    arrays = {
        "acc": np.zeros(SLOTS, dt),
        "add_olds": np.zeros(N, dt),
        "sub": np.full(SLOTS, 100, dt),
        "mx": np.zeros(1, dt),
        "mn": np.full(1, 100, dt),
        "sw": np.zeros(1, dt),
        "sw_olds": np.zeros(N, dt),
        "cs": np.zeros(1, dt),
        "cs_olds": np.zeros(N, dt),
        "st": np.zeros(N, dt),
        "ld": np.zeros(N, dt),
    }
    if elem.is_int:
        arrays |= {"orv": np.zeros(1, dt), "andv": np.full(1, 127, dt), "xorv": np.zeros(1, dt)}
    arrays["shout"] = np.zeros(CUBES * SLOTS, dt)
    results = device.run(
        atomics_kernel(elem), list(arrays.values()), count=(CUBES, 1, 1), dim=(UNITS, 1, 1)
    )
    got = dict(zip(arrays, results, strict=True))
    per_slot = N // SLOTS
    np.testing.assert_array_equal(got["acc"], np.full(SLOTS, per_slot, dt))
    for s in range(SLOTS):  # every add saw a distinct old value: 0 .. per_slot-1
        assert sorted(got["add_olds"][s::SLOTS].tolist()) == list(range(per_slot))
    np.testing.assert_array_equal(got["sub"], np.full(SLOTS, 100 - per_slot, dt))
    assert got["mx"][0] == 49 and got["mn"][0] == 1
    upto = [(g % 100) + 1 for g in range(N)]
    swapped = Counter([*got["sw_olds"].tolist(), got["sw"][0].item()])
    assert swapped == Counter([0, *upto])
    assert got["cs_olds"].tolist().count(0) == 1
    assert got["cs"][0] == upto[got["cs_olds"].tolist().index(0)]
    np.testing.assert_array_equal(got["st"], np.array(upto, dt))
    np.testing.assert_array_equal(got["ld"], np.array(upto, dt))
    if elem.is_int:
        assert got["orv"][0] == 127 and got["andv"][0] == 0
        parity = [sum(1 for g in range(N) if g % 7 == bit) % 2 for bit in range(7)]
        assert got["xorv"][0] == sum(p << bit for bit, p in enumerate(parity))
    np.testing.assert_array_equal(got["shout"], np.full(CUBES * SLOTS, UNITS // SLOTS, dt))


RANGES = [
    (E.U32, 4294967290, 4294967295, 2),
    (E.U32, 0, 10, 3),
    (E.U32, 7, 3, 1),
    (E.I8, 100, -128, -7),
    (E.I8, -128, 127, 50),
    (E.I32, -2147483648, 2147483647, 1 << 30),
    (E.I32, 5, 5, 1),
    (E.I16, 0, -10, -1),
    (E.U8, 250, 255, 4),
    (E.I64, -(2**63), 2**63 - 1, 2**62 + 1),
    (E.U64, 2**64 - 10, 2**64 - 1, 4),
]


def ranges_kernel(write_var: bool) -> KernelDefinition:
    """For each range: iterations, sum of the values and the variable afterwards (u64)."""
    k = KernelBuilder("ranges", file=FILE, line=1)
    out = k.array("out", E.U64)
    for r, (elem, start, end, step) in enumerate(RANGES):
        var = k.local(f"v{r}", elem)
        count = k.let(Op.ASSIGN, E.U64, const(0, E.U64))
        total = k.let(Op.ASSIGN, E.U64, const(0, E.U64))
        end_local = k.let(Op.ASSIGN, elem, const(end, elem))  # a local end: read once
        with k.range_(var, const(start, elem), end_local, step):
            k.do(Op.ADD, count, count, const(1, E.U64))
            k.do(Op.ADD, total, total, k.let(Op.CAST, E.U64, var))
            if write_var:  # neither changes the iteration
                k.do(Op.ASSIGN, end_local, const(start, elem))
                k.do(Op.ADD, var, var, const(1, elem))
        for slot, value in enumerate((count, total, k.let(Op.CAST, E.U64, var))):
            k.do(Op.INDEX_ASSIGN, None, out, const(3 * r + slot, E.U32), value)
    return k.build()


@pytest.mark.parametrize("write_var", [False, True])
def test_range_loops_keep_python_semantics_without_wrapping(device, write_var: bool) -> None:
    (got,) = device.run(ranges_kernel(write_var), [np.zeros(3 * len(RANGES), np.uint64)])
    for r, (elem, start, end, step) in enumerate(RANGES):
        values = range(start, end, step)
        last = (values[-1] + (1 if write_var else 0)) if values else 0
        expected = [
            len(values),
            wrap(sum(wrap(v, E.U64) for v in values), E.U64),
            wrap(wrap(last, elem), E.U64),
        ]
        assert got[3 * r : 3 * r + 3].tolist() == expected, (elem, start, end, step)


def test_loop_break_continue_and_if_else(device) -> None:
    k = KernelBuilder("control", file=FILE, line=1)
    out = k.array("out", E.I32)
    x = k.let(Op.ASSIGN, E.I32, const(0, E.I32), name="x")
    acc = k.let(Op.ASSIGN, E.I32, const(0, E.I32), name="acc")
    with k.loop():
        k.do(Op.ADD, x, x, const(1, E.I32))
        with k.if_(k.let(Op.EQ, E.BOOL, k.let(Op.MOD, E.I32, x, const(3, E.I32)), const(0, E.I32))):
            k.continue_()
        with k.if_(k.let(Op.GT, E.BOOL, x, const(20, E.I32))):
            k.break_()
        k.do(Op.ADD, acc, acc, x)
    i = k.local("i", E.I32)
    with k.range_(i, const(0, E.I32), const(20, E.I32), 3):
        with k.if_(k.let(Op.EQ, E.BOOL, k.let(Op.MOD, E.I32, i, const(2, E.I32)), const(0, E.I32))):
            k.continue_()
        with k.else_():
            k.do(Op.MUL, acc, acc, const(2, E.I32))
        k.do(Op.SUB, acc, acc, i)
    k.do(Op.INDEX_ASSIGN, None, out, const(0, E.U32), acc)
    with k.if_(k.let(Op.GT, E.BOOL, acc, const(0, E.I32))):
        k.return_()
    k.do(Op.INDEX_ASSIGN, None, out, const(1, E.U32), const(-1, E.I32))
    (got,) = device.run(k.build(), [np.zeros(2, np.int32)])
    acc_py, x_py = 0, 0
    while True:
        x_py += 1
        if x_py % 3 == 0:
            continue
        if x_py > 20:
            break
        acc_py += x_py
    for i_py in range(0, 20, 3):
        if i_py % 2 == 0:
            continue
        acc_py = acc_py * 2 - i_py
    assert got.tolist() == [acc_py, 0]


POSITIONS = [kind for kind in K]


def test_position_builtins_follow_cubecl(device) -> None:
    count, dim = (2, 3, 2), (4, 2, 2)
    k = KernelBuilder("positions", file=FILE, line=1)
    out = k.array("out", E.U32)
    total = int(np.prod(count) * np.prod(dim))
    pos = builtin("ABSOLUTE_POS")
    for slot, kind in enumerate(POSITIONS):
        at = k.let(
            Op.ADD, E.U32, k.let(Op.MUL, E.U32, const(slot, E.U32), const(total, E.U32)), pos
        )
        k.do(Op.INDEX_ASSIGN, None, out, at, builtin(kind.name))
    (got,) = device.run(
        k.build(), [np.zeros(total * len(POSITIONS), np.uint32)], count=count, dim=dim
    )
    plane = int(got[POSITIONS.index(K.PLANE_DIM) * total])  # the target's plane width
    assert plane in (1, 4, 8, 16, 32, 64, 128)  # 1: a target without planes (subgroups)
    expected = np.zeros((len(POSITIONS), total), np.uint32)
    cx, cy, cz = count
    dx, dy, dz = dim
    for rz, ry, rx, uz, uy, ux in np.ndindex(cz, cy, cx, dz, dy, dx):
        ax, ay, az = rx * dx + ux, ry * dy + uy, rz * dz + uz
        absolute = az * (cx * dx) * (cy * dy) + ay * (cx * dx) + ax
        unit = uz * dx * dy + uy * dx + ux
        values = {
            K.ABSOLUTE_POS: absolute,
            K.ABSOLUTE_POS_X: ax,
            K.ABSOLUTE_POS_Y: ay,
            K.ABSOLUTE_POS_Z: az,
            K.UNIT_POS: unit,
            K.UNIT_POS_X: ux,
            K.UNIT_POS_Y: uy,
            K.UNIT_POS_Z: uz,
            K.RUDA_POS: rz * cx * cy + ry * cx + rx,
            K.RUDA_POS_X: rx,
            K.RUDA_POS_Y: ry,
            K.RUDA_POS_Z: rz,
            K.RUDA_DIM: dx * dy * dz,
            K.RUDA_DIM_X: dx,
            K.RUDA_DIM_Y: dy,
            K.RUDA_DIM_Z: dz,
            K.RUDA_COUNT: cx * cy * cz,
            K.RUDA_COUNT_X: cx,
            K.RUDA_COUNT_Y: cy,
            K.RUDA_COUNT_Z: cz,
            K.PLANE_DIM: plane,
            K.UNIT_POS_PLANE: unit % plane,
        }
        for slot, kind in enumerate(POSITIONS):
            expected[slot, absolute] = values[kind]
    for slot, kind in enumerate(POSITIONS):
        np.testing.assert_array_equal(
            got[slot * total : (slot + 1) * total], expected[slot], str(kind)
        )


def test_validate_mode_reports_the_first_out_of_bounds_access(device) -> None:
    k = KernelBuilder("oob", file=FILE, line=1)
    x = k.array("x", E.F32, read_only=True)
    out = k.array("out", E.F32)
    unit = builtin("UNIT_POS")
    at = k.let(Op.ADD, E.U32, unit, const(5, E.U32))
    k.do(Op.INDEX_ASSIGN, None, out, unit, k.let(Op.INDEX, E.F32, x, at))
    x_host = np.arange(10, dtype=np.float32) + 1
    (_, got), error = device.run_validated(k.build(), [x_host, np.zeros(8, np.float32)], dim=8)
    np.testing.assert_array_equal(got, [6, 7, 8, 9, 10, 0, 0, 0])
    assert error is not None and error.count == 1
    (report,) = error.reports
    assert (report.kernel, report.buffer, report.length) == ("oob", "x", 10)
    assert report.index in (10, 11, 12)


def test_shared_memory_tree_reduction(device) -> None:
    x = np.arange(3 * 256 - 17, dtype=np.float32)
    _, out = device.run(block_sum(), [x, np.zeros(3, np.float32)], count=(3, 1, 1), dim=(256, 1, 1))
    padded = np.concatenate([x, np.zeros(17, np.float32)]).reshape(3, 256)
    np.testing.assert_array_equal(out, padded.sum(axis=1))


def test_scalar_arguments_of_every_kind(device) -> None:
    k = KernelBuilder("scalars", file=FILE, line=1)
    h = k.array("h", E.F16)
    flags = k.array("flags", E.BOOL)
    wide = k.array("wide", E.I64)
    scale = k.scalar("scale", E.F16)
    enable = k.scalar("enable", E.BOOL)
    base = k.scalar("base", E.I64)
    i = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS"), name="i")
    v = k.let(Op.INDEX, E.F16, h, i)
    k.do(Op.INDEX_ASSIGN, None, h, i, k.let(Op.MUL, E.F16, v, scale))
    positive = k.let(Op.GT, E.BOOL, v, const(0.0, E.F16))
    k.do(Op.INDEX_ASSIGN, None, flags, i, k.let(Op.AND, E.BOOL, positive, enable))
    k.do(Op.INDEX_ASSIGN, None, wide, i, k.let(Op.ADD, E.I64, base, k.let(Op.CAST, E.I64, i)))
    h_host = np.array([-2, -0.5, 0, 0.25, 1, 3, 1000, 60000], np.float16)
    arrays = [h_host, np.zeros(8, bool), np.zeros(8, np.int64)]
    for enabled in (True, False):
        got_h, got_flags, got_wide = device.run(
            k.build(), arrays, scalars=[np.float16(1.5), enabled, -(2**40)], dim=(8, 1, 1)
        )
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got_h, h_host * np.float16(1.5))
        np.testing.assert_array_equal(got_flags, (h_host > 0) & enabled)
        np.testing.assert_array_equal(got_wide, -(2**40) + np.arange(8))

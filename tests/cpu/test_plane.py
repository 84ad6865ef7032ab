"""Plane operations over groups of PLANE_DIM consecutive units of a cube, with inactive lanes.

These tests call the executor itself, so that planes of every width the NumPy device offers
(1 to 64 lanes) run too, with inactive lanes and a partial last plane; the conformance suite
(``test_plane_partial``) checks launches of partial planes through the client.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, KernelDefinition, Op
from ruda_core.testing.irbuild import KernelBuilder, builtin, const

from .kernels import FILE, cpu_kernel

U32, I32, F32, BOOL = Elem.U32, Elem.I32, Elem.F32, Elem.BOOL
REDUCE = [Op.PLANE_SUM, Op.PLANE_PROD, Op.PLANE_MIN, Op.PLANE_MAX]
SCANS = [Op.PLANE_INCLUSIVE_SUM, Op.PLANE_EXCLUSIVE_SUM]


def run_planes(
    defn: KernelDefinition, cubes: int, units: int, arrays: list[np.ndarray], plane_dim: int
) -> None:
    """Run ``cubes`` cubes of ``units`` units in planes of ``plane_dim``, writing ``arrays``
    (one per array parameter; no scalars, no tensors) in place."""
    kernel = cpu_kernel(defn, plane_dim=plane_dim)
    kernel((cubes, 1, 1), (units, 1, 1), arrays, [], [a.size for a in arrays])


def planes(cubes: int, units: int, plane_dim: int) -> list[list[int]]:
    """The lanes of every plane."""
    out = []
    for cube in range(cubes):
        for start in range(0, units, plane_dim):
            out.append([cube * units + u for u in range(start, min(start + plane_dim, units))])
    return out


@pytest.mark.parametrize(
    ("units", "plane_dim"),
    [
        (64, 32),
        (48, 32),
        (20, 32),
        (40, 16),
        (7, 1),
        (10, 2),
        (13, 4),
        (24, 8),
        (128, 64),
        (90, 64),
    ],
)
@pytest.mark.parametrize("elem", [I32, U32, F32], ids=str)
def test_reductions_and_scans_over_active_lanes(units: int, plane_dim: int, elem: Elem) -> None:
    kb = KernelBuilder("plane", file=FILE)
    pa, pm = kb.array("a", elem), kb.array("active", BOOL)
    outs = {op: kb.array(op.value, elem) for op in REDUCE + SCANS}
    i = builtin("ABSOLUTE_POS")
    x = kb.load(pa, i)
    with kb.if_(kb.load(pm, i)):
        for op, p in outs.items():
            kb.store(p, i, kb.let(op, elem, x))
    cubes = 3
    n = cubes * units
    rng = np.random.default_rng(0)
    a = rng.integers(-3 if elem.is_signed else 1, 4, n).astype(elem.numpy)
    active = rng.random(n) < 0.7
    arrays = {op: np.zeros(n, elem.numpy) for op in outs}
    run_planes(kb.build(), cubes, units, [a, active, *arrays.values()], plane_dim)
    for lanes in planes(cubes, units, plane_dim):
        act = [k for k in lanes if active[k]]
        vals = [a[k].item() for k in act]
        wrap = elem.numpy.type
        with np.errstate(over="ignore"):
            want = {
                Op.PLANE_SUM: wrap(np.sum(np.array(vals, elem.numpy), dtype=elem.numpy)),
                Op.PLANE_PROD: wrap(np.prod(np.array(vals, elem.numpy), dtype=elem.numpy)),
                Op.PLANE_MIN: min(vals, default=None),
                Op.PLANE_MAX: max(vals, default=None),
            }
        running = 0
        for k in act:
            for op, value in want.items():
                assert arrays[op][k] == value, (op, k)
            assert arrays[Op.PLANE_EXCLUSIVE_SUM][k] == running
            running += a[k].item()
            assert arrays[Op.PLANE_INCLUSIVE_SUM][k] == elem.numpy.type(running)
        for k in set(lanes) - set(act):
            assert all(arrays[op][k] == 0 for op in outs)  # inactive lanes store nothing


@pytest.mark.parametrize(("units", "pd"), [(48, 16), (5, 1), (14, 4), (100, 64)])
def test_all_any_broadcast_shuffle(units: int, pd: int) -> None:
    kb = KernelBuilder("plane_misc", file=FILE)
    pa, pf, ps = kb.array("a", U32), kb.array("flag", BOOL), kb.array("src", U32)
    p_all, p_any = kb.array("all_", BOOL), kb.array("any_", BOOL)
    p_bc, p_sh = kb.array("bc", U32), kb.array("sh", U32)
    i = builtin("ABSOLUTE_POS")
    x, f = kb.load(pa, i), kb.load(pf, i)
    kb.store(p_all, i, kb.let(Op.PLANE_ALL, BOOL, f))
    kb.store(p_any, i, kb.let(Op.PLANE_ANY, BOOL, f))
    kb.store(p_bc, i, kb.let(Op.PLANE_BROADCAST, U32, x, const(5, U32)))
    kb.store(p_sh, i, kb.let(Op.PLANE_SHUFFLE, U32, x, kb.load(ps, i)))
    cubes = 2
    n = cubes * units
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1000, n).astype(np.uint32)
    flag = rng.random(n) < 0.9
    flag[:pd] = True  # one plane all true
    flag[pd : 2 * pd] = False  # one all false
    src = rng.integers(0, pd + 4, n).astype(np.uint32)  # pd.. are outside the plane
    outs = [np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.uint32), np.zeros(n, np.uint32)]
    run_planes(kb.build(), cubes, units, [a, flag, src, *outs], pd)
    for lanes in planes(cubes, units, pd):
        for k in lanes:
            assert outs[0][k] == all(flag[j] for j in lanes)
            assert outs[1][k] == any(flag[j] for j in lanes)
            assert outs[2][k] == (a[lanes[5]] if len(lanes) > 5 else 0)
            assert outs[3][k] == (a[lanes[src[k]]] if src[k] < len(lanes) else 0)


def test_plane_dim_and_unit_pos_plane_builtins() -> None:
    kb = KernelBuilder("plane_builtins", file=FILE)
    pd_out, pos = kb.array("pd", U32), kb.array("pos", U32)
    kb.store(pd_out, builtin("ABSOLUTE_POS"), builtin("PLANE_DIM"))
    kb.store(pos, builtin("ABSOLUTE_POS"), builtin("UNIT_POS_PLANE"))
    a, b = np.zeros(96, np.uint32), np.zeros(96, np.uint32)
    run_planes(kb.build(), 2, 48, [a, b], 16)
    assert (a == 16).all()
    assert b.tolist() == [u % 16 for _ in range(2) for u in range(48)]

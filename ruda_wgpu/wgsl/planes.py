"""Plane operations as WGSL subgroup builtins.

A plane is a subgroup: ``PLANE_DIM`` (the subgroup width the device was measured to run) and
``UNIT_POS_PLANE = UNIT_POS % PLANE_DIM``, which holds where subgroups are formed from
consecutive invocations, as on lavapipe. Reductions and scans act over the invocations that
exist, so a partial last plane needs nothing more. A shuffle's source lane is checked against
the lanes that exist (below ``PLANE_DIM`` and inside the cube): a broadcast or shuffle from a
missing lane reads 0, a relative one reads the unit's own value, as the IR defines them.
``subgroupShuffle`` stands in for ``subgroupBroadcast``, whose lane WGSL wants constant.
Imports no driver.
"""

from __future__ import annotations

from collections.abc import Sequence

from ruda_core.codegen.prelude import Prelude
from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import Elem, Op

from .dialect import NARROW, WgslDialect, wrap

__all__ = ["plane_value"]

_D = WgslDialect(frozenset(Elem))
literal = _D.literal

_REDUCE = {
    Op.PLANE_SUM: "subgroupAdd",
    Op.PLANE_PROD: "subgroupMul",
    Op.PLANE_MIN: "subgroupMin",
    Op.PLANE_MAX: "subgroupMax",
    Op.PLANE_INCLUSIVE_SUM: "subgroupInclusiveAdd",
    Op.PLANE_EXCLUSIVE_SUM: "subgroupExclusiveAdd",
}
_SHUFFLED = (Elem.I32, Elem.U32, Elem.F32, Elem.F16, *NARROW)


def _exists(lane: str) -> str:
    """Whether plane lane ``lane`` (a ``u32``) is a unit of the cube."""
    return f"({lane} < PLANE_DIM && UNIT_POS - UNIT_POS_PLANE + {lane} < RUDA_DIM)"


def plane_value(op: Op, elem: Elem, args: Sequence[str], prelude: Prelude) -> str:
    """The expression of plane operation ``op`` on operands of ``elem`` (``args[0]`` the
    value, ``args[1]`` a lane, delta or mask where the operation takes one).

    :raises UnsupportedFeature: for an element type subgroup operations do not take.
    """
    if op is Op.PLANE_ELECT:  # naga has no subgroupElect: the lowest lane that reaches it
        return "(UNIT_POS_PLANE == countTrailingZeros(subgroupBallot(true).x))"
    if elem in (Elem.I64, Elem.U64) and op is not Op.PLANE_BALLOT:
        return _wide(op, elem, args, prelude)
    if op in (Op.PLANE_ALL, Op.PLANE_ANY, Op.PLANE_BALLOT):
        fn = {Op.PLANE_ALL: "subgroupAll", Op.PLANE_ANY: "subgroupAny"}.get(op)
        return f"{fn}({args[0]})" if fn else f"subgroupBallot({args[0]}).x"
    if elem not in _SHUFFLED and not (elem is Elem.BOOL and op is not Op.PLANE_SUM):
        raise UnsupportedFeature(f"{op} on {elem}: WGSL subgroup operations take 32-bit values")
    value = args[0]
    if op in _REDUCE:
        if elem is Elem.BOOL:
            raise UnsupportedFeature(f"{op} on bool")
        return wrap(f"{_REDUCE[op]}({value})", elem)
    if elem is Elem.BOOL:  # shuffled as 0 and 1
        shuffled = plane_value(op, Elem.U32, [f"select(0u, 1u, {value})", *args[1:]], prelude)
        return f"({shuffled} != 0u)"
    return _shuffled(op, value, args, "subgroupShuffle", literal(0, elem))


def _shuffled(op: Op, value: str, args: Sequence[str], shuffle: str, zero: str) -> str:
    """A broadcast or (relative) shuffle through ``shuffle(value, lane)``."""
    lane = "UNIT_POS_PLANE"
    mask = "(PLANE_DIM - 1u)"
    if op in (Op.PLANE_BROADCAST, Op.PLANE_SHUFFLE):
        source = args[1]
        return f"select({zero}, {shuffle}({value}, {source} & {mask}), {_exists(source)})"
    if op is Op.PLANE_SHUFFLE_UP:
        source, exists = f"({lane} - {args[1]})", f"({args[1]} <= {lane})"
    elif op is Op.PLANE_SHUFFLE_DOWN:
        source = f"({lane} + {args[1]})"
        exists = f"({args[1]} < PLANE_DIM && {_exists(source)})"
    elif op is Op.PLANE_SHUFFLE_XOR:
        source = f"({lane} ^ {args[1]})"
        exists = _exists(source)
    else:
        raise UnsupportedFeature(f"{op} has no WGSL form")
    return f"select({value}, {shuffle}({value}, {source} & {mask}), {exists})"


def _wide(op: Op, elem: Elem, args: Sequence[str], prelude: Prelude) -> str:
    """A plane operation on a 64-bit integer: shuffled as two words, reduced and scanned by
    reading every lane of the plane in turn (``PLANE_DIM`` shuffles)."""
    ty = _D.type_name(elem)
    shuffle = f"ruda_shuffle_{ty}"
    whole = "u64(lo) | (u64(hi) << 32u)"
    prelude.add(
        shuffle,
        f"fn {shuffle}(v: {ty}, lane: u32) -> {ty} {{\n"
        "    let lo = subgroupShuffle(u32(v & " + literal(0xFFFFFFFF, elem) + "), lane);\n"
        "    let hi = subgroupShuffle(u32(v >> 32u), lane);\n"
        f"    return {whole if ty == 'u64' else f'bitcast<i64>({whole})'};\n}}",
    )
    value = args[0]
    if op not in _REDUCE:
        return _shuffled(op, value, args, shuffle, literal(0, elem))
    combine = {
        Op.PLANE_PROD: "acc * x",
        Op.PLANE_MIN: "min(acc, x)",
        Op.PLANE_MAX: "max(acc, x)",
    }.get(op, "acc + x")
    first = {Op.PLANE_PROD: 1, Op.PLANE_MIN: None, Op.PLANE_MAX: None}.get(op, 0)
    last = {Op.PLANE_INCLUSIVE_SUM: "lane + 1u", Op.PLANE_EXCLUSIVE_SUM: "lane"}.get(op, "count")
    name = f"ruda_{op.value}_{ty}"
    start = f"{shuffle}(v, 0u)" if first is None else literal(first, elem)
    begin = "1u" if first is None else "0u"
    prelude.add(
        name,
        f"fn {name}(v: {ty}, lane: u32, count: u32) -> {ty} {{\n"
        f"    var acc: {ty} = {start};\n"
        f"    for (var k = {begin}; k < count; k++) {{\n"
        f"        let x = {shuffle}(v, k);\n"
        f"        if (k < {last}) {{ acc = {combine}; }}\n"
        "    }\n"
        "    return acc;\n}",
    )
    count = "min(PLANE_DIM, RUDA_DIM - (UNIT_POS - UNIT_POS_PLANE))"
    return f"{name}({value}, UNIT_POS_PLANE, {count})"

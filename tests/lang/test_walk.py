"""``ruda_core.ir.walk``, which every analysis and code generator uses: every statement of a
block, nested ones included, in program order (a block's statement before its nested blocks,
``then`` before ``orelse``), each exactly once, at any depth."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from ruda_core.ir import Block, Break, Const, Elem, If, Local, Loop, RangeLoop, Stmt, walk

_I = Local("i", Elem.U32)
_ZERO, _ONE = Const(0, Elem.U32), Const(1, Elem.U32)


def _reference(block: Block) -> Iterator[Stmt]:
    for stmt in block:
        yield stmt
        if isinstance(stmt, If):
            yield from _reference(stmt.then)
            yield from _reference(stmt.orelse)
        elif isinstance(stmt, RangeLoop | Loop):
            yield from _reference(stmt.body)


def _blocks(inner: st.SearchStrategy[Block]) -> st.SearchStrategy[Stmt]:
    return st.one_of(
        st.builds(lambda t, e: If(Const(True, Elem.BOOL), t, e), inner, inner),
        st.builds(Loop, inner),
        st.builds(lambda b: RangeLoop(_I, _ZERO, _ONE, _ONE, b), inner),
    )


_BLOCK = st.recursive(
    st.lists(st.builds(Break), max_size=3).map(tuple),
    lambda inner: st.lists(st.one_of(st.builds(Break), _blocks(inner)), max_size=4).map(tuple),
    max_leaves=40,
)


@given(_BLOCK)
def test_walk_visits_every_statement_once_in_program_order(block: Block) -> None:
    assert [id(s) for s in walk(block)] == [id(s) for s in _reference(block)]


def test_walk_reaches_a_deeply_nested_statement() -> None:
    innermost = Break()
    block: Block = (innermost,)
    for _ in range(2000):  # deeper than the interpreter's recursion limit
        block = (Loop(block),)
    assert list(walk(block))[-1] is innermost

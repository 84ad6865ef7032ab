"""Helpers for the kernel-language tests: walking IR and running it on the test interpreter."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ruda_core.ir import Block, If, Instr, KernelDefinition, Loop, Op, RangeLoop, Stmt

from .ir_interp import Interp


def walk(block: Block) -> Iterator[Stmt]:
    """Every statement of ``block``, nested ones included, in order."""
    for stmt in block:
        yield stmt
        if isinstance(stmt, If):
            yield from walk(stmt.then)
            yield from walk(stmt.orelse)
        elif isinstance(stmt, RangeLoop | Loop):
            yield from walk(stmt.body)


def instrs(defn: KernelDefinition, op: Op | None = None) -> list[Instr]:
    """The instructions of ``defn`` (of ``op`` only, when given)."""
    return [s for s in walk(defn.body) if isinstance(s, Instr) and (op is None or s.op is op)]


def run(defn: KernelDefinition, **values: object) -> Interp:
    """Run ``defn`` for one unit: arrays given as NumPy arrays, scalars as numbers."""
    arrays = {k: v for k, v in values.items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in values.items() if not isinstance(v, np.ndarray)}
    return Interp(defn, arrays, scalars).run()

"""Helpers for the kernel-language tests: walking IR and running it on the test interpreter."""

from __future__ import annotations

import inspect

import numpy as np

from ruda_core.ir import Instr, KernelDefinition, Op, walk

from .ir_interp import Interp


def instrs(defn: KernelDefinition, op: Op | None = None) -> list[Instr]:
    """The instructions of ``defn`` (of ``op`` only, when given)."""
    return [s for s in walk(defn.body) if isinstance(s, Instr) and (op is None or s.op is op)]


def run(defn: KernelDefinition, **values: object) -> Interp:
    """Run ``defn`` for one unit: arrays given as NumPy arrays, scalars as numbers."""
    arrays = {k: v for k, v in values.items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in values.items() if not isinstance(v, np.ndarray)}
    return Interp(defn, arrays, scalars).run()


def marked_line(fn: object, marker: str = "# ERR") -> int:
    """The file line of the first line of ``fn`` (a function or an ``@func``) that holds
    ``marker``."""
    lines, first = inspect.getsourcelines(getattr(fn, "fn", fn))
    return first + next(i for i, line in enumerate(lines) if marker in line)

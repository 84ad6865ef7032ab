"""``print`` on the NumPy device: each batch collects the records of its active lanes, and
:func:`batch_output` orders them by lane (cube, then unit), each lane's in program order.

A record is the print's Python ``%`` format applied to the lane's values as Python numbers
(``tolist()``: exact for every element, ``f16`` and ``f32`` included), which is C's ``printf``
text for the conversions :mod:`ruda_core.ir.printing` allows; a bool prints ``True``/``False``
through ``%s`` and a NaN of either sign prints ``nan``, as on the C targets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import Batch
from .values import arr

__all__ = ["batch_output", "print_lanes"]


def print_lanes(g: Batch, m: Any, fmt: str, *values: Any) -> None:
    """Record ``fmt % values`` for every lane of mask ``m``."""
    lanes = np.arange(g.n) if m is None else np.flatnonzero(m)
    if values:
        columns = [np.broadcast_to(arr(v), (g.n,))[lanes].tolist() for v in values]
        texts = [fmt % row for row in zip(*columns, strict=True)]
    else:
        texts = [fmt % ()] * lanes.shape[0]
    g.printed.append((lanes, texts))


def batch_output(g: Batch) -> str:
    """The text the batch printed, ordered by lane, then by when each lane printed it."""
    if not g.printed:
        return ""
    lanes = np.concatenate([lanes for lanes, _ in g.printed])
    order = np.argsort(lanes, kind="stable")  # records were appended in program order
    texts = [text for _, batch_texts in g.printed for text in batch_texts]
    return "".join(texts[k] for k in order.tolist())

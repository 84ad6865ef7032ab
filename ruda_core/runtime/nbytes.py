"""Byte counts as people write and read them: :func:`nbytes_from_env` parses a size variable
(``RUDA_MEMORY_LIMIT``, ``RUDA_CACHE_MAX_BYTES``), :func:`format_nbytes` prints one. A leaf
module: it imports only ruda's errors."""

from __future__ import annotations

import os
import re

from ..errors import SettingError

__all__ = ["format_nbytes", "nbytes_from_env"]

_UNITS = {"": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def nbytes_from_env(variable: str) -> int | None:
    """The environment variable ``variable`` in bytes (an integer, optionally followed by KiB,
    MiB, GiB or TiB), or None when it is unset or empty.

    :raises SettingError: when the variable is set to anything else; the message names it.
    """
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    match = re.fullmatch(r"(\d+)\s*([kmgt]ib)?", raw, re.IGNORECASE)
    if match is None:
        raise SettingError(
            f"{variable}={raw!r} is not a size; use bytes or a number with KiB, MiB, GiB "
            "or TiB, e.g. 512MiB"
        )
    return int(match[1]) * _UNITS[(match[2] or "").lower()]


def format_nbytes(nbytes: int) -> str:
    """``nbytes`` in the largest binary unit that keeps it at least 1: ``"512 B"``,
    ``"1.5 KiB"``, ``"2.0 GiB"``."""
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"

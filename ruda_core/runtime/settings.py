"""Reading ``RUDA_*`` settings: :func:`switch_setting` (``1`` or ``0``), :func:`count_setting`
(a whole number) and :func:`seconds_setting` (a number of seconds). Each gives its default where
the variable is unset or empty, and raises :class:`~ruda_core.errors.SettingError` naming the
variable and what it takes for any other value. A leaf module: it imports only ruda's errors."""

from __future__ import annotations

import math
import os

from ..errors import SettingError

__all__ = ["count_setting", "seconds_setting", "switch_setting"]


def _said(variable: str) -> str:
    return os.environ.get(variable, "").strip()


def switch_setting(variable: str, on: str, off: str, default: bool = False) -> bool:
    """The switch ``variable`` sets: ``1`` on, ``0`` off.

    :param on: what ``1`` does, and ``off`` what ``0`` does, for the error message.
    """
    raw = _said(variable)
    if not raw:
        return default
    if raw not in ("0", "1"):
        raise SettingError(
            f"{variable}={raw!r} is neither 0 ({off}) nor 1 ({on}); set one of those, or unset "
            f"it ({'1' if default else '0'})"
        )
    return raw == "1"


def count_setting(variable: str, default: int, what: str, minimum: int = 1) -> int:
    """The whole number ``variable`` sets, at least ``minimum``; ``what`` it counts, for the
    error message."""
    raw = _said(variable)
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < minimum:
        raise SettingError(
            f"{variable}={raw!r} is not a whole number of at least {minimum}; set it to the "
            f"number of {what}, e.g. {default}"
        )
    return int(raw)


def seconds_setting(variable: str, default: float, what: str) -> float:
    """The positive, finite number of seconds ``variable`` sets; ``what`` they bound, for the
    error message."""
    raw = _said(variable)
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise SettingError(
            f"{variable}={raw!r} is not a positive number of seconds; set it to how long "
            f"{what} may take, e.g. {default:g}"
        )
    return seconds

"""On/off settings: :func:`switch_setting` reads a ``RUDA_*`` variable that is ``1`` or ``0``.
A leaf module: it imports only ruda's errors."""

from __future__ import annotations

import os

from ..errors import SettingError

__all__ = ["switch_setting"]


def switch_setting(variable: str, on: str, off: str, default: bool = False) -> bool:
    """The switch the environment variable ``variable`` sets: ``1`` on, ``0`` off, ``default``
    where it is unset or empty.

    :param on: what ``1`` does, and ``off`` what ``0`` does, for the error message.
    :raises SettingError: it is set to anything else; the message names it and both values.
    """
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    if raw not in ("0", "1"):
        raise SettingError(
            f"{variable}={raw!r} is neither 0 ({off}) nor 1 ({on}); set one of those, or unset "
            f"it ({'1' if default else '0'})"
        )
    return raw == "1"

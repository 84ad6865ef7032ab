"""The names users give devices (``"cpu"``, ``"opencl:0"``), by server: how a message names
the device that holds a piece of memory, whichever server reports it.

A server is named by the first client made of it (:meth:`ComputeServer.name_device`), before
anything can be enqueued on it; until then it is named by its device id.
"""

from __future__ import annotations

__all__ = ["device_name", "name_server"]

#: per server (``ComputeServer.server_id``), its device's name
_names: dict[int, str] = {}


def name_server(server_id: int, name: str) -> None:
    """Name the device of the server ``server_id`` in messages."""
    _names[server_id] = name


def device_name(server_id: int) -> str:
    """The name of the server ``server_id``'s device, or ``"a device no client serves"``."""
    return _names.get(server_id, "a device no client serves")

"""The native implementations of operations that runtimes supply, by (operation, runtime type).

A driver's plugin supplies its runtime's through the ``ruda_native_ops`` hook
(:mod:`ruda_core.plugins`): ``{operation name: implementation}``, asked at the first call of an
operation on a client of that runtime and kept for the process. A runtime no plugin loads (a
test's, an embedding application's) is given one with :func:`register`. What an implementation
provides is its operation's to say: ``"layer_norm"`` takes a
:class:`~ruda_core.ops.layer_norm.NativeLayerNorm`. An operation with no implementation here
runs its portable kernels (or, for LayerNorm, the runtime's own ``Runtime.layer_norm`` hooks
where ``has_native_layer_norm()`` claims them). This module never imports a driver.
"""

from __future__ import annotations

from .. import plugins
from ..runtime import Runtime

__all__ = ["implementation", "register"]

#: (operation, runtime type) -> its native implementation, None for none; filled on first ask
_found: dict[tuple[str, type[Runtime]], object] = {}


def register(op: str, runtime: type[Runtime], implementation: object) -> None:
    """Make ``implementation`` the native ``op`` of ``runtime``'s clients from the next first
    call of a kind of operands on, in place of what its plugin supplies; None: the portable
    form (the calls of a kind already made keep the form they took)."""
    _found[(op, runtime)] = implementation


def implementation(op: str, runtime: type[Runtime]) -> object:
    """The native ``op`` of ``runtime``: the one registered, else its plugin's answer (asked
    once per process), else None.

    :raises PluginError: when the plugin's ``ruda_native_ops`` hook fails or answers something
        other than a mapping of operation names.
    """
    key = (op, runtime)
    if key not in _found:
        _found.setdefault(key, plugins.native_ops(runtime).get(op))
    return _found[key]

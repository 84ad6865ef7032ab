"""Capability requirements of conformance tests: ``requires``, ``requires_elem``, ``need``.

``@requires(Feature.PLANE)`` and ``@requires_elem(Elem.F64)`` mark a test; the plugin skips it
on a device that lacks the capability, with a reason that starts with ``unsupported:`` and names
the device, its backend and what is missing (the report matrix lists such a skip as
*unsupported*, not as a failure). A device that claims the capability runs the test, and a
wrong result fails. Inside a test, :func:`need` does the same for capabilities known only at
run time (a parametrised element type).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from ..ir import Elem
from ..runtime import ComputeClient, Feature

__all__ = [
    "MARK_ELEMS",
    "MARK_FEATURES",
    "UNSUPPORTED",
    "missing",
    "need",
    "requires",
    "requires_elem",
]

MARK_FEATURES = "ruda_requires"
MARK_ELEMS = "ruda_requires_elem"
#: The prefix of every skip reason that means "the device lacks a capability".
UNSUPPORTED = "unsupported:"


def requires(*features: Feature) -> pytest.MarkDecorator:
    """Mark a test as needing every one of ``features`` on the device under test."""
    for f in features:
        if not isinstance(f, Feature):
            raise TypeError(f"requires() takes Feature values, got {f!r}")
    return pytest.mark.ruda_requires(*features)


def requires_elem(*elems: Elem) -> pytest.MarkDecorator:
    """Mark a test as needing every one of ``elems`` on the device under test."""
    for e in elems:
        if not isinstance(e, Elem):
            raise TypeError(f"requires_elem() takes Elem values, got {e!r}")
    return pytest.mark.ruda_requires_elem(*elems)


def missing(
    client: ComputeClient, features: Iterable[Feature] = (), elems: Iterable[Elem] = ()
) -> str | None:
    """The skip reason when ``client``'s device lacks any of the capabilities, else None."""
    have = client.features()
    lacking = [f.value for f in features if not have.has(f)]
    lacking += [e.value for e in elems if not have.supports(e)]
    if not lacking:
        return None
    device = str(client.device)
    return f"{UNSUPPORTED} {device} ({client.name()}) lacks {', '.join(lacking)}"


def need(
    client: ComputeClient,
    *capabilities: Feature | Elem,
    reference: ComputeClient | None = None,
) -> None:
    """Skip the running test as *unsupported* unless ``client`` (and ``reference``, when the
    test compares with it) has every capability."""
    features = [c for c in capabilities if isinstance(c, Feature)]
    elems = [c for c in capabilities if isinstance(c, Elem)]
    reason = missing(client, features, elems)
    if reason is None and reference is not None:
        lacking = missing(reference, features, elems)
        if lacking is not None:
            reason = f"{lacking} (the reference device, so results cannot be compared)"
    if reason is not None:
        pytest.skip(reason)

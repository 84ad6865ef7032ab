"""Differential fuzzing: random well-typed kernels (``ruda_core.testing.random_kernels``) must give
the reference device's results exactly. ``RUDA_DIFFERENTIAL_EXAMPLES`` sets the number of
kernels per device (default 20), the same kernels on every run (the plugin's derandomised
Hypothesis profile; ``RUDA_FUZZ_NEW=1`` draws new ones); a failure shrinks (for at most
``RUDA_DIFFERENTIAL_SHRINK_S`` seconds, default 60) to a minimal kernel and prints its IR and
the device's generated source. Where the device has planes, programs may have plane
operations, compared with the reference device at the device's plane width
(``plane_reference``). Some accesses are past the end of their array on purpose, which the
reference device's sanitizer reports, so the module runs unsanitized;
``tests/cpu/test_fuzz_sanitized.py`` runs the programs, in bounds, under it. Half the programs
stay in bounds, and run on the device through ``launch_unchecked``, whose bounds checks
``BoundsCheckMode`` decides (none by default)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ruda_core.testing.differential import ShrinkBudget, example_count
from ruda_core.testing.random_kernels import Planes, atomic_elems, fuzz_elems, programs

_BUDGETS: dict[str, ShrinkBudget] = {}


@pytest.mark.usefixtures("unsanitized")  # accesses past the end on purpose (see the module)
@settings(
    max_examples=example_count(),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_kernels_match_the_reference(client, plane_reference, data):
    elems = fuzz_elems(client, plane_reference)
    max_units = client.properties().max_units_per_ruda
    same_width = plane_reference.properties().plane_dim == client.properties().plane_dim
    planes = Planes.of(client) if same_width else None
    in_bounds = data.draw(st.booleans(), label="in_bounds")  # then run unchecked
    program = data.draw(
        programs(elems, atomic_elems(client, elems), max_units, in_bounds, planes), label="program"
    )
    budget = _BUDGETS.setdefault(str(client.device), ShrinkBudget())
    budget.check(client, plane_reference, program)

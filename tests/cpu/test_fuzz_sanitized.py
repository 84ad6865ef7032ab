"""The differential fuzzer's programs under the sanitizer, at planes of 32 and of 16 lanes.

The generator (:mod:`ruda_core.testing.random_kernels`) promises programs defined on every device:
no races, no reads of unwritten shared or private memory, barriers in uniform control flow; here its
accesses stay in bounds and its line loads read whole lines of their input (elsewhere they may read
or write past the end, as the bounds checks allow, which the sanitizer reports). The sanitizer
checks that promise on each program, at the default plane width and at another one (the lockstep
batches split the cube differently), and the outputs must not depend on the width; and on programs
with plane operations, at planes of 16.
``RUDA_DIFFERENTIAL_EXAMPLES`` sets the number of programs, as for the conformance module.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ruda_cpu
from ruda_core.runtime import ComputeClient
from ruda_core.testing.differential import example_count
from ruda_core.testing.random_kernels import Planes, atomic_elems, fuzz_elems, programs
from ruda_core.testing.tolerance import mismatches

#: The plane widths the programs run at: the default and one that splits a 32-unit cube.
WIDTHS = (32, 16)


@settings(
    max_examples=example_count(),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fuzzer_programs_run_clean_under_the_sanitizer_at_two_widths(
    width_clients: dict[int, ComputeClient], data: st.DataObject
) -> None:
    first = width_clients[WIDTHS[0]]
    elems = fuzz_elems(first, first)
    max_units = first.properties().max_units_per_ruda
    program = data.draw(
        programs(elems, atomic_elems(first, elems), max_units, in_bounds=True), label="program"
    )
    params = list(program.definition.array_params)
    results = []
    with ruda_cpu.sanitizing():  # a finding raises SanitizerError at the read-back
        for width in WIDTHS:
            results.append(program.run(width_clients[width]))
    for k in program.outputs:
        bad = mismatches(results[1][k], results[0][k], params[k].elem)
        assert not bad.any(), f"{params[k].name} differs between planes of {WIDTHS}"


@settings(
    max_examples=example_count(),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fuzzer_programs_with_plane_operations_run_clean_under_the_sanitizer(
    width_clients: dict[int, ComputeClient], data: st.DataObject
) -> None:
    client = width_clients[WIDTHS[1]]
    elems = fuzz_elems(client, client)
    planes = Planes.of(client)
    assert planes is not None and planes.width == WIDTHS[1]
    program = data.draw(
        programs(elems, atomic_elems(client, elems), 1024, in_bounds=True, planes=planes),
        label="program",
    )
    with ruda_cpu.sanitizing():  # a finding raises SanitizerError at the read-back
        program.run(client)

"""``launch_bounds(n)``: a kernel states the most units its cube will have (``launch_bounds(n,
cubes)``: and how many such cubes one multiprocessor should hold at once); ``cube_units(n)``:
exactly how many. The definition carries the bound, in its text and so in its fingerprint (the
compile caches' key); the task made of it holds it for the launch check. Anything but one
compile-time int >= 1 at the top level of the kernel's body, stated once, is a
``CompilationError`` naming the kernel, the line and the value."""

from __future__ import annotations

import inspect
import re

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.errors import CompilationError
from ruda_core.ir import KernelDefinition
from ruda_core.lang import (
    UNIT_POS,
    Array,
    Comptime,
    cube_units,
    f32,
    func,
    kernel,
    launch_bounds,
    u32,
    unroll,
)
from ruda_core.runtime import KernelTask
from ruda_core.runtime.compiler import UNBOUNDED_UNITS
from ruda_cuda.dialect import CudaDialect


@kernel
def bounded(out: Array[u32], UNITS: Comptime[int]):
    launch_bounds(UNITS)
    out[UNIT_POS] = UNIT_POS


@kernel
def exact(out: Array[u32], UNITS: Comptime[int]):
    cube_units(UNITS)
    out[UNIT_POS] = UNIT_POS


@kernel
def packed(out: Array[u32], CUBES: Comptime[int]):
    launch_bounds(256, CUBES)
    out[UNIT_POS] = UNIT_POS


@kernel
def unbounded(out: Array[u32]):
    out[UNIT_POS] = UNIT_POS


@kernel
def bounded_when(out: Array[u32], WIDE: Comptime[bool]):
    """A compile-time ``if`` may choose the bound: only the branch taken is built."""
    if WIDE:
        launch_bounds(1024)
    else:
        launch_bounds(128)
    out[UNIT_POS] = UNIT_POS


def test_the_definition_carries_the_bound_and_prints_it():
    defn = bounded.definition(UNITS=256)
    assert defn.max_units == 256
    assert "\n  max_units 256\n" in defn.dump()
    assert unbounded.definition().max_units is None
    assert "max_units" not in unbounded.definition().dump()


def test_the_bound_is_part_of_the_fingerprint():
    assert bounded.definition(UNITS=256) == bounded.definition(UNITS=256)
    prints = {bounded.definition(UNITS=u).fingerprint() for u in (128, 256, 1024)}
    assert len(prints) == 3
    assert bounded_when.definition(WIDE=True).max_units == 1024
    assert bounded_when.definition(WIDE=False).max_units == 128
    wide, narrow = (bounded_when.definition(WIDE=w) for w in (True, False))
    assert wide.body == narrow.body and wide.fingerprint() != narrow.fingerprint()


def test_an_exact_cube_is_a_bound_of_its_own_in_text_and_fingerprint():
    defn = exact.definition(UNITS=256)
    assert defn.max_units == 256 and defn.exact_units
    assert "\n  max_units 256 exact\n" in defn.dump()
    assert not bounded.definition(UNITS=256).exact_units
    assert defn.fingerprint() != bounded.definition(UNITS=256).fingerprint()


def test_cubes_at_once_are_carried_in_text_fingerprint_and_cuda_bounds():
    two, four = (packed.definition(CUBES=c) for c in (2, 4))
    assert (two.max_units, two.min_cubes) == (256, 2) and not two.exact_units
    assert "\n  max_units 256 cubes 2\n" in two.dump()
    assert two.fingerprint() != four.fingerprint()
    assert bounded.definition(UNITS=256).min_cubes is None
    source = CFamilyEmitter(CudaDialect(90)).emit(two).source
    assert "__global__ void __launch_bounds__(256, 2) packed(" in source
    assert "__launch_bounds__(256) bounded(" in (
        CFamilyEmitter(CudaDialect(90)).emit(bounded.definition(UNITS=256)).source
    )


def test_the_task_holds_the_bound_for_the_launch_check():
    assert KernelTask(bounded.definition(UNITS=64)).max_units == 64
    assert KernelTask(bounded.definition(UNITS=64)).min_units == 1
    assert KernelTask(unbounded.definition()).max_units == UNBOUNDED_UNITS
    task = KernelTask(exact.definition(UNITS=64))
    assert (task.min_units, task.max_units) == (64, 64)
    assert UNBOUNDED_UNITS > 2**32  # more than any device's cube


def test_a_definition_refuses_a_bound_below_one():
    defn = unbounded.definition()
    fields = {f: getattr(defn, f) for f in ("name", "params", "locals", "shared", "body")}
    with pytest.raises(CompilationError, match="unbounded states at most 0 units per cube"):
        KernelDefinition(**fields, local_arrays=(), max_units=0)


def test_a_definition_refuses_an_exact_cube_without_units():
    defn = unbounded.definition()
    fields = {f: getattr(defn, f) for f in ("name", "params", "locals", "shared", "body")}
    with pytest.raises(CompilationError, match="exact cube without its units"):
        KernelDefinition(**fields, local_arrays=(), exact_units=True)


def test_outside_a_kernel_it_is_a_type_error():
    with pytest.raises(TypeError, match="only be used inside a @kernel"):
        launch_bounds(64)
    with pytest.raises(TypeError, match="only be used inside a @kernel"):
        cube_units(64)


# -- refused when the kernel is specialised --------------------------------------------------


def k_runtime_bound(out: Array[u32], n: u32):
    launch_bounds(n)  # ERR
    out[0] = n


def k_float_bound(out: Array[f32]):
    launch_bounds(64.0)  # ERR
    out[0] = 1.0


def k_bool_bound(out: Array[f32]):
    launch_bounds(True)  # ERR
    out[0] = 1.0


def k_zero_bound(out: Array[f32], UNITS: Comptime[int]):
    launch_bounds(UNITS)  # ERR
    out[0] = 1.0


def k_two_bounds(out: Array[f32]):
    launch_bounds(64)
    out[0] = 1.0
    launch_bounds(128)  # ERR


def k_bound_and_exact(out: Array[f32]):
    launch_bounds(64)
    cube_units(64)  # ERR


def k_exact_twice(out: Array[f32]):
    cube_units(32)
    cube_units(64)  # ERR


def k_exact_runtime(out: Array[u32], n: u32):
    cube_units(n)  # ERR


def k_exact_in_loop(out: Array[f32]):
    for _ in range(2):
        cube_units(64)  # ERR


def k_bound_in_runtime_if(out: Array[f32]):
    if UNIT_POS == 0:
        launch_bounds(64)  # ERR
    out[0] = 1.0


def k_bound_in_loop(out: Array[f32]):
    for _ in range(2):
        launch_bounds(64)  # ERR
    out[0] = 1.0


def k_bound_in_unrolled_loop(out: Array[f32]):
    for _ in unroll(range(1)):
        launch_bounds(64)  # ERR
    out[0] = 1.0


@func
def states_a_bound():
    launch_bounds(64)  # ERR


def k_bound_in_func(out: Array[f32]):
    states_a_bound()
    out[0] = 1.0


def k_bound_as_value(out: Array[f32]):
    out[0] = launch_bounds(64)  # ERR


def k_bound_without_argument(out: Array[f32]):
    launch_bounds()  # ERR
    out[0] = 1.0


def k_zero_cubes(out: Array[f32]):
    launch_bounds(64, 0)  # ERR
    out[0] = 1.0


def k_exact_with_cubes(out: Array[f32]):
    cube_units(64, 2)  # ERR
    out[0] = 1.0


def k_three_bounds(out: Array[f32]):
    launch_bounds(64, 2, 3)  # ERR
    out[0] = 1.0


REFUSED = [
    (k_runtime_bound, r"needs a compile-time int n >= 1 .*got the runtime value n", {}),
    (k_float_bound, r"needs a compile-time int n >= 1 .*got 64\.0", {}),
    (k_bool_bound, r"needs a compile-time int n >= 1 .*got True", {}),
    (k_zero_bound, r"needs a compile-time int n >= 1 .*got 0", {"UNITS": 0}),
    (k_zero_bound, r"needs a compile-time int n >= 1 .*got -32", {"UNITS": -32}),
    (
        k_two_bounds,
        r"launch_bounds\(128\) states the kernel's cube a second time; .*states "
        r"launch_bounds\(64\)",
        {},
    ),
    (
        k_bound_and_exact,
        r"cube_units\(64\) states the kernel's cube a second time; .*states "
        r"launch_bounds\(64\)",
        {},
    ),
    (k_exact_twice, r"cube_units\(64\) states .* second time; .*states cube_units\(32\)", {}),
    (
        k_exact_runtime,
        r"cube_units\(n\) needs a compile-time int n >= 1 \(the units of every "
        r"cube\), got the runtime value n",
        {},
    ),
    (k_exact_in_loop, r"cube_units\(64\) belongs at the top level", {}),
    (k_bound_in_runtime_if, r"launch_bounds\(64\) belongs at the top level", {}),
    (k_bound_in_loop, r"launch_bounds\(64\) belongs at the top level", {}),
    (k_bound_in_unrolled_loop, r"launch_bounds\(64\) belongs at the top level", {}),
    (k_bound_in_func, r"launch_bounds\(64\) belongs at the top level", {}),
    (k_bound_as_value, r"launch_bounds\(\) gives no value", {}),
    (k_bound_without_argument, r"launch_bounds\(\) takes 1 argument, got 0", {}),
    (k_zero_cubes, r"launch_bounds\(n, cubes\) needs a compile-time int cubes >= 1 .*got 0", {}),
    (k_exact_with_cubes, r"cube_units\(\) takes 1 argument, got 2", {}),
    (k_three_bounds, r"launch_bounds\(\) takes 2 arguments, got 3", {}),
]


def _error_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if "# ERR" in line)


@pytest.mark.parametrize(("fn", "match", "spec"), REFUSED, ids=lambda v: getattr(v, "__name__", ""))
def test_refused_at_specialisation(fn, match, spec):
    k = kernel(fn)
    with pytest.raises(CompilationError) as info:
        k.definition(**spec)
    text = str(info.value)
    assert f"kernel '{fn.__name__}'" in text, text
    where = states_a_bound.fn if fn is k_bound_in_func else fn
    assert info.value.line == _error_line(where), text
    assert re.search(match, text), text

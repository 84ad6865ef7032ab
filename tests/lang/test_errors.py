"""What the language refuses: a CompilationError naming the kernel, this file and the line."""

import re
from dataclasses import dataclass

import numpy as np
import pytest

from ruda_core.lang import (
    Array,
    Comptime,
    LocalArray,
    SharedMemory,
    Tensor,
    atomic_add,
    atomic_inc_wrap,
    f32,
    f64,
    func,
    i32,
    kernel,
    plane_ballot,
    plane_elect,
    plane_shuffle_up,
    sync_plane,
    sync_units_count,
    u32,
    unroll,
)
from ruda_core.runtime import CompilationError

from .helpers import marked_line

A_LIST = [1, 2]
AN_ARRAY = np.zeros(3)


def host_function(x):
    return x


@kernel
def other_kernel(out: Array[f32]):
    out[0] = 1.0


# -- refused when the decorator runs ---------------------------------------------------------


def k_list(out: Array[f32]):
    v = [1, 2]  # ERR
    out[0] = v


def k_lambda(out: Array[f32]):
    g = lambda: 1  # ERR  # noqa: E731
    out[0] = g


def k_tuple_target(out: Array[f32]):
    (a, b), c = (1, 2), 3  # ERR
    out[0] = a + b + c


def k_slice(out: Array[f32], x: Array[f32]):
    out[0:2] = x[1:3]  # ERR


def k_print_to_file(out: Array[f32]):
    print(out[0], file=None)  # ERR


def k_print_flush(out: Array[f32]):
    print(out[0], flush=True)  # ERR


def k_fstring_conversion(out: Array[f32]):
    print(f"{out[0]!r}")  # ERR


def k_fstring_computed_spec(out: Array[f32], w: u32):
    print(f"{out[0]:{w}}")  # ERR


def k_nested_def(out: Array[f32]):
    def inner():  # ERR
        return 1

    out[0] = inner()


def k_return_value(out: Array[f32]):
    return out  # ERR


def k_for_else(out: Array[f32]):
    for i in range(3):  # ERR
        out[i] = 0.0
    else:
        out[0] = 1.0


def k_comprehension(out: Array[f32]):
    out[0] = sum(i for i in range(3))  # ERR


def k_fstring(out: Array[f32]):
    s = f"{out}"  # ERR
    out[0] = s


def k_with(out: Array[f32]):
    with open("x"):  # ERR
        out[0] = 1.0


def k_no_annotation(out):  # ERR
    out[0] = 1.0


def k_bad_annotation(out: Array[f32], n: int):  # ERR
    out[0] = n


def k_default(out: Array[f32], n: u32 = 3):  # ERR
    out[0] = f32(n)


DEFINITION_ERRORS = [
    (k_list, "lists are not supported"),
    (k_lambda, "lambdas are not supported"),
    (k_tuple_target, "assign to names or array elements"),
    (k_slice, "assign to one element at a time"),
    (k_print_to_file, "takes sep= and end= only, not file="),
    (k_print_flush, "takes sep= and end= only, not flush="),
    (k_fstring_conversion, r"conversions \(!r, !s, !a\) are not supported"),
    (k_fstring_computed_spec, "a format spec in a kernel must be literal text"),
    (k_nested_def, "nested functions"),
    (k_return_value, "cannot return a value"),
    (k_for_else, "else` is not supported"),
    (k_comprehension, "generators are not supported"),
    (k_fstring, "f-strings are supported in kernels only as arguments of print"),
    (k_with, "`with` is not supported"),
    (k_no_annotation, "parameter 'out' has no annotation"),
    (k_bad_annotation, "parameter 'n' has annotation"),
    (k_default, "only Comptime parameters may have a default"),
]


def _check(err: CompilationError, fn, match: str) -> None:
    assert err.file == __file__
    assert err.line == marked_line(fn), str(err)
    text = str(err)
    assert f"'{fn.__name__}'" in text
    assert f"{__file__}:{err.line}" in text
    assert re.search(match, text), text


@pytest.mark.parametrize(
    ("fn", "match"), DEFINITION_ERRORS, ids=lambda v: getattr(v, "__name__", "")
)
def test_refused_at_definition(fn, match):
    with pytest.raises(CompilationError) as info:
        kernel(fn)
    _check(info.value, fn, match)


# -- refused when the kernel is specialised --------------------------------------------------


def k_unknown_name(out: Array[f32]):
    out[0] = missing_name  # ERR  # noqa: F821


def k_global_list(out: Array[f32]):
    out[0] = A_LIST  # ERR


def k_global_array(out: Array[f32]):
    out[0] = AN_ARRAY[0]  # ERR


def k_host_function(out: Array[f32]):
    out[0] = host_function(1.0)  # ERR


def k_kernel_call(out: Array[f32]):
    other_kernel(out)  # ERR


def k_assign_mismatch(out: Array[f32]):
    acc = f32(0)
    acc = f64(1)  # ERR
    out[0] = acc


def k_store_mismatch(out: Array[f32], x: Array[f64]):
    out[0] = x[0]  # ERR


def k_int_division(out: Array[u32], n: u32):
    out[0] = n / 2  # ERR


def k_negative_unsigned(out: Array[u32], n: u32):
    out[0] = n + -1  # ERR


def k_float_literal_int(out: Array[u32], n: u32):
    out[0] = n * 3.5  # ERR


def k_condition_not_bool(out: Array[u32], n: u32):
    if n:  # ERR
        out[0] = 1


def k_assign_param(out: Array[u32], n: u32):
    n = n + 1  # ERR
    out[0] = n


def k_before_assignment(out: Array[u32], n: u32):
    if n > 0:
        out[0] = later  # ERR  # noqa: F821
    later = n
    later = later + 1


def k_runtime_axis(out: Array[u32], t: Tensor[f32], d: u32):
    out[0] = t.shape(d)  # ERR


def k_two_indices_of_a_global(out: Array[u32]):
    out[0, 1] = 0  # ERR


def k_wrong_rank_of_a_tile(out: Array[u32]):
    t = SharedMemory(u32, (4, 4))
    t[1] = 0  # one index is a flat index into the whole tile
    t[1, 2, 3] = 0  # ERR


def k_tile_index_outside(out: Array[u32]):
    t = SharedMemory(u32, (4, 4))
    out[0] = t[1, 4]  # ERR


@func
def takes_u32(a: u32) -> u32:
    return a


def k_lossy_func_argument(out: Array[u32], n: i32):
    out[0] = takes_u32(n)  # ERR


def k_runtime_step(out: Array[u32], n: f32):
    for i in range(0, 10, n):  # ERR
        out[i] = 0


def k_break_unroll(out: Array[u32]):
    for i in unroll(range(3)):
        if out[i] > 0:
            break  # ERR


def k_huge_unroll(out: Array[u32]):
    for i in unroll(range(10**9)):  # ERR
        out[i] = 0


def k_method_without_call(out: Array[u32]):
    out[0] = out.len  # ERR


def k_int_of_runtime(out: Array[u32], x: Array[f32]):
    out[0] = int(x[0])  # ERR


def k_runtime_shared_size(out: Array[u32], n: u32):
    s = SharedMemory(u32, n + 1)  # ERR
    s[0] = 1


def k_empty_local_array(out: Array[u32]):
    a = LocalArray(u32, 0)  # ERR
    out[0] = a[0]


def k_python_type_of_local_array(out: Array[u32]):
    a = LocalArray(int, 4)  # ERR
    out[0] = a[0]


def k_atomic_local(out: Array[u32]):
    a = LocalArray(u32, 4)
    atomic_add(a, 0, 1)  # ERR


def k_bool_arithmetic(out: Array[u32], n: u32):
    out[0] = (n < 3) * 2  # ERR


def k_mixed_bool(out: Array[u32], n: u32):
    b = n > 3 and n  # ERR
    out[0] = u32(b)


def k_array_as_value(out: Array[u32], n: u32):
    out[0] = out + n  # ERR


def k_large_literal(out: Array[i32]):
    v = 2**40  # ERR
    v = v + 1
    out[0] = i32(v)


def k_is_runtime(out: Array[u32], n: u32):
    out[0] = u32(n is None)  # ERR


def k_index_float(out: Array[u32], x: Array[f32]):
    out[0] = out[x[0]]  # ERR


def k_negative_index(out: Array[u32], x: Array[u32]):
    out[0] = x[-1]  # ERR


def k_negative_store_index(out: Array[u32], LAST: Comptime[int]):
    out[LAST] = u32(1)  # ERR


def k_reassign_array(out: Array[u32], x: Array[u32]):
    a = out  # ERR
    a = x
    a[0] = 1


def k_while_else_free_comptime(out: Array[u32], MODE: Comptime[int]):
    out[0] = MODE  # ERR


def k_wrap_counter_of_i32(out: Array[i32]):
    atomic_inc_wrap(out, 0, 5)  # ERR


def k_ballot_of_number(out: Array[u32]):
    out[0] = plane_ballot(out[1])  # ERR


def k_count_of_number(out: Array[u32], x: Array[f32]):
    out[0] = sync_units_count(x[0])  # ERR


def k_shuffle_by_float(out: Array[f32]):
    out[0] = plane_shuffle_up(out[1], out[2])  # ERR


def k_elect_with_argument(out: Array[u32]):
    out[0] = u32(plane_elect(1))  # ERR


def k_sync_plane_with_argument(out: Array[u32]):
    sync_plane(out[0])  # ERR


def k_print_array(out: Array[f32]):
    print("out is", out)  # ERR


def k_print_centred(out: Array[f32]):
    print(f"{out[0]:^8}")  # ERR


def k_print_grouped(out: Array[u32]):
    print(f"{out[0]:,d}")  # ERR


def k_print_alternate(out: Array[u32]):
    print(f"{out[0]:#x}")  # ERR


def k_print_hex_of_signed(out: Array[i32]):
    print(f"{out[0]:x}")  # ERR


def k_print_int_as_float(out: Array[i32]):
    print(f"{out[0]:.2f}")  # ERR


def k_print_float_as_int(out: Array[f32]):
    print(f"{out[0]:d}")  # ERR


def k_print_bool_spec(out: Array[u32]):
    print(f"{out[0] > 0:>6}")  # ERR


def k_print_unsigned_sign(out: Array[u32]):
    print(f"{out[0]:+d}")  # ERR


def k_print_zero_left(out: Array[i32]):
    print(f"{out[0]:<05d}")  # ERR


def k_print_runtime_sep(out: Array[u32]):
    print(out[0], out[1], sep=out[2])  # ERR


def k_print_module(out: Array[u32]):
    print(np)  # ERR


def k_print_too_many(out: Array[u32]):
    v = out[0]
    print(  # ERR
        f"{v}{v}{v}{v}{v}{v}{v}{v}{v}{v}{v}"
        f"{v}{v}{v}{v}{v}{v}{v}{v}{v}{v}{v}"
        f"{v}{v}{v}{v}{v}{v}{v}{v}{v}{v}{v}"
    )


@dataclass
class Pair:
    out: Array[u32]
    n: u32


def k_print_dataclass(p: Pair):
    print("pair", p)  # ERR


def k_print_as_value(out: Array[u32]):
    out[0] = print(1)  # ERR


BUILD_ERRORS = [
    (k_unknown_name, "name 'missing_name' is not defined", {}),
    (k_global_list, "'A_LIST' is a list", {}),
    (k_global_array, "'AN_ARRAY' is a ndarray", {}),
    (k_host_function, "'host_function' is a function", {}),
    (k_kernel_call, "'other_kernel' is a Kernel", {}),
    (
        k_assign_mismatch,
        re.escape("cannot assign f64 to local 'acc' of type f32; cast with f32(...)"),
        {},
    ),
    (k_store_mismatch, "cannot assign f64 to an element of 'out' of type f32", {}),
    (k_int_division, "'/' needs floats, got u32; use '//'", {}),
    (k_negative_unsigned, "-1 does not fit u32", {}),
    (k_float_literal_int, "3.5 cannot take the integer type u32", {}),
    (k_condition_not_bool, "an if condition must be bool, got u32", {}),
    (k_assign_param, "cannot assign to the parameter 'n'", {}),
    (k_before_assignment, "'later' is used before it is assigned", {}),
    (k_runtime_axis, "needs a compile-time int axis", {"t": 2}),
    (k_runtime_step, "step of range\\(\\) must be an integer, got f32", {}),
    (k_two_indices_of_a_global, "'out' takes one index; several", {}),
    (k_lossy_func_argument, "cannot assign i32 to argument 'a' of @func 'takes_u32'", {}),
    (k_wrong_rank_of_a_tile, "has the shape \\(4, 4\\): give 2 indices", {}),
    (k_tile_index_outside, "the index \\(1, 4\\) is outside the shape \\(4, 4\\)", {}),
    (k_break_unroll, "cannot leave an unrolled loop", {}),
    (k_huge_unroll, "of 1000000000 turns: at most 4096 are written out; loop over range", {}),
    (k_method_without_call, "is a method; call it", {}),
    (k_int_of_runtime, "cast with i32", {}),
    (k_runtime_shared_size, "or a u32 kernel parameter n, got a run-time value$", {}),
    (k_empty_local_array, "LocalArray\\(T, n\\) needs a compile-time int n >= 1 .*, got 0$", {}),
    (k_python_type_of_local_array, "expected a type such as f32 or Float, got int$", {}),
    (k_atomic_local, "needs a global array or SharedMemory", {}),
    (k_bool_arithmetic, "'\\*' needs numbers, got bool", {}),
    (k_mixed_bool, "an operand of 'and' must be bool, got u32", {}),
    (k_array_as_value, "array 'out' cannot be an operand", {}),
    (k_large_literal, "does not fit i32", {}),
    (k_is_runtime, "works only on compile-time values", {}),
    (k_index_float, "an index must be an integer, got f32", {}),
    (k_negative_index, "an index must be an integer that is not negative, got -1: arrays", {}),
    (k_negative_store_index, "not negative, got -2: .*; use a.len\\(\\) - 2", {"LAST": -2}),
    (k_reassign_array, "assigned once; .a. is assigned elsewhere", {}),
    (k_while_else_free_comptime, "does not fit u32", {"MODE": -3}),
    (k_wrap_counter_of_i32, "atomic_inc_wrap\\(\\) applies to u32 elements only, not i32", {}),
    (k_ballot_of_number, "the value of plane_ballot\\(\\) must be bool, got u32", {}),
    (k_count_of_number, "the value of sync_units_count\\(\\) must be bool, got f32", {}),
    (k_shuffle_by_float, "the delta of plane_shuffle_up\\(\\) must be an integer, got f32", {}),
    (k_elect_with_argument, "plane_elect\\(\\) takes 0 arguments, got 1", {}),
    (k_sync_plane_with_argument, "sync_plane\\(\\) takes 0 arguments, got 1", {}),
    (k_print_array, "print\\(\\) writes scalars; index the array 'out'", {}),
    (k_print_centred, "the alignment '\\^' has no printf form", {}),
    (k_print_grouped, "digit grouping has no printf form", {}),
    (k_print_alternate, "'#' has no printf form", {}),
    (k_print_hex_of_signed, "'x' writes unsigned integers; cast i32 to an unsigned type", {}),
    (k_print_int_as_float, "i32 takes no precision", {}),
    (k_print_float_as_int, "the conversion 'd' does not apply to f32", {}),
    (k_print_bool_spec, "a bool takes no format spec", {}),
    (k_print_unsigned_sign, "printf writes no sign for the unsigned u32", {}),
    (k_print_zero_left, "zero padding with an explicit alignment has no printf form", {}),
    (k_print_runtime_sep, "print\\(\\)'s sep= must be a compile-time string", {}),
    (k_print_module, "print\\(\\) cannot write <module 'numpy'", {}),
    (k_print_too_many, "at most 32 run-time values \\(CUDA's printf limit\\), got 33", {}),
    (k_print_as_value, "print\\(\\) gives no value", {}),
    (k_print_dataclass, "writes scalars, not a Pair; print its fields \\(out, n\\)", {}),
]


@pytest.mark.parametrize(
    ("fn", "match", "spec"), BUILD_ERRORS, ids=lambda v: getattr(v, "__name__", "")
)
def test_refused_at_specialisation(fn, match, spec):
    k = kernel(fn)  # syntax is fine: the error comes with the first specialisation
    with pytest.raises(CompilationError) as info:
        k.definition(**spec)
    _check(info.value, fn, match)


def test_errors_inside_functions_name_the_function_and_its_line():
    from .funcs_with_errors import calls_bad

    with pytest.raises(CompilationError) as info:
        kernel(calls_bad).definition()
    err = info.value
    assert err.file is not None and err.file.endswith("funcs_with_errors.py")
    assert "@func 'bad' (inlined into kernel 'calls_bad')" in str(err)
    assert "cannot assign f64" in str(err)
    with open(err.file) as source:
        lines = source.read().splitlines()
    assert "# ERR" in lines[err.line - 1]


def test_comptime_values_must_be_hashable_and_known():
    def k(out: Array[u32], N: Comptime[int]):
        out[0] = N

    kern = kernel(k)
    with pytest.raises(ValueError, match="not hashable"):
        kern.definition(N=[1])
    with pytest.raises(ValueError, match="give the Comptime parameter N"):
        kern.definition()
    with pytest.raises(ValueError, match="M is not a Comptime parameter"):
        kern.definition(N=1, M=2)


def test_closures_over_non_constants_are_refused():
    table = {"a": 1}

    def k_closure(out: Array[u32]):
        out[0] = table  # ERR

    with pytest.raises(CompilationError) as info:
        kernel(k_closure).definition()
    _check(info.value, k_closure, "'table' is a dict")

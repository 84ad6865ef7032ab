"""Device functions: inlining, argument binding and returns from anywhere."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ruda_core.ir import Loop
from ruda_core.lang import (
    Array,
    Comptime,
    Float,
    SharedMemory,
    Tensor,
    f32,
    f64,
    func,
    i32,
    kernel,
    u32,
)
from ruda_core.runtime import CompilationError

from .helpers import run, walk


@func
def square(x):
    return x * x


@func
def first_negative(a: Array[f32], n: u32) -> i32:
    for k in range(n):
        if a[k] < 0:
            return i32(k)
    return -1


@func
def sign(v: Float) -> Float:
    if v < 0:
        return Float(-1)
    elif v > 0:
        return Float(1)
    return Float(0)


@func
def find_pair(a: Array[i32], n: u32, target: i32) -> u32:
    i = u32(0)
    while i < n:
        for j in range(2):
            if a[i] == target + j:
                return i
        i += 1
    return n


@func
def bumped(x):
    x += 1
    return x


@func
def fill(out: Array[i32], v: i32, COUNT: Comptime[int] = 2):
    for k in range(COUNT):
        out[k] = v


@kernel
def uses_funcs(x: Array[f32], ints: Array[i32], out: Array[f32], res: Array[i32], n: u32):
    out[0] = square(x[0])
    res[0] = first_negative(x, n)
    out[1] = sign(x[1])
    res[1] = i32(find_pair(ints, n, 7))
    v = 5
    w = bumped(v)
    res[2] = v
    res[3] = w
    fill(res, 9, COUNT=1)


def _reference(x: np.ndarray, ints: np.ndarray, n: int) -> tuple[list[float], list[int]]:
    pair = next((i for i in range(n) if ints[i] in (7, 8)), n)
    return [float(x[0]) ** 2, float(np.sign(x[1]))], [9, pair, 5, 6]


@settings(max_examples=40, deadline=None)
@given(
    x=st.lists(st.sampled_from([-2.0, -0.5, 0.0, 1.5, 3.0]), min_size=4, max_size=4),
    ints=st.lists(st.integers(5, 9), min_size=4, max_size=4),
    n=st.integers(0, 4),
)
def test_inlined_functions_compute_what_python_computes(x, ints, n):
    xs, ii = np.array(x, np.float32), np.array(ints, np.int32)
    out, res = np.zeros(2, np.float32), np.zeros(4, np.int32)
    run(uses_funcs.definition(), x=xs, ints=ii, out=out, res=res, n=n)
    want_out, want_res = _reference(xs, ii, n)
    assert out.tolist() == want_out
    assert res.tolist() == want_res


def test_first_negative_result_lands_in_res0_before_fill():
    @kernel
    def only_neg(x: Array[f32], res: Array[i32], n: u32):
        res[0] = first_negative(x, n)

    res = np.zeros(1, np.int32)
    run(only_neg.definition(), x=np.array([1, 2, -3, -4], np.float32), res=res, n=4)
    assert res[0] == 2
    run(only_neg.definition(), x=np.array([1, 2, 3, 4], np.float32), res=res, n=4)
    assert res[0] == -1


def test_only_functions_with_nested_returns_are_wrapped():
    d = uses_funcs.definition()
    wrappers = [s for s in walk(d.body) if isinstance(s, Loop)]
    assert len(wrappers) == 4  # first_negative, sign, find_pair (+ its while loop)
    names = {v.name for v in d.locals}
    assert {"_first_negative_result", "_first_negative_done", "_sign_result"} <= names
    assert "_square_result" not in names  # a single final return needs no result local


@func
def recurse(x):
    return recurse(x)


@func
def maybe(x: f32) -> f32:
    if x > 0:
        return x


@func
def nothing(out: Array[f32]):
    out[0] = 1.0


def _build(body):
    return kernel(body).definition()


def test_recursion_is_refused():
    def k(out: Array[f32]):
        out[0] = recurse(out[0])

    with pytest.raises(CompilationError, match="recursion"):
        _build(k)


def test_missing_return_path_is_refused():
    def k(out: Array[f32]):
        out[0] = maybe(out[0])

    with pytest.raises(CompilationError, match="can end without returning"):
        _build(k)


def test_using_a_function_without_result_is_refused():
    def k(out: Array[f32]):
        out[1] = nothing(out)

    with pytest.raises(CompilationError, match="returns no value"):
        _build(k)


def test_annotations_are_checked_at_the_call():
    def wrong_type(out: Array[f64]):
        out[0] = sign(out[0]) + first_negative(out, 2)

    with pytest.raises(CompilationError, match="argument 'a' of @func 'first_negative'"):
        _build(wrong_type)

    def runtime_comptime(out: Array[i32], n: u32):
        fill(out, 1, COUNT=n)

    with pytest.raises(CompilationError, match="must be a compile-time value"):
        _build(runtime_comptime)


@func
def div_mod(a, b):
    return a // b, a % b


@func
def ordered(a: f32, b: f32) -> tuple[f32, f32]:
    if a < b:
        return a, b
    return b, a


@func
def swapped(x, y):
    return y, x


@kernel
def uses_tuples(x: Array[i32], y: Array[f32], res: Array[i32], out: Array[f32]):
    q, r = div_mod(x[0], 7)
    res[0] = q
    res[1] = r
    lo, hi = ordered(y[0], 0.5)
    out[0] = lo
    out[1] = hi
    a, b = y[1], y[2]
    a, b = b, a
    out[2] = a
    out[3] = b
    u, v = x[1], x[2]
    u, v = swapped(u, v)
    res[2] = u
    res[3] = v


@settings(max_examples=30, deadline=None)
@given(
    ints=st.lists(st.integers(-50, 50), min_size=3, max_size=3),
    floats=st.lists(st.sampled_from([-1.0, 0.25, 0.5, 2.0]), min_size=3, max_size=3),
)
def test_tuples_unpack_like_python(ints, floats):
    x, y = np.array(ints, np.int32), np.array(floats, np.float32)
    res, out = np.zeros(4, np.int32), np.zeros(4, np.float32)
    run(uses_tuples.definition(), x=x, y=y, res=res, out=out)
    q, r = divmod(ints[0], 7)
    assert res.tolist() == [q, r, ints[2], ints[1]]
    lo, hi = sorted([floats[0], 0.5])
    assert out.tolist() == [lo, hi, floats[2], floats[1]]


@func
def fibonacci(a, b, n: u32):
    for _ in range(n):
        a, b = b, a + b
    return a


@func
def distance(a: i32, b: i32) -> i32:
    if a > b:
        a, b = b, a
    return b - a


@kernel
def unpacks_in_loops(out: Array[i32], n: u32):
    a = 0
    b = 1
    for k in range(n):
        a, b = b, a + b
        out[k] = a
    out[n] = fibonacci(0, 1, n)
    out[n + 1] = distance(7, 3)
    rows, cols = 2, 3  # compile-time values, bound once
    tile = SharedMemory(i32, rows * cols)
    tile[0] = i32(rows * cols)
    out[n + 2] = tile[0]


def test_names_an_unpacking_assigns_are_assigned_as_by_an_equals_sign():
    """Names first bound to constants and then assigned in a loop by ``a, b = b, a + b`` carry
    each turn's values (they were folded as the constants: every turn gave 1), a @func's
    parameters so reassigned are its own, and names an unpacking alone binds keep their
    compile-time values."""
    n = 10
    out = np.zeros(n + 3, np.int32)
    run(unpacks_in_loops.definition(), out=out, n=n)
    assert out.tolist() == [1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 55, 4, 6]


SHADOWED = 5


@kernel
def reads_before_unpacking(out: Array[i32]):
    out[0] = SHADOWED  # noqa: F823
    SHADOWED, other = 3, 4  # noqa: F841


def test_a_name_read_before_an_unpacking_assigns_it_is_refused():
    """As Python's ``UnboundLocalError``: the global of that name is not read instead."""
    with pytest.raises(CompilationError, match="'SHADOWED' is used before it is assigned"):
        reads_before_unpacking.definition()


@func
def one_or_two(x: f32):
    if x > 0:
        return x, x
    return x


@func
def bad_tuple_annotation(x: f32) -> tuple[f32, ...]:
    return x, x


def test_tuple_misuse_is_refused():
    def unused_tuple(out: Array[f32]):
        out[0] = div_mod(out[1], 2.0)

    with pytest.raises(CompilationError, match="returns 2 values; unpack them"):
        _build(unused_tuple)

    def too_many(out: Array[f32]):
        a, b, c = div_mod(out[1], 2.0)
        out[0] = a + b + c

    with pytest.raises(CompilationError, match="cannot unpack 2 values into 3"):
        _build(too_many)

    def mixed(out: Array[f32]):
        a, b = one_or_two(out[0])
        out[0] = a + b

    with pytest.raises(CompilationError, match="every return of this function must give"):
        _build(mixed)

    def ellipsis(out: Array[f32]):
        a, b = bad_tuple_annotation(out[0])
        out[0] = a + b

    with pytest.raises(CompilationError, match=r"tuple\[f32, i32\]"):
        _build(ellipsis)

    def not_a_tuple(out: Array[f32]):
        a, b = out[0]
        out[0] = a + b

    with pytest.raises(CompilationError, match="only a tuple or a @func"):
        _build(not_a_tuple)


def test_view_misuse_is_refused():
    def stepped(out: Array[f32]):
        v = out[0:8:2]
        v[0] = 1.0

    with pytest.raises(CompilationError, match="takes no step"):
        _build(stepped)

    def negative(out: Array[f32]):
        v = out[-2:]
        v[0] = 1.0

    with pytest.raises(CompilationError, match="not negative, got -2"):
        _build(negative)

    def of_tensor(t: Tensor[f32]):
        v = t[1:]
        v[0] = 1.0

    with pytest.raises(CompilationError, match="is a tensor"):
        kernel(of_tensor).definition(t=1)


def test_a_view_indexes_its_array_from_its_offset():
    @kernel
    def shifted(x: Array[f32], out: Array[f32]):
        v = x[2:6]
        w = out[1:]
        w[0] = v[0]
        w[1] = v[3]
        w[2] = f32(v.len())

    x, out = np.arange(8, dtype=np.float32), np.zeros(4, np.float32)
    run(shifted.definition(), x=x, out=out)
    assert out.tolist() == [0, 2, 5, 4]


def test_shared_memory_sized_at_launch_needs_a_u32_parameter():
    def signed(out: Array[f32], n: i32):
        tile = SharedMemory(f32, n)
        tile[0] = 1.0
        out[0] = tile[0]

    with pytest.raises(CompilationError, match="needs a u32 parameter, not i32"):
        _build(signed)

    def sized(out: Array[f32], n: u32):
        tile = SharedMemory(f32, n)
        out[0] = f32(tile.len())

    defn = kernel(sized).definition()
    (tile,) = defn.shared
    assert tile.size is not None and tile.size.name == "n" and defn.shared_bytes == 0
    assert defn.dynamic_shared_bytes([np.uint32(5)]) == 32  # 20 bytes, rounded up to 16

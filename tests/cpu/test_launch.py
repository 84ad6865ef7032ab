"""Launch geometry, batching, thread safety, errors and the generated source."""

from __future__ import annotations

import gc
import linecache
import threading
import traceback

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from launch_modes import run

import ruda_cpu.executor as executor
from ruda_core.ir import BuiltinKind, Elem, ExecutionMode, Op
from ruda_core.ir.bounds import lower_bounds
from ruda_core.runtime import CompileOptions, ComputeClient, LaunchConfigError, LaunchError
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_cpu.compiler import CpuCompiler

from .kernels import FILE, cpu_kernel

U32, F32, BOOL = Elem.U32, Elem.F32, Elem.BOOL
KINDS = [k for k in BuiltinKind if k not in (BuiltinKind.PLANE_DIM, BuiltinKind.UNIT_POS_PLANE)]


def builtins_kernel() -> KernelBuilder:
    """out[k * total + ABSOLUTE_POS] = builtin k, for every position builtin."""
    kb = KernelBuilder("builtins", file=FILE)
    po = kb.array("o", U32)
    total = kb.let(Op.MUL, U32, builtin("RUDA_DIM"), builtin("RUDA_COUNT"))
    lane = builtin("ABSOLUTE_POS")
    for k, kind in enumerate(KINDS):
        at = kb.let(Op.ADD, U32, kb.let(Op.MUL, U32, total, const(k, U32)), lane)
        kb.store(po, at, builtin(kind.name))
    return kb


def expected_builtins(count: tuple[int, int, int], dim: tuple[int, int, int]) -> np.ndarray:
    cx, cy, cz = count
    dx, dy, dz = dim
    total = cx * cy * cz * dx * dy * dz
    out = np.zeros((len(KINDS), total), np.int64)
    for rz in range(cz):
        for ry in range(cy):
            for rx in range(cx):
                for uz in range(dz):
                    for uy in range(dy):
                        for ux in range(dx):
                            ax, ay, az = rx * dx + ux, ry * dy + uy, rz * dz + uz
                            absolute = (az * cy * dy + ay) * cx * dx + ax
                            value = {
                                "ABSOLUTE_POS": absolute,
                                "ABSOLUTE_POS_X": ax,
                                "ABSOLUTE_POS_Y": ay,
                                "ABSOLUTE_POS_Z": az,
                                "UNIT_POS": (uz * dy + uy) * dx + ux,
                                "UNIT_POS_X": ux,
                                "UNIT_POS_Y": uy,
                                "UNIT_POS_Z": uz,
                                "RUDA_POS": (rz * cy + ry) * cx + rx,
                                "RUDA_POS_X": rx,
                                "RUDA_POS_Y": ry,
                                "RUDA_POS_Z": rz,
                                "RUDA_DIM": dx * dy * dz,
                                "RUDA_DIM_X": dx,
                                "RUDA_DIM_Y": dy,
                                "RUDA_DIM_Z": dz,
                                "RUDA_COUNT": cx * cy * cz,
                                "RUDA_COUNT_X": cx,
                                "RUDA_COUNT_Y": cy,
                                "RUDA_COUNT_Z": cz,
                            }
                            for k, kind in enumerate(KINDS):
                                out[k, absolute] = value[kind.name]
    return out.reshape(-1)


@pytest.mark.parametrize(
    ("count", "dim"),
    [
        ((5, 1, 1), (8, 1, 1)),
        ((3, 2, 1), (4, 3, 1)),
        ((2, 3, 2), (2, 2, 3)),
        ((1, 1, 1), (4, 2, 2)),
        ((7, 1, 1), (1, 1, 1)),
        ((2, 2, 2), (1, 1, 1)),
        ((1, 4, 1), (3, 1, 1)),
    ],
)
def test_every_builtin_in_1d_2d_and_3d_launches(
    cpu: ComputeClient, count: tuple, dim: tuple
) -> None:
    want = expected_builtins(count, dim)
    (out,) = run(cpu, builtins_kernel().build(), [np.zeros(want.size, np.uint32)], (), count, dim)
    assert out.tolist() == want.tolist()


def test_builtins_across_batch_boundaries(
    cpu: ComputeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "LANES_PER_BATCH", 20)
    for count, dim in [((5, 3, 2), (3, 2, 1)), ((11, 1, 1), (6, 1, 1)), ((9, 2, 1), (1, 1, 1))]:
        want = expected_builtins(count, dim)
        zeros = np.zeros(want.size, np.uint32)
        (out,) = run(cpu, builtins_kernel().build(), [zeros], (), count, dim)
        assert out.tolist() == want.tolist()


def saxpy() -> KernelBuilder:
    kb = KernelBuilder("saxpy", file=FILE)
    px, py = kb.array("x", F32), kb.array("y", F32)
    alpha = kb.scalar("alpha", F32)
    i = builtin("ABSOLUTE_POS")
    with kb.if_(kb.let(Op.LT, BOOL, i, kb.let(Op.LEN, U32, py))):
        ax = kb.let(Op.MUL, F32, alpha, kb.load(px, i))
        kb.store(py, i, kb.let(Op.ADD, F32, ax, kb.load(py, i)))
    return kb


def test_a_launch_bigger_than_one_batch(cpu: ComputeClient) -> None:
    n = 3 * executor.LANES_PER_BATCH + 1234
    x = np.arange(n, dtype=np.float32)
    arrays = [x, np.ones(n, np.float32)]
    _, y = run(cpu, saxpy().build(), arrays, [2.0], -(-n // 256), 256, ExecutionMode.CHECKED)
    assert (y == 2 * np.arange(n, dtype=np.float32) + 1).all()


def test_one_kernel_runs_on_four_threads_at_once(cpu: ComputeClient) -> None:
    """Each thread launches on its own stream, whose worker runs the server's one compiled
    kernel: four workers run it at once."""
    defn = saxpy().build()
    n = 200_000
    xs = [np.full(n, t + 1, np.float32) for t in range(4)]
    ys = [np.zeros(n, np.float32) for _ in range(4)]
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for _ in range(5):
                arrays = [xs[t], ys[t]]
                _, ys[t] = run(cpu, defn, arrays, [1], -(-n // 128), 128, ExecutionMode.CHECKED)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t in range(4):
        assert (ys[t] == 5 * (t + 1)).all()


def test_argument_mismatches_are_launch_config_errors() -> None:
    kernel = cpu_kernel(saxpy().build())
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchConfigError, match="saxpy takes 2 buffers"):
        kernel((1, 1, 1), (4, 1, 1), [x], [np.float32(1)], [4, 4])
    with pytest.raises(LaunchConfigError, match="float32"):
        kernel((1, 1, 1), (4, 1, 1), [x, x.view(np.int32)], [np.float32(1)], [4, 4])
    with pytest.raises(LaunchConfigError, match="metadata"):
        kernel((1, 1, 1), (4, 1, 1), [x, x], [np.float32(1)], [4])


def test_failures_inside_a_kernel_are_launch_errors_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel = cpu_kernel(saxpy().build())
    x = np.zeros(4, np.float32)

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    from ruda_cpu import lockstep

    monkeypatch.setattr(lockstep, "load_ro", broken)
    with pytest.raises(LaunchError, match=r"saxpy.*boom") as info:
        kernel((1, 1, 1), (4, 1, 1), [x, x.copy()], [np.float32(1)], [4, 4])
    frames = traceback.extract_tb(info.value.__cause__.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<ruda-numpy:saxpy:")]
    assert generated and "load_ro" in (generated[0].line or "")


def test_a_dropped_kernel_takes_its_generated_lines_out_of_linecache() -> None:
    before = set(linecache.cache)
    first = cpu_kernel(saxpy().build())
    second = cpu_kernel(saxpy().build())  # the same source: lines of its own
    names = set(linecache.cache) - before
    assert len(names) == 2 and all(n.startswith("<ruda-numpy:saxpy:") for n in names), names
    del first
    gc.collect()
    assert len(names & set(linecache.cache)) == 1, "the kernel still alive keeps its lines"
    del second
    gc.collect()
    assert not names & set(linecache.cache)


def test_zero_sized_launch_runs_nothing() -> None:
    kernel = cpu_kernel(saxpy().build())
    y = np.ones(4, np.float32)
    kernel((0, 1, 1), (4, 1, 1), [y.copy(), y], [np.float32(1)], [4, 4])
    assert (y == 1).all()


def test_generated_source_is_readable_and_deterministic() -> None:
    defn = saxpy().build()
    lowered = lower_bounds(defn, ExecutionMode.CHECKED)
    first = CpuCompiler().compile(lowered, CompileOptions(), ExecutionMode.CHECKED)
    again = CpuCompiler().compile(
        lower_bounds(defn, ExecutionMode.CHECKED), CompileOptions(), ExecutionMode.CHECKED
    )
    assert first.source == again.source
    text = first.source
    assert text.startswith("# ruda NumPy kernel saxpy (checked, plane_dim 32)")
    assert "def saxpy(g, x, y, alpha, x_len, y_len):" in text
    assert "# <test>:" in text
    assert all(";" not in line for line in text.splitlines())
    compile(text, "<check>", "exec")
    assert first.plane_dim == 32 and first.written == (1,)


def test_clashing_names_are_renamed(cpu: ComputeClient) -> None:
    # the kernel, a parameter and a local named like runtime globals
    kb = KernelBuilder("np", file=FILE)
    p = kb.array("L", U32)
    g = kb.local("g", U32)
    kb.assign(g, const(3, U32))
    kb.store(p, builtin("ABSOLUTE_POS"), g)
    (out,) = run(cpu, kb.build(), [np.zeros(4, np.uint32)], dim=4)
    assert (out == 3).all()


@settings(max_examples=30, deadline=None)
@given(
    count=st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3)),
    dim=st.tuples(st.integers(1, 5), st.integers(1, 3), st.integers(1, 2)),
    batch=st.integers(1, 64),
)
def test_builtins_for_random_geometries(
    cpu: ComputeClient, count: tuple, dim: tuple, batch: int
) -> None:
    old = executor.LANES_PER_BATCH
    executor.LANES_PER_BATCH = batch
    try:
        want = expected_builtins(count, dim)
        zeros = np.zeros(want.size, np.uint32)
        (out,) = run(cpu, builtins_kernel().build(), [zeros], (), count, dim)
    finally:
        executor.LANES_PER_BATCH = old
    assert out.tolist() == want.tolist()

"""Golden files: the exact source generated for the representative kernels of ``kernels.py``.

A change to generated code shows up here as a diff to review. After an intended change,
regenerate the files and review them with git diff::

    RUDA_UPDATE_GOLDEN=1 python -m pytest tests/codegen/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ruda_core.codegen import CFamilyEmitter, Dialect
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .kernels import KERNELS

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("RUDA_UPDATE_GOLDEN") == "1"

#: Targets with their file suffix: CUDA for sm_90, and OpenCL with and without extensions, and
#: with the subgroups of Intel's OpenCL 3.0 drivers (a required width of 16).
TARGETS: dict[str, tuple[Dialect, str]] = {
    "cuda": (CudaDialect(90), "cu"),
    "cuda_sm52": (CudaDialect(52), "cu"),
    "opencl": (OpenCLDialect(frozenset({"fp64", "int64_atomics"})), "cl"),
    "opencl_full": (
        OpenCLDialect(
            frozenset({"fp16", "fp64", "int64_atomics", "subgroups", "subgroup_shuffle"})
        ),
        "cl",
    ),
    "opencl_intel": (
        OpenCLDialect(
            frozenset(
                {
                    "fp16",
                    "fp64",
                    "int64_atomics",
                    "intel_reqd_subgroup_size",
                    "intel_subgroups",
                    "opencl_c_subgroups",
                    "subgroup_arith",
                    "subgroup_ballot",
                    "subgroup_shuffle",
                    "subgroup_shuffle_relative",
                    "work_group_collectives",
                    "atomic_scope_device",
                }
            ),
            plane_dim=16,
        ),
        "cl",
    ),
}
CASES = (
    [("cuda", name) for name in KERNELS]
    + [("cuda_sm52", name) for name in ("atomics", "plane_ops")]
    + [("opencl", name) for name in KERNELS if not name.startswith(("plane_", "whole_cube"))]
    + [
        ("opencl_full", name)
        for name in ("half_and_bool", "plane_ops", "plane_lanes", "atomics", "whole_cube_counts")
    ]
    + [("opencl_intel", name) for name in ("plane_ops", "plane_lanes", "barriers_and_counters")]
)


@pytest.mark.parametrize(("target", "kernel"), CASES, ids=[f"{t}-{k}" for t, k in CASES])
def test_generated_source_matches_golden_file(target: str, kernel: str) -> None:
    dialect, suffix = TARGETS[target]
    source = CFamilyEmitter(dialect).emit(KERNELS[kernel]()).source
    path = GOLDEN / f"{kernel}.{target}.{suffix}"
    if UPDATE:
        path.write_text(source)
    assert path.exists(), f"{path.name} is missing; run with RUDA_UPDATE_GOLDEN=1 to create it"
    assert source == path.read_text(), (
        f"{path.name} differs; if the change is intended, regenerate with RUDA_UPDATE_GOLDEN=1 "
        "and review the diff"
    )

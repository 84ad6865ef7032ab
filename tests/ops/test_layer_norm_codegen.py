"""The LayerNorm kernels generate source for every C-family target, element type and reduction
path, without a driver (the CUDA path cannot run on a machine without a GPU, so this is its
check here)."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.lang import bf16, f16, f32, f64
from ruda_core.ops import layer_norm_kernels as kernels
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

ROW_KERNELS = [kernels.layer_norm_forward, kernels.layer_norm_grad_input]
AFFINE_KERNELS = [kernels.layer_norm_grad_affine_partials, kernels.layer_norm_grad_affine_finish]
ELEMS = [(f16, f32), (bf16, f32), (f32, f32), (f64, f64)]
CUDA = CudaDialect(90)
OPENCL = OpenCLDialect(frozenset({"bf16", "fp16", "fp64", "subgroups"}))


def _cases():
    for dialect in (CUDA, OPENCL):
        for data, acc in ELEMS:
            for planes in (True, False):
                for k in ROW_KERNELS:
                    yield dialect, k, {"Float": data, "Acc": acc, "PLANES": planes}
            for k in AFFINE_KERNELS:
                yield dialect, k, {"Float": data, "Acc": acc}


CASES = list(_cases())


def _path(spec: dict[str, object]) -> str:
    if "PLANES" not in spec:
        return ""
    return "-planes" if spec["PLANES"] else "-shared"


@pytest.mark.parametrize(
    ("dialect", "kernel", "spec"),
    CASES,
    ids=[f"{type(d).__name__}-{k.name}-{s['Float']}{_path(s)}" for d, k, s in CASES],
)
def test_kernels_emit(dialect, kernel, spec):
    source = CFamilyEmitter(dialect).emit(kernel.definition(**spec)).source
    assert kernel.name in source

"""The LayerNorm kernels generate source for every C-family target, element type, line width
and reduction path without a driver, and the CUDA source compiles with NVRTC (the CUDA path
cannot run on a machine without a GPU, so this is its check here)."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.lang import bf16, f16, f32, f64
from ruda_core.ops import layer_norm_kernels as kernels
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect
from tests.codegen.test_compile import _nvrtc_compile

ROW_KERNELS = [kernels.layer_norm_forward, kernels.layer_norm_grad_input]
HELD_KERNELS = [kernels.layer_norm_forward_held, kernels.layer_norm_grad_input_held]
ELEMS = [(f16, f32), (bf16, f32), (f32, f32), (f64, f64)]
CUDA = CudaDialect(90)
OPENCL = OpenCLDialect(frozenset({"bf16", "fp16", "fp64", "subgroups"}))


def _cases():
    for dialect in (CUDA, OPENCL):
        for data, acc in ELEMS:
            types = {"Float": data, "Acc": acc}
            for planes in (True, False):
                for k in ROW_KERNELS:
                    yield dialect, k, {**types, "PLANES": planes}
                for k in HELD_KERNELS:
                    for line in (1, min(8, 16 // data.elem.nbytes)):
                        for plane_rows in (True, False) if planes else (False,):
                            yield (
                                dialect,
                                k,
                                {
                                    **types,
                                    "N": line,
                                    "ITEMS": 4,
                                    "PLANE_ROWS": plane_rows,
                                    "PLANES": planes,
                                },
                            )
            for line in (1, 4):
                yield dialect, kernels.layer_norm_grad_affine_partials, {**types, "N": line}
            yield dialect, kernels.layer_norm_grad_affine_finish, types


CASES = list(_cases())


def _path(spec: dict[str, object]) -> str:
    path = ""
    if "PLANES" in spec:
        path = "-planes" if spec["PLANES"] else "-shared"
    if spec.get("PLANE_ROWS"):
        path += "-plane-rows"
    if "N" in spec:
        path += f"-line{spec['N']}"
    return path


@pytest.mark.parametrize(
    ("dialect", "kernel", "spec"),
    CASES,
    ids=[f"{type(d).__name__}-{k.name}-{s['Float']}{_path(s)}" for d, k, s in CASES],
)
def test_kernels_emit(dialect, kernel, spec):
    source = CFamilyEmitter(dialect).emit(kernel.definition(**spec)).source
    assert kernel.name in source
    if isinstance(dialect, CudaDialect):
        ok, log = _nvrtc_compile(source, 90)
        assert ok, log

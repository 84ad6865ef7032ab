"""Portable operations built from kernels, dispatching to a runtime's native ones.

``layer_norm`` and ``layer_norm_backward`` (:mod:`.layer_norm`): LayerNorm over the last axis
of a contiguous ``(rows, features)`` tensor and its gradients, with PyTorch's semantics. Each
runs the runtime's native implementation where ``Runtime.has_native_layer_norm()`` says there
is one, else ruda's portable kernels on any device; ``portable_layer_norm`` and
``portable_layer_norm_backward`` always run the portable kernels. ``matmul`` (:mod:`.matmul`):
the product of two row-major matrices with f32 sums, tensor cores (``cmma``) where the device
has them, tiles chosen by the autotuner. The device-wide primitives, NumPy-named, on every
device: ``sum``, ``min``, ``max`` (:mod:`.reduce`), ``cumsum`` (:mod:`.scan`), ``sort`` and
``argsort`` (:mod:`.sorting`), ``bincount`` (:mod:`.bincount`). This package never imports a
driver.
"""

from .bincount import bincount
from .layer_norm import (
    layer_norm,
    layer_norm_backward,
    portable_layer_norm,
    portable_layer_norm_backward,
)
from .matmul import matmul
from .reduce import max, min, sum
from .scan import cumsum
from .sorting import argsort, sort

__all__ = [
    "argsort",
    "bincount",
    "cumsum",
    "layer_norm",
    "layer_norm_backward",
    "matmul",
    "max",
    "min",
    "portable_layer_norm",
    "portable_layer_norm_backward",
    "sort",
    "sum",
]

"""An import path kept for existing code: the arguments of the native LayerNorm hooks live in
:mod:`ruda_core.runtime.layer_norm_args`."""

from .layer_norm_args import TensorBuffer

__all__ = ["TensorBuffer"]

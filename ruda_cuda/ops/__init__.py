"""The CUDA runtime's native operations, which the ``cuda`` plugin registers with
``ruda_core.ops`` (its ``ruda_native_ops`` hook).

``layer_norm`` (:mod:`.layer_norm`): LayerNorm and its gradients through hand-written CUDA C++
kernels (``layer_norm.cu``, built as :class:`~.source_task.CudaSourceTask` values by
:mod:`.layer_norm_tasks`, their shape classes in :mod:`.layer_norm_plan`). Importing this
package imports no driver.
"""

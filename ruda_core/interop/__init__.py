"""Memory shared with other libraries without a copy: DLPack both ways
(:mod:`.dlpack`), the CUDA array interface (:mod:`.cuda_array_interface`) and the checks and
stream ordering of foreign arrays (:mod:`.foreign`). ``RudaTensor`` exports through these;
``ruda_core.from_dlpack`` imports. Nothing here imports a driver.
"""

from .foreign import Imported, import_cuda_array_interface, import_dlpack

__all__ = ["Imported", "import_cuda_array_interface", "import_dlpack"]

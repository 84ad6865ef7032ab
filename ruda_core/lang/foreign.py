"""Foreign arrays as kernel arguments: any DLPack (or CUDA array interface) array of the launch's
device where a kernel takes ``Array[T]`` or ``Tensor[T]``.

ruda's own argument types never reach this module: a launch binds its arguments as usual, and
only when that fails with a ``LaunchConfigError`` does :meth:`Kernel.launch` ask
:func:`import_arguments` whether foreign arrays were the reason, so the plain launch path pays
nothing. Each foreign array becomes a ``RudaTensor`` over its memory (shape and strides taken
from it), imported on the launching client's current stream, so on CUDA the launch is ordered
after the producer's stream; the usual binders then check its element type and layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..runtime.client import ComputeClient
from ..tensor import RudaTensor
from .args import ArrayArg, TensorArg
from .syntax import KernelParam

__all__ = ["OWN_TYPES", "import_arguments", "is_foreign", "shown"]

#: ruda's own argument types for ``Array`` and ``Tensor`` parameters
OWN_TYPES = (ArrayArg, TensorArg, RudaTensor)


def is_foreign(arg: object) -> bool:
    """Whether ``arg`` is another library's array (it exports DLPack or the CUDA array
    interface and is none of ruda's argument types)."""
    kind = type(arg)
    if kind in OWN_TYPES:
        return False
    return hasattr(kind, "__dlpack__") or hasattr(kind, "__cuda_array_interface__")


def shown(arg: object) -> str:
    """``arg`` for an error message: its type for a foreign array, whose repr may be large or
    read a device (a CUDA tensor's repr waits for the GPU), else its repr."""
    return f"a {type(arg).__name__}" if is_foreign(arg) else repr(arg)


def import_arguments(
    client: ComputeClient, params: Sequence[KernelParam], args: Sequence[object]
) -> tuple[object, ...] | None:
    """``args`` with every foreign array bound to an ``Array`` or ``Tensor`` parameter replaced
    by a ``RudaTensor`` over its memory on ``client``; None when there is none (the launch
    failed for another reason).

    :raises InteropError: for a foreign array ruda cannot use as is (another device, an
        element type it lacks, negative strides, misalignment); nothing has been enqueued.
    """
    if len(args) != len(params):
        return None
    converted = list(args)
    found = False
    for k, (param, arg) in enumerate(zip(params, args, strict=True)):
        if param.kind in ("array", "tensor") and is_foreign(arg):
            converted[k] = RudaTensor.from_dlpack(arg, client)
            found = True
    return tuple(converted) if found else None

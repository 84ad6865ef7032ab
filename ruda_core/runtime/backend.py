"""``Runtime``: ties a compiler, a server and a device type together (the seed's ``backend.rs``).

Every member of the seed's trait is a classmethod here, with the seed's defaults. A backend
subclasses it; the plugin loader refuses a subclass that leaves an abstract member undefined.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from ..errors import BackendUnavailable
from .client import ComputeClient
from .compiler import Compiler
from .device import DeviceId
from .layer_norm_args import TensorBuffer
from .properties import TargetProperties
from .server import ComputeServer

__all__ = ["LazyType", "Runtime"]


class LazyType:
    """A class attribute naming a type by ``"module:Name"``, imported on first access.

    Lets a ``Runtime`` declare its ``server`` type without importing the driver library that
    the server's module needs: ``server = LazyType("ruda_cuda.server:CudaServer", "pip install
    'ruda[cuda]'")``.

    :param install_hint: how to install what the module imports, for the error.
    :raises BackendUnavailable: on access, when the module imports a package that is not
        installed (a missing module of the backend's own package is a ``ModuleNotFoundError``).
    """

    def __init__(self, target: str, install_hint: str = "") -> None:
        self.module, _, self.name = target.partition(":")
        self.install_hint = install_hint
        self.attribute = self.name

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as exc:
            own = self.module.partition(".")[0]
            if exc.name is None or exc.name.partition(".")[0] == own:
                raise
            where = f"{owner.__name__}.{self.attribute}" if owner is not None else self.module
            hint = f"; install it with {self.install_hint}" if self.install_hint else ""
            raise BackendUnavailable(
                f"{where} needs the package {exc.name!r}, which is not installed{hint}"
            ) from exc
        return getattr(module, self.name)


class Runtime(ABC):
    """A backend: its ``compiler``, ``server`` and ``device`` types and its device clients."""

    #: The compiler class turning IR into this backend's source.
    compiler: ClassVar[type[Compiler]]
    #: The compute server class running kernels on one device.
    server: ClassVar[type[ComputeServer]]
    #: The device class (hashable; ``str(device)`` is its ``"name:index"`` form).
    device: ClassVar[type[Hashable]]

    @classmethod
    @abstractmethod
    def client(cls, device: Any) -> ComputeClient:
        """The one client of ``device``, initialising its server on first use (thread-safe)."""

    @classmethod
    @abstractmethod
    def name(cls, client: ComputeClient) -> str:
        """The runtime's name on the client's device."""

    @classmethod
    def has_native_layer_norm(cls) -> bool:
        """Whether this runtime supplies native LayerNorm forward and all first-order gradients."""
        return False

    @classmethod
    def layer_norm(
        cls,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        bias: TensorBuffer | None,
        epsilon: float,
    ) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer]:
        """Native LayerNorm, returning output, mean and reciprocal standard deviation."""
        raise NotImplementedError("runtime does not supply native LayerNorm")

    @classmethod
    def layer_norm_backward(
        cls,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        grad: TensorBuffer,
        mean: TensorBuffer,
        rstd: TensorBuffer,
    ) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer]:
        """Native LayerNorm gradients, returning input, weight and bias gradients."""
        raise NotImplementedError("runtime does not supply native LayerNorm backward")

    @classmethod
    def autotune_driver_fingerprint(cls, client: ComputeClient) -> str | None:
        """Stable loaded driver/runtime identity for persistent autotuning; None means
        session-only caches. A device ordinal or API major version alone is not enough. The
        default asks the client's server (``ComputeServer.driver_fingerprint``), which is None
        unless the backend knows its driver stack."""
        return client.server.driver_fingerprint()

    @classmethod
    def require_array_lengths(cls) -> bool:
        """True if global input array lengths should be added to kernel info."""
        return False

    @classmethod
    @abstractmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        """The most cubes that can be launched along each axis."""

    @classmethod
    @abstractmethod
    def can_read_tensor(cls, shape: Sequence[int], strides: Sequence[int]) -> bool:
        """Whether a tensor with ``shape`` and ``strides`` can be read as is; if not, make it
        contiguous before reading."""

    @classmethod
    @abstractmethod
    def target_properties(cls) -> TargetProperties:
        """Properties of the target hardware architecture."""

    @classmethod
    @abstractmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        """All devices available under ``type_id`` (0: every type). ``info`` is the server's
        enumeration info, or None for the driver's defaults."""

    @classmethod
    def enumerate_all_devices(cls, info: Any) -> list[DeviceId]:
        """All devices the runtime can handle."""
        return cls.enumerate_devices(0, info)

"""``Runtime``: ties a compiler, a server and a device type together (CubeCL's ``backend.rs``).

Every member of CubeCL's ``Runtime`` trait is a classmethod here, with the trait's defaults, and
nothing more: what a native operation needs beyond the trait's LayerNorm hooks is registered
with the operations (:mod:`ruda_core.ops.native`). A backend subclasses it, or
:class:`IndexedRuntime`, which supplies the ``client``, ``can_read_tensor`` and
``autotune_driver_fingerprint`` every in-tree driver shares; the plugin loader refuses a
subclass that leaves an abstract member undefined. :class:`LazyType` lets a runtime name its
server class without importing the driver library the server needs. Nothing here imports a
driver.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from ..errors import BackendUnavailable
from .client import ComputeClient
from .compiler import Compiler
from .device import DeviceId, IndexedDevice
from .layer_norm_args import TensorBuffer
from .layout import is_contiguous_or_pitched
from .properties import TargetProperties
from .server import ComputeServer

__all__ = ["IndexedRuntime", "LazyType", "Runtime"]


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
    """A backend: its ``compiler``, ``server`` and ``device`` types and its device clients.

    Each member says who reads it; a member no ruda code reads is kept because the Runtime API
    reference lists it, for code written against CubeCL's trait.
    """

    #: The compiler class turning IR into this backend's source. Read by code that builds on
    #: another backend's parts (``examples/ruda-hostmem`` reuses the reference compiler); a
    #: server compiles with its own instance, ``ComputeServer.compiler``.
    compiler: ClassVar[type[Compiler]]
    #: The compute server class running kernels on one device. Read by ``client`` (through
    #: :meth:`IndexedRuntime.new_server`) and by drivers that derive a server from another
    #: backend's. A :class:`LazyType` where importing it would import the driver library.
    server: ClassVar[type[ComputeServer]]
    #: The device class (hashable; ``str(device)`` is its ``"name:index"`` form). Read by
    #: ``ruda_core.client(device)``, which finds a device object's runtime by it.
    device: ClassVar[type[Hashable]]

    @classmethod
    @abstractmethod
    def client(cls, device: Any) -> ComputeClient:
        """The one client of ``device``, initialising its server on first use (thread-safe).
        Read by ``ruda_core.client()`` and the device probe; its client answers
        ``client.runtime`` with this class."""

    @classmethod
    @abstractmethod
    def name(cls, client: ComputeClient) -> str:
        """The runtime's name on the client's device. Read by ``ComputeClient.name()`` and by
        ``runtime_environment`` (part of every tuning key)."""

    @classmethod
    def has_native_layer_norm(cls) -> bool:
        """Whether this runtime supplies native LayerNorm forward and all first-order gradients.
        Read by ``ruda_core.ops.layer_norm``/``layer_norm_backward`` before they dispatch, for a
        runtime with no native LayerNorm registered in :mod:`ruda_core.ops.native` (a registered
        one is used whatever this says)."""
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
        """Native LayerNorm, returning output, mean and reciprocal standard deviation. Called by
        ``ruda_core.ops.layer_norm`` with checked operands when :meth:`has_native_layer_norm`
        and no native LayerNorm is registered for this runtime."""
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
        """Native LayerNorm gradients, returning input, weight and bias gradients. Called by
        ``ruda_core.ops.layer_norm_backward`` as :meth:`layer_norm` is."""
        raise NotImplementedError("runtime does not supply native LayerNorm backward")

    @classmethod
    def autotune_driver_fingerprint(cls, client: ComputeClient) -> str | None:
        """Stable loaded driver/runtime identity for persistent autotuning; None (the default:
        an unknown backend) means session-only caches. A device ordinal or API major version
        alone is not enough. Read by ``runtime_environment``, whose keys select persistent
        tuning results."""
        return None

    @classmethod
    def require_array_lengths(cls) -> bool:
        """True if global input array lengths should be added to kernel info. No ruda code
        reads it: every launch passes every array's length in its metadata (the launch ABI)."""
        return False

    @classmethod
    @abstractmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        """The most cubes that can be launched along each axis, known without a device. No
        ruda code reads it: a launch is checked against its device's
        ``properties().max_ruda_count``, which may be lower."""

    @classmethod
    @abstractmethod
    def can_read_tensor(cls, shape: Sequence[int], strides: Sequence[int]) -> bool:
        """Whether a tensor with ``shape`` and ``strides`` can be read as is; if not, make it
        contiguous before reading. Read by ``ComputeClient.read_tensor``/``read_tensor_async``,
        which refuse any other layout."""

    @classmethod
    @abstractmethod
    def target_properties(cls) -> TargetProperties:
        """Properties of the target hardware architecture, known without a device. No ruda
        code reads it: code generation reads the device's ``compile_options()``."""

    @classmethod
    @abstractmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        """All devices available under ``type_id`` (0: every type). ``info`` is the server's
        enumeration info, or None for the driver's defaults. Read by
        ``ComputeClient.enumerate_devices`` and ``device_count``."""

    @classmethod
    def enumerate_all_devices(cls, info: Any) -> list[DeviceId]:
        """All devices the runtime can handle. Read by ``ComputeClient.enumerate_all_devices``
        and ``device_count_total``."""
        return cls.enumerate_devices(0, info)


class IndexedRuntime(Runtime):
    """A :class:`Runtime` whose devices are :class:`IndexedDevice` values and whose server is
    made from one device: it supplies the ``client``, ``name`` (the device class's
    ``backend``), ``can_read_tensor`` and ``autotune_driver_fingerprint`` (the server's) that
    every in-tree driver shares. A subclass still defines ``max_ruda_count``,
    ``target_properties`` and ``enumerate_devices``, and sets ``server`` (or overrides
    :meth:`new_server`).
    """

    device: ClassVar[type[IndexedDevice]]

    @classmethod
    def name(cls, client: ComputeClient) -> str:
        """The backend's name, as in its devices' names (``opencl`` of ``opencl:0``)."""
        return cls.device.backend

    @classmethod
    def client(cls, device: Any = None) -> ComputeClient:
        """The one client of ``device`` (default: the device of index 0), its server made by
        :meth:`new_server` on first use; the client's ``runtime`` is this class.

        :raises BackendUnavailable: when the server's module needs a driver that is not
            installed (see :class:`LazyType`).
        """
        dev = device if device is not None else cls.device()
        return ComputeClient.get_or_init(dev, lambda: cls.new_server(dev), runtime=cls)

    @classmethod
    def new_server(cls, device: Any) -> ComputeServer:
        """The server of ``device``, made once per device by :meth:`client`: ``server(device)``
        by default. Override it where the server takes something else (a ``DeviceId``)."""
        return cls.server(device)  # type: ignore[call-arg]  # ComputeServer's own __init__ differs

    @classmethod
    def autotune_driver_fingerprint(cls, client: ComputeClient) -> str | None:
        """The client's server's driver identity (``ComputeServer.driver_fingerprint``), None
        unless the backend knows its driver stack."""
        return client.server.driver_fingerprint()

    @classmethod
    def can_read_tensor(cls, shape: Sequence[int], strides: Sequence[int]) -> bool:
        """Row-major layouts whose rows may be padded (:func:`is_contiguous_or_pitched`): what
        the built-in memory pools hand out, read as one span and gathered on the host."""
        return is_contiguous_or_pitched(shape, strides)

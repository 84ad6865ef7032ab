"""The runtime contracts: what a backend implements and what a kernel author calls.

``Runtime`` (backend.py), ``ComputeClient`` (client.py), ``ComputeServer`` (server.py, a
facade over its parts) and the driver contract it is built from (driver.py), a launch's
arguments (arguments.py) and geometry (dims.py), compiled kernels (compiler.py,
kernels.py), captured launches (capture.py), devices (device.py), memory (memory/), tensor
layouts (layout.py), streams, futures, profiling and properties; the error tree
(``ruda_core/errors.py``) is re-exported here.
"""

from ..errors import (
    AutotuneError,
    BackendUnavailable,
    BufferTooBig,
    CaptureError,
    CompilationError,
    DeploymentTagsError,
    DeviceTimeout,
    ExitTimeoutWarning,
    InteropError,
    InvalidHandle,
    IoError,
    LaunchConfigError,
    LaunchError,
    LayoutError,
    OutOfBoundsReport,
    OutOfMemory,
    PluginError,
    RudaPanic,
    RudaWarning,
    SanitizerError,
    SanitizerFinding,
    ServerError,
    ServerUnhealthy,
    SettingError,
    TooManyResources,
    UnsupportedFeature,
    ValidationError,
    WorkerLost,
)
from .arguments import LaunchArgs
from .backend import IndexedRuntime, LazyType, Runtime
from .capture import Graph
from .client import ComputeClient, CopyDescriptor, PreparedLaunch
from .compiler import CompiledKernel, CompileOptions, Compiler, KernelTask, RudaTask
from .device import Device, DeviceId, IndexedDevice
from .dims import BoundsCheckMode, ExecutionMode, RudaCount, RudaDim
from .driver import (
    Bytes,
    CopyDriver,
    Driver,
    KernelDriver,
    KernelLaunch,
    QueueDriver,
    Run,
    SharingDriver,
)
from .future import Promise, RudaFuture, wait_until
from .kernels import LoadedKernel
from .launches import KernelLauncher, LaunchSite, dynamic_count_error
from .layout import contiguous_strides, is_contiguous_or_pitched
from .memory import Binding, Fence, Handle, MemoryConfig, MemoryUsage, Storage
from .profile import ProfileDuration, ProfileTrace, Stamp, TimingMethod, TraceEvent
from .properties import (
    PLANE_DIMS,
    DeviceProperties,
    Feature,
    Features,
    TargetProperties,
    plane_dim_setting,
)
from .server import ComputeServer
from .settings import count_setting, seconds_setting, switch_setting
from .stream import StreamId
from .stream_table import ServerStream, poisoned_input, rewritten

__all__ = [
    "PLANE_DIMS",
    "AutotuneError",
    "BackendUnavailable",
    "Binding",
    "BoundsCheckMode",
    "BufferTooBig",
    "Bytes",
    "CaptureError",
    "CompilationError",
    "CompileOptions",
    "CompiledKernel",
    "Compiler",
    "ComputeClient",
    "ComputeServer",
    "CopyDescriptor",
    "CopyDriver",
    "DeploymentTagsError",
    "Device",
    "DeviceId",
    "DeviceProperties",
    "DeviceTimeout",
    "Driver",
    "ExecutionMode",
    "ExitTimeoutWarning",
    "Feature",
    "Features",
    "Fence",
    "Graph",
    "Handle",
    "IndexedDevice",
    "IndexedRuntime",
    "InteropError",
    "InvalidHandle",
    "IoError",
    "KernelDriver",
    "KernelLaunch",
    "KernelLauncher",
    "KernelTask",
    "LaunchArgs",
    "LaunchConfigError",
    "LaunchError",
    "LaunchSite",
    "LayoutError",
    "LazyType",
    "LoadedKernel",
    "MemoryConfig",
    "MemoryUsage",
    "OutOfBoundsReport",
    "OutOfMemory",
    "PluginError",
    "PreparedLaunch",
    "ProfileDuration",
    "ProfileTrace",
    "Promise",
    "QueueDriver",
    "RudaCount",
    "RudaDim",
    "RudaFuture",
    "RudaPanic",
    "RudaTask",
    "RudaWarning",
    "Run",
    "Runtime",
    "SanitizerError",
    "SanitizerFinding",
    "ServerError",
    "ServerStream",
    "ServerUnhealthy",
    "SettingError",
    "SharingDriver",
    "Stamp",
    "Storage",
    "StreamId",
    "TargetProperties",
    "TimingMethod",
    "TooManyResources",
    "TraceEvent",
    "UnsupportedFeature",
    "ValidationError",
    "WorkerLost",
    "contiguous_strides",
    "count_setting",
    "dynamic_count_error",
    "is_contiguous_or_pitched",
    "plane_dim_setting",
    "poisoned_input",
    "rewritten",
    "seconds_setting",
    "switch_setting",
    "wait_until",
]

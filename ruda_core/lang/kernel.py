"""``@kernel``: a Python function compiled for every device, specialised on demand.

A kernel is specialised by its element-variable bindings, its ``Comptime`` values and the ranks
of its ``Tensor`` parameters. :meth:`Kernel.definition` gives a specialisation's
:class:`KernelDefinition` (for tests and tools); :meth:`Kernel.launch` infers the bindings and
ranks from the arguments (or takes bindings by keyword, ``Float=f32``), builds the
specialisation on first use and caches it with its :class:`~.launcher.Launcher`. Syntax errors
surface when the decorator runs; everything else at the first specialisation.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any, SupportsIndex

import numpy as np

from ..errors import LaunchConfigError
from ..ir import Elem, KernelDefinition
from ..runtime.client import PreparedLaunch
from ..runtime.dims import CountLike, DimLike
from .borrow import borrow_arguments
from .foreign import import_arguments, shown
from .frontend import build_kernel
from .launcher import Launcher, Submit, arg_elem, client_method
from .syntax import KernelParam, parse_function, parse_signature
from .types import ElemVar, as_elem

__all__ = ["Kernel", "kernel"]

SpecKey = tuple[tuple[Elem, ...], tuple[object, ...], tuple[int, ...]]


def _typed(value: object) -> object:
    """A cache key for a comptime value that tells ``1``, ``1.0`` and ``True`` apart, and
    ``0.0`` and ``-0.0``, and finds a NaN again (floats by their bits)."""
    if isinstance(value, tuple):
        return (tuple, tuple(_typed(v) for v in value))
    if isinstance(value, float | np.floating):
        return (type(value), float(value).hex())
    return (type(value), value)


#: The float types whose values a launch probe keys by their bits.
_FLOATS = frozenset({float, np.float16, np.float32, np.float64, np.longdouble})


def _keyword_probe(comptime: dict[str, object]) -> tuple[object, object]:
    """The Comptime keywords as a launch probe keys them: the items and their types (``1`` and
    ``True`` are equal), the items keyed as :func:`_typed` keys them only where one is a float
    (``0.0`` and ``-0.0`` are equal, a NaN unequal to itself): a launch's keywords are rarely
    floats, and keying each costs ten times more."""
    types = tuple(map(type, comptime.values()))
    if _FLOATS.isdisjoint(types):
        return tuple(comptime.items()), types
    return tuple((name, _typed(value)) for name, value in comptime.items()), types


class Kernel:
    """A kernel made by :func:`kernel`. Thread-safe: specialisations are built at most a few
    times under contention and then shared.

    Once a kernel without element variables, tensors or dataclass parameters has launched,
    its ``launch`` attribute is a function generated for its signature (the launcher's
    ``entry``): the same contract as :meth:`launch`, which it calls for anything but ruda's own
    and borrowed arrays and scalars, in one Python frame instead of two."""

    __slots__ = (
        "__dict__",  # holds the generated ``launch``, which shadows the method
        "_default",
        "_elem_vars",
        "_fixed",
        "_generic_args",
        "_kinds",
        "_launchers",
        "_positions",
        "_probes",
        "_runtime",
        "_specs",
        "_structs",
        "_tensor_args",
        "fn",
        "params",
        "parsed",
    )

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn = fn
        self.parsed = parse_function(fn, "kernel")
        self.params: tuple[KernelParam, ...] = parse_signature(self.parsed)
        #: Parameters bound to positional launch arguments, in order.
        self._runtime = tuple(p for p in self.params if p.kind != "comptime")
        vars_: dict[ElemVar, list[int]] = {}
        for i, p in enumerate(self._runtime):
            if isinstance(p.elem, ElemVar):
                vars_.setdefault(p.elem, []).append(i)
        self._elem_vars = tuple(vars_)
        self._positions = vars_
        self._specs: dict[SpecKey, KernelDefinition] = {}
        self._launchers: dict[SpecKey, Launcher] = {}
        self._default: Launcher | None = None
        self._probes: dict[object, Launcher] = {}
        self._generic_args = tuple(sorted(i for pos in vars_.values() for i in pos))
        self._tensor_args = tuple(i for i, p in enumerate(self._runtime) if p.kind == "tensor")
        #: per runtime parameter, "array" or "tensor" where a foreign array may be borrowed
        self._kinds = tuple(
            p.kind if p.kind in ("array", "tensor") else None for p in self._runtime
        )
        #: Without element variables or tensors, launches without keywords share one launcher.
        self._fixed = not vars_ and all(p.kind != "tensor" for p in self._runtime)
        #: Per positional launch argument: its name and, for a dataclass, its class and fields
        #: (empty when no parameter is a dataclass: arguments are passed on as they are).
        self._structs: tuple[tuple[str, type | None, tuple[str, ...]], ...] = ()
        if any(p.group is not None for p in self._runtime):
            self._structs = _argument_layout(self._runtime)

    @property
    def name(self) -> str:
        return self.parsed.name

    def __call__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(f"kernel '{self.name}' is launched with {self.name}.launch(client, ...)")

    def __repr__(self) -> str:
        return f"<kernel {self.name}>"

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """A kernel that an importable module defines at its top level pickles (for Dask and
        other process pools) as a reference to it, never with its specialisations, launchers
        and clients, which are made again where it is loaded; any other kernel pickles as an
        object (cloudpickle carries its function), which works before its first launch."""
        fn = self.fn
        module = sys.modules.get(fn.__module__)
        if fn.__module__ != "__main__" and getattr(module, fn.__qualname__, None) is self:
            return (_defined_in, (fn.__module__, fn.__qualname__))
        return super().__reduce_ex__(protocol)

    # -- specialisation ---------------------------------------------------------------------

    def definition(self, **spec: object) -> KernelDefinition:
        """The definition of one specialisation. ``spec`` names each ``Comptime`` parameter
        (its value; defaults apply), each element variable (``Float=f32``) and each tensor
        parameter (its rank).

        :raises LaunchConfigError: for a missing or unknown specialisation input.
        :raises CompilationError: when the body cannot be compiled.
        """
        ranks: dict[str, int] = {}
        comptime: dict[str, object] = {}
        for name, value in spec.items():
            param = next((p for p in self._runtime if p.name == name), None)
            if param is not None and param.kind == "tensor":
                ranks[name] = int(value)  # type: ignore[call-overload]  # a rank
            else:
                comptime[name] = value
        bindings = self._explicit_bindings(comptime)
        return self._definition(self._key(bindings, comptime, ranks), bindings, comptime, ranks)

    def _explicit_bindings(self, comptime: dict[str, object]) -> dict[ElemVar, Elem]:
        """Pop element-variable keywords from ``comptime`` into bindings."""
        bindings: dict[ElemVar, Elem] = {}
        for var in self._elem_vars:
            if var.name in comptime:
                try:
                    bindings[var] = as_elem(comptime.pop(var.name))
                except TypeError as exc:
                    raise LaunchConfigError(f"kernel '{self.name}': {var.name}: {exc}") from None
        return bindings

    def _key(
        self, bindings: dict[ElemVar, Elem], comptime: dict[str, object], ranks: Mapping[str, int]
    ) -> SpecKey:
        where = f"kernel '{self.name}'"
        elems: list[Elem] = []
        for var in self._elem_vars:
            elem = bindings.get(var)
            if elem is None:
                raise LaunchConfigError(
                    f"{where}: cannot infer {var.name}; pass arguments that declare their element "
                    f"(ArrayArg(..., elem=f32)) or {var.name}=f32"
                )
            if elem not in var.allowed:
                allowed = ", ".join(sorted(e.value for e in var.allowed))
                raise LaunchConfigError(f"{where}: {var.name} is {elem}; it allows {allowed}")
            elems.append(elem)
        values: list[object] = []
        for p in self.params:
            if p.kind != "comptime":
                continue
            value = comptime.pop(p.name, p.default)
            if value is inspect.Parameter.empty:
                raise LaunchConfigError(f"{where}: give the Comptime parameter {p.name}=...")
            try:
                hash(value)
            except TypeError:
                raise LaunchConfigError(
                    f"{where}: Comptime {p.name}={value!r} is not hashable"
                ) from None
            comptime[p.name] = value
            values.append(_typed(value))
        unknown = set(comptime) - {p.name for p in self.params}
        if unknown:
            raise LaunchConfigError(
                f"{where}: {', '.join(sorted(unknown))} is not a Comptime parameter, element "
                "variable or tensor parameter"
            )
        rank_list: list[int] = []
        for p in self._runtime:
            if p.kind == "tensor":
                if p.name not in ranks:
                    raise LaunchConfigError(f"{where}: give the rank of tensor '{p.name}'")
                rank_list.append(ranks[p.name])
        return tuple(elems), tuple(values), tuple(rank_list)

    def _definition(
        self,
        key: SpecKey,
        bindings: dict[ElemVar, Elem],
        comptime: Mapping[str, object],
        ranks: Mapping[str, int],
    ) -> KernelDefinition:
        defn = self._specs.get(key)
        if defn is None:
            defn = build_kernel(self.parsed, self.params, bindings, comptime, ranks)
            self._specs[key] = defn
        return defn

    # -- launch -----------------------------------------------------------------------------

    def launch(
        self, client: Any, count: CountLike, dim: DimLike, *args: object, **comptime: object
    ) -> None:
        """Launch in Checked mode: ``args`` bind positionally to the non-Comptime parameters,
        ``comptime`` by keyword. ``count`` and ``dim`` are a ``RudaCount`` and a ``RudaDim``,
        or an ``int`` or a tuple of 1 to 3 ints each. Enqueues and returns at once. An
        ``Array`` or ``Tensor`` argument may be any DLPack array of the client's device (see
        :mod:`.foreign`).

        :raises LaunchConfigError: at once, for arguments that do not fit the parameters.
        :raises InteropError: at once, for a foreign array ruda cannot use as is.
        :raises CompilationError: at once, when the kernel cannot be specialised.
        """
        if self._structs:
            args = self._flatten(args)
        launcher = self._default  # _launcher(), inlined for the common case
        if comptime or launcher is None:
            self._launch_slow(client, count, dim, args, comptime)
            return
        try:
            launched = launcher.direct(client, count, dim, args)
        except LaunchConfigError:  # perhaps foreign arrays: retried outside this handler
            refused = True
        else:
            refused = False
        if refused:  # its error, if any, is the retry's alone (no chained context)
            self._launch_foreign(client, count, dim, args, comptime)
            return
        if launched is False:  # borrowed arrays while a capture is open: import them
            self._submit(client, client_method(client, "launch"), count, dim, args, comptime)

    def _launch_slow(
        self,
        client: Any,
        count: CountLike,
        dim: DimLike,
        args: tuple[object, ...],
        comptime: dict[str, object],
    ) -> None:
        """A Checked launch through the full lookup (keywords, element-generic kernels)."""
        try:
            launched = self._launcher(args, comptime).direct(client, count, dim, args)
        except LaunchConfigError:  # perhaps foreign arrays: retried outside this handler
            refused = True
        else:
            refused = False
        if refused:
            self._launch_foreign(client, count, dim, args, comptime)
            return
        if launched is False:
            self._submit(client, client_method(client, "launch"), count, dim, args, comptime)

    def _launch_foreign(
        self,
        client: Any,
        count: CountLike,
        dim: DimLike,
        args: tuple[object, ...],
        comptime: dict[str, object],
    ) -> None:
        """A Checked launch whose binding failed: with NumPy, torch and CuPy arrays borrowed,
        else with foreign arrays imported, else the binding's error."""
        borrowed = borrow_arguments(client, self._kinds, args)
        if borrowed is None:
            self._submit(client, client_method(client, "launch"), count, dim, args, comptime)
            return
        converted, owners, origin = borrowed
        launcher = self._launcher(converted, comptime)
        if launcher.direct(client, count, dim, converted, owners, origin) is False:
            self._submit(
                client, client_method(client, "launch"), count, dim, args, comptime
            )  # a capture began

    def launch_unchecked(
        self, client: Any, count: CountLike, dim: DimLike, *args: object, **comptime: object
    ) -> None:
        """Like :meth:`launch`, with the bounds checks that ``BoundsCheckMode`` selects."""
        if self._structs:
            args = self._flatten(args)
        try:
            launched = self._launcher(args, comptime).unchecked(client, count, dim, args)
        except LaunchConfigError:  # foreign arrays, or a wrong one: the general path says which
            launched = False
        if launched is False:
            self._submit(
                client, client_method(client, "launch_unchecked"), count, dim, args, comptime
            )

    def prepare(
        self, client: Any, count: CountLike, dim: DimLike, *args: object, **comptime: object
    ) -> PreparedLaunch:
        """Check ``args`` and build the kernel once; the result's ``launch()`` enqueues this
        exact launch again with nothing re-checked or re-packed (Checked mode). It keeps the
        arguments, and so their memory, alive.

        :raises LaunchConfigError: at once, as :meth:`launch`.
        :raises CompilationError: at once, when the kernel does not specialise or build.
        """
        return self._prepare(client, client_method(client, "prepare"), count, dim, args, comptime)

    def prepare_unchecked(
        self, client: Any, count: CountLike, dim: DimLike, *args: object, **comptime: object
    ) -> PreparedLaunch:
        """Like :meth:`prepare`, with the bounds checks ``BoundsCheckMode`` selects now."""
        submit = functools.partial(client_method(client, "prepare"), unchecked=True)
        return self._prepare(client, submit, count, dim, args, comptime)

    def _prepare(
        self,
        client: Any,
        submit: Submit,
        count: CountLike,
        dim: DimLike,
        args: tuple[object, ...],
        comptime: dict[str, object],
    ) -> PreparedLaunch:
        if self._structs:
            args = self._flatten(args)
        prepared: PreparedLaunch = self._submit(client, submit, count, dim, args, comptime)
        if prepared.keep is None:  # else it holds the foreign arrays' imports
            prepared.keep = args
        return prepared

    def _flatten(self, args: tuple[object, ...]) -> tuple[object, ...]:
        """The arguments with each dataclass argument replaced by its fields, in order.

        :raises LaunchConfigError: for a wrong count, or a dataclass argument of another type.
        """
        if len(args) != len(self._structs):
            names = ", ".join(name for name, _, _ in self._structs)
            raise LaunchConfigError(
                f"kernel '{self.name}' takes {len(self._structs)} arguments ({names}) plus "
                f"Comptime keywords; got {len(args)}"
            )
        flat: list[object] = []
        for (name, cls, fields), arg in zip(self._structs, args, strict=True):
            if cls is None:
                flat.append(arg)
            elif isinstance(arg, cls):
                flat += [getattr(arg, f) for f in fields]
            else:
                raise LaunchConfigError(
                    f"kernel '{self.name}': argument '{name}' expects a {cls.__name__}, got "
                    f"{shown(arg)}"
                )
        return tuple(flat)

    def _submit(
        self,
        client: Any,
        submit: Submit,
        count: CountLike,
        dim: DimLike,
        args: tuple[object, ...],
        comptime: dict[str, object],
    ) -> Any:
        """Bind ``args`` (dataclass arguments already flattened) and call ``submit``. Only when
        binding fails are foreign arrays imported (and the launch bound again with them), so
        ruda's own arguments pay nothing."""
        try:
            return self._launcher(args, comptime).launch(submit, count, dim, args)
        except LaunchConfigError:
            imported = import_arguments(client, self._runtime, args)
            if imported is None:
                raise
        result = self._launcher(imported, comptime).launch(submit, count, dim, imported)
        if isinstance(result, PreparedLaunch):
            result.keep = imported
        return result

    def _launcher(self, args: tuple[object, ...], comptime: dict[str, object]) -> Launcher:
        """The launcher for these arguments: one lookup on a probe of what specialises the
        kernel (argument elements, tensor ranks, keywords); the full derivation, with its
        errors, only on a miss."""
        if not comptime and self._default is not None:
            return self._default
        try:
            probe = (
                tuple(arg_elem(args[i]) for i in self._generic_args),
                tuple(len(args[i].shape) for i in self._tensor_args),  # type: ignore[attr-defined]
                *_keyword_probe(comptime),
            )
            launcher = self._probes.get(probe)
        except (IndexError, AttributeError, TypeError):  # a malformed launch: derive, and raise
            probe, launcher = None, None
        if launcher is None:
            launcher = self._derive(args, dict(comptime))
            if probe is not None:
                self._probes[probe] = launcher
            if not comptime and self._fixed:
                self._default = launcher
                if launcher.entry is not None and not self._structs:
                    entry = launcher.entry(functools.partial(Kernel.launch, self))
                    entry.__doc__ = Kernel.launch.__doc__
                    self.__dict__["launch"] = entry
        return launcher

    def _derive(self, args: tuple[object, ...], comptime: dict[str, object]) -> Launcher:
        bindings = self._explicit_bindings(comptime)
        if len(args) != len(self._runtime):
            names = ", ".join(p.name for p in self._runtime)
            raise LaunchConfigError(
                f"kernel '{self.name}' takes {len(self._runtime)} arguments ({names}) plus "
                f"Comptime keywords; got {len(args)}"
            )
        for var, positions in self._positions.items():
            for i in positions:
                self._infer(var, args[i], self._runtime[i].name, bindings)
        ranks = {
            self._runtime[i].name: self._rank(self._runtime[i].name, args[i])
            for i in self._tensor_args
        }
        key = self._key(bindings, comptime, ranks)
        launcher = self._launchers.get(key)
        if launcher is None:
            launcher = Launcher(self._definition(key, bindings, comptime, ranks))
            self._launchers[key] = launcher
        return launcher

    def _infer(self, var: ElemVar, arg: object, name: str, bindings: dict[ElemVar, Elem]) -> None:
        try:
            elem = arg_elem(arg)
        except TypeError as exc:
            raise LaunchConfigError(f"kernel '{self.name}': argument '{name}': {exc}") from None
        if elem is None:
            return
        bound = bindings.get(var)
        if bound is None:
            bindings[var] = elem
        elif bound is not elem:
            raise LaunchConfigError(
                f"kernel '{self.name}': argument '{name}' is {elem}, but {var.name} is {bound}"
            )

    def _rank(self, name: str, arg: object) -> int:
        shape = getattr(arg, "shape", None)
        if shape is None or not hasattr(arg, "strides"):
            raise LaunchConfigError(
                f"kernel '{self.name}': argument '{name}' expects a TensorArg or RudaTensor, got "
                f"{shown(arg)}"
            )
        return len(shape)


def _argument_layout(
    runtime: tuple[KernelParam, ...],
) -> tuple[tuple[str, type | None, tuple[str, ...]], ...]:
    """Group the fields of each dataclass parameter back into one positional argument."""
    layout: list[tuple[str, type | None, tuple[str, ...]]] = []
    for p in runtime:
        if p.group is None:
            layout.append((p.name, None, ()))
        elif layout and layout[-1][0] == p.group:
            name, cls, fields = layout[-1]
            layout[-1] = (name, cls, (*fields, p.field))
        else:
            layout.append((p.group, p.struct, (p.field,)))
    return tuple(layout)


def _defined_in(module: str, name: str) -> Kernel:
    """The kernel ``module.name`` (what a pickled module-level kernel loads as)."""
    found: Kernel = getattr(importlib.import_module(module), name)
    return found


def kernel(fn: Callable[..., object]) -> Kernel:
    """Declare a kernel (see :mod:`ruda_core.lang`).

    :raises CompilationError: at once, for unsupported syntax or parameter annotations.
    """
    return Kernel(fn)

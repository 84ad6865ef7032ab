"""The launcher of one specialised kernel: Python arguments bound to the launch ABI, then one
client call.

A :class:`Launcher` is made once per specialisation. It holds the ``KernelTask`` and one binder
per parameter, built from the definition, so a launch only checks and converts its arguments
and makes one client call with the launch ABI of :mod:`ruda_core.ir.kernel`:

* an ``Array`` parameter takes an :class:`ArrayArg` (or a contiguous ``RudaTensor``/
  :class:`TensorArg`, whose element count is its length);
* a ``Tensor`` parameter takes a :class:`TensorArg` or a ``RudaTensor``; its metadata length is
  one more than its largest addressed offset;
* an array or tensor must start at a multiple of its element's size in bytes, or of its
  line's size, at most 16, where the kernel reads or writes it in lines
  (:func:`~ruda_core.ir.line_alignment`): GPUs load elements at such multiples only (CUDA
  faults, WebGPU reads the element below). A pool allocation always does, a ``Handle.offset``
  view or a borrowed buffer may not;
* a scalar parameter takes a Python or NumPy number, converted to the parameter's NumPy type (an
  integer must fit; a float must not overflow; bool takes only bools).

Every check raises :class:`LaunchConfigError` before anything is enqueued.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import LaunchConfigError
from ..ir import Elem, ExecutionMode, KernelDefinition, Param, ParamKind
from ..runtime.client import ClientLaunch
from ..runtime.compiler import KernelTask
from ..runtime.dims import BoundsCheckMode, CountLike, DimLike
from ..runtime.layout import is_contiguous, span
from ..runtime.memory import Binding
from ..tensor import RudaTensor
from .args import ArrayArg, HandleLike, TensorArg
from .borrow import (
    TORCH_KEY,
    GuardedTensors,
    Origin,
    borrow_arguments,
    check_staged,
    guarded_types,
    known_cupy,
    lend,
    lend_torch,
    lenders,
    lent_tables,
    settle,
)
from .foreign import shown
from .types import as_elem

__all__ = ["Launcher", "Submit", "client_method"]

#: ``client.launch`` or ``client.launch_unchecked``.
Submit = Callable[[KernelTask, CountLike, DimLike, list[Binding], list[np.generic], list[int]], Any]
Binder = Callable[[object, list[Binding], list[np.generic], list[int], list[int]], None]

_U32_LIMIT = 1 << 32
#: clients whose launchers one Launcher keeps
_MAX_CLIENTS = 16
_DTYPE_ELEMS = {elem.numpy: elem for elem in Elem if elem is not Elem.BF16}
#: an Array parameter's lines in a generated launch: its index, then the lines that bind an
#: ``ArrayArg``, a ``RudaTensor`` and any other argument to it (see :func:`_guarded`)
Lines = tuple[int, list[str], list[str], list[str]]
#: what :func:`~.borrow.borrow_arguments` calls the parameters it may borrow for
_BORROWED_KINDS = {ParamKind.ARRAY: "array", ParamKind.TENSOR: "tensor"}


def client_method(client: object, name: str) -> Any:
    """``client``'s method ``name``; a ``TypeError`` naming what was given where a launch takes
    a client (a device's name, ``None`` …)."""
    method = getattr(client, name, None)
    if not callable(method):
        hint = f": ruda_core.client({client!r}) makes one" if isinstance(client, str) else ""
        raise TypeError(f"a kernel launches on a ComputeClient, not {client!r}{hint}")
    return method


class Launcher:
    """The launch path of one specialisation (thread-safe: it holds no per-launch state)."""

    __slots__ = (
        "_binders",
        "_guarded",
        "_kinds",
        "_names",
        "_runs",
        "alignment",
        "definition",
        "direct",
        "entry",
        "launch",
        "task",
        "unchecked",
    )

    def __init__(self, definition: KernelDefinition) -> None:
        self.definition = definition
        self.task = KernelTask(definition)
        needed = zip(definition.array_params, self.task.alignment, strict=True)
        #: the byte multiple each array or tensor parameter must start at, where over 1
        self.alignment = {p: n for p, n in needed if n > 1}
        self._binders = tuple(
            _binder(definition.name, p, self.alignment.get(p, 1)) for p in definition.params
        )
        self._names = ", ".join(p.name for p in definition.params)
        self._kinds = tuple(_BORROWED_KINDS.get(p.kind) for p in definition.params)
        #: per client, its ``launcher(task)``: at most :data:`_MAX_CLIENTS` (clients pinned
        #: with ``fixed_execution_queue`` come and go)
        self._runs: dict[object, ClientLaunch] = {}
        #: the torch tensors remembered for the generated launch's one check
        self._guarded = GuardedTensors()
        fast = _fast_path(self)
        #: ``launch(submit, count, dim, args)``: bind and call ``submit`` (any launch form); a
        #: generated fast path where the signature allows one
        self.launch: Callable[[Submit, CountLike, DimLike, Sequence[object]], Any] = (
            fast[0] if fast else self.checked_launch
        )
        #: ``direct(client, count, dim, args[, held, held_origin])``: a Checked launch on
        #: ``client`` through its kept ``launcher(task)``, as :meth:`_direct`; generated like
        #: ``launch``
        self.direct: Callable[..., bool | None] = fast[1] if fast else self._direct
        #: ``entry(general)``: ``direct`` as a kernel's ``launch(client, count, dim, *args,
        #: **comptime)``, with ``general`` (the kernel's own launch) for every other case;
        #: None where no fast path is generated
        self.entry: Callable[[Callable[..., None]], Callable[..., None]] | None = (
            fast[2] if fast else None
        )
        #: ``unchecked(client, count, dim, args)``: ``launch_unchecked`` of ruda's own arguments
        #: through ``client``'s launcher for the bounds mode in force, as :meth:`_unchecked`;
        #: generated like ``launch``
        self.unchecked: Callable[..., bool | None] = fast[3] if fast else self._unchecked

    def checked_launch(
        self, submit: Submit, count: CountLike, dim: DimLike, args: Sequence[object]
    ) -> Any:
        """Check and convert ``args`` (one per parameter, in order) and call ``submit``;
        return what it returns.

        :raises LaunchConfigError: for a wrong argument count, kind, element type or size.
        """
        return submit(self.task, count, dim, *self._bind(args))

    def run_on(self, client: Any, mode: ExecutionMode = ExecutionMode.CHECKED) -> ClientLaunch:
        """``client.launcher(task, mode)``, made once per client and mode and kept (for a
        client-like object with ``launch`` alone: a call of that, or of ``launch_unchecked``)."""
        key = client if mode is ExecutionMode.CHECKED else (client, mode)
        run = self._runs.get(key)
        if run is None:
            if len(self._runs) >= _MAX_CLIENTS:
                self._runs.clear()
            make = getattr(client, "launcher", None)
            if make is not None:
                run = make(self.task, mode)
            elif mode is ExecutionMode.CHECKED:
                run = functools.partial(client_method(client, "launch"), self.task)
            else:
                run = functools.partial(client_method(client, "launch_unchecked"), self.task)
            self._runs[key] = run
        return run

    def _unchecked(
        self, client: Any, count: CountLike, dim: DimLike, args: Sequence[object]
    ) -> bool | None:
        """``launch_unchecked`` of ruda's own arguments on ``client``, in the mode
        ``BoundsCheckMode`` selects now, through the launcher kept for that mode: the checks of
        ``client.launch_unchecked`` without its general path. False as :meth:`_direct`.

        :raises LaunchConfigError: for arguments that do not bind (foreign arrays among them:
            the general path borrows or refuses those).
        """
        bindings, scalars, metadata = self._bind(args)
        run = self.run_on(client, BoundsCheckMode.current().execution_mode)
        return run(count, dim, bindings, scalars, metadata)

    def _direct(
        self,
        client: Any,
        count: CountLike,
        dim: DimLike,
        args: Sequence[object],
        held: list[object] | None = None,
        held_origin: Origin | None = None,
    ) -> bool | None:
        """A Checked launch through the binders; NumPy arrays, torch tensors and CuPy arrays
        among ``args`` are borrowed first (:mod:`.borrow`), kept alive and ordered after their
        origin. ``held`` (of ``held_origin``) are the arrays already borrowed into ``args``.
        NumPy arrays the kernel writes hold its results when this returns (:func:`.settle`).
        False: refused while a capture is open (nothing enqueued; see :class:`ClientLaunch`)."""
        kept, origin = held, held_origin
        if kept is None:
            borrowed = borrow_arguments(client, self._kinds, args)
            if borrowed is not None:
                args, kept, origin = borrowed
        bindings, scalars, metadata = self._bind(args)
        run = self.run_on(client)
        if kept is None:
            return run(count, dim, bindings, scalars, metadata)
        check_staged(client, self.task, kept)
        producer = None if origin is None else origin()
        launched = run(count, dim, bindings, scalars, metadata, kept, producer)
        if launched is not False:
            settle(client, self.task, kept)
        return launched

    def _bind(self, args: Sequence[object]) -> tuple[list[Binding], list[np.generic], list[int]]:
        if len(args) != len(self._binders):
            raise LaunchConfigError(
                f"kernel '{self.definition.name}' takes {len(self._binders)} arguments "
                f"({self._names}) plus Comptime keywords; got {len(args)}"
            )
        bindings: list[Binding] = []
        scalars: list[np.generic] = []
        metadata: list[int] = []
        dims: list[int] = []
        for bind, arg in zip(self._binders, args, strict=True):
            bind(arg, bindings, scalars, metadata, dims)
        metadata += dims
        return bindings, scalars, metadata


def arg_elem(arg: object) -> Elem | None:
    """The element type an argument declares (``None`` when it declares none)."""
    if isinstance(arg, np.generic):
        return _DTYPE_ELEMS.get(arg.dtype) or Elem.from_dtype(arg.dtype)
    elem = getattr(arg, "elem", None)
    return None if elem is None else as_elem(elem)


def _binder(kernel: str, p: Param, alignment: int) -> Binder:
    where = f"kernel '{kernel}': argument '{p.name}'"
    if p.kind is ParamKind.ARRAY:
        return _array_binder(where, p.elem, alignment)
    if p.kind is ParamKind.TENSOR:
        return _tensor_binder(where, p.elem, p.rank, alignment)
    return _scalar_binder(where, p.elem)


def _check_elem(where: str, declared: Elem, given: Elem | None) -> None:
    if given is not None and given is not declared:
        raise LaunchConfigError(f"{where} has {given} elements; the kernel declares {declared}")


def _check_size(where: str, nbytes: int, count: int, itemsize: int) -> None:
    if count * itemsize > nbytes:
        raise LaunchConfigError(
            f"{where} covers {count} elements of {itemsize} B = {count * itemsize} B, but its "
            f"handle holds {nbytes} B"
        )


def _aligned(where: str, binding: Binding, alignment: int) -> Binding:
    if alignment > 1 and binding.offset_bytes % alignment:
        raise LaunchConfigError(
            f"{where} starts {binding.offset_bytes} B into its memory; the kernel accesses it in "
            f"elements or lines of {alignment} B, which need a start at a multiple of "
            f"{alignment} B. Pass a handle, a Handle.offset view or another library's array "
            "that starts at such a multiple"
        )
    return binding


def _tensor_parts(
    where: str, arg: object
) -> tuple[HandleLike, tuple[int, ...], tuple[int, ...], Elem | None]:
    if type(arg) is TensorArg:
        return arg.handle, arg.shape, arg.strides, arg.elem
    if not (hasattr(arg, "handle") and hasattr(arg, "shape") and hasattr(arg, "strides")):
        raise LaunchConfigError(
            f"{where} expects an ArrayArg(handle, length), a TensorArg or a RudaTensor, got "
            f"{shown(arg)}"
        )
    shape = tuple(_u32(where, "extent", s) for s in arg.shape)
    strides = tuple(_u32(where, "stride", s) for s in arg.strides)
    if len(shape) != len(strides):
        raise LaunchConfigError(f"{where}: shape {shape} and strides {strides} differ in rank")
    return arg.handle, shape, strides, arg_elem(arg)


def _u32(where: str, what: str, value: object) -> int:
    try:
        n = operator.index(value)  # type: ignore[arg-type]  # any int-like
    except TypeError:
        raise LaunchConfigError(f"{where}: {what} {value!r} is not an int") from None
    if not 0 <= n < _U32_LIMIT:
        raise LaunchConfigError(f"{where}: {what} {n} is outside 0..2**32-1")
    return n


def _array_binder(where: str, elem: Elem, alignment: int) -> Binder:
    itemsize = elem.nbytes

    def bind(
        arg: object,
        bindings: list[Binding],
        _s: list[np.generic],
        lengths: list[int],
        _d: list[int],
    ) -> None:
        if type(arg) is ArrayArg:
            binding, nbytes, length, given = arg._binding, arg._nbytes, arg.length, arg.elem
        else:
            handle, shape, strides, given = _tensor_parts(where, arg)
            if not is_contiguous(shape, strides):
                raise LaunchConfigError(
                    f"{where} is an Array parameter; a tensor with strides {strides} for shape "
                    f"{shape} is not contiguous. Pass a contiguous copy (np.ascontiguousarray, "
                    "ruda_core.asarray), or declare the parameter Tensor[...], which takes strides"
                )
            length = math.prod(shape)
            if length >= _U32_LIMIT:
                raise LaunchConfigError(f"{where} has {length} elements; the limit is 2**32-1")
            binding, nbytes = handle.binding(), handle.nbytes
        _check_elem(where, elem, given)
        _check_size(where, nbytes, length, itemsize)
        bindings.append(_aligned(where, binding, alignment))
        lengths.append(length)

    return bind


def _tensor_binder(where: str, elem: Elem, rank: int, alignment: int) -> Binder:
    itemsize = elem.nbytes

    def bind(
        arg: object,
        bindings: list[Binding],
        _s: list[np.generic],
        lengths: list[int],
        dims: list[int],
    ) -> None:
        handle, shape, strides, given = _tensor_parts(where, arg)
        if len(shape) != rank:
            raise LaunchConfigError(
                f"{where} has rank {len(shape)}; this specialisation has {rank}"
            )
        _check_elem(where, elem, given)
        addressed = span(shape, strides)
        if addressed >= _U32_LIMIT:
            raise LaunchConfigError(f"{where} addresses {addressed} elements; the limit is 2**32-1")
        _check_size(where, handle.nbytes, addressed, itemsize)
        bindings.append(_aligned(where, handle.binding(), alignment))
        lengths.append(addressed)
        dims += shape
        dims += strides

    return bind


def _scalar_binder(where: str, elem: Elem) -> Binder:
    if elem is Elem.BF16:

        def refuse(arg: object, *_: object) -> None:
            raise LaunchConfigError(f"{where} is bf16, which the host cannot pass; use f32")

        return refuse
    convert = _scalar_converter(where, elem)
    scalar_type = elem.numpy.type

    def bind(
        arg: object, _b: list[Binding], scalars: list[np.generic], _l: list[int], _d: list[int]
    ) -> None:
        scalars.append(arg if type(arg) is scalar_type else convert(arg))  # type: ignore[arg-type]

    return bind


def _scalar_converter(where: str, elem: Elem) -> Callable[[object], np.generic]:
    """The checked conversion of a scalar argument to ``elem``'s NumPy type, remembering the
    last argument: a launch in a loop passes the same (immutable) number object each time."""
    convert = _checked_converter(where, elem)
    last: tuple[object, np.generic | None] = (None, None)  # replaced as one tuple: thread-safe

    def remembered(arg: object) -> np.generic:
        nonlocal last
        seen, value = last
        if seen is arg and value is not None:
            return value
        value = convert(arg)
        last = (arg, value)
        return value

    return remembered


def _checked_converter(where: str, elem: Elem) -> Callable[[object], np.generic]:
    scalar_type = elem.numpy.type
    if elem is Elem.BOOL:

        def to_bool(arg: object) -> np.generic:
            if not isinstance(arg, bool | np.bool_):
                raise LaunchConfigError(f"{where} is bool; got {arg!r}")
            return np.bool_(arg)

        return to_bool
    if elem.is_int:
        info = np.iinfo(elem.numpy)
        lo, hi = int(info.min), int(info.max)

        def to_int(arg: object) -> np.generic:
            if type(arg) is not int and not isinstance(arg, np.integer):
                raise LaunchConfigError(f"{where} is {elem}; got {arg!r}, which is not an integer")
            if not lo <= arg <= hi:
                raise LaunchConfigError(f"{where} is {elem}; {arg} is outside {lo}..{hi}")
            return scalar_type(arg)  # type: ignore[no-any-return]  # a NumPy scalar type

        return to_int
    limit = float(np.finfo(elem.numpy).max)

    def to_float(arg: object) -> np.generic:
        if type(arg) not in (float, int) and not isinstance(arg, np.floating | np.integer):
            raise LaunchConfigError(f"{where} is {elem}; got {arg!r}, which is not a number")
        in_range = -limit <= arg <= limit  # type: ignore[operator]  # a real number
        if not in_range and not (isinstance(arg, float | np.floating) and not math.isfinite(arg)):
            raise LaunchConfigError(f"{where} is {elem}; {arg!r} overflows it")
        return scalar_type(arg)  # type: ignore[no-any-return]  # a NumPy scalar type

    return to_float


def _fast_path(
    launcher: Launcher,
) -> (
    tuple[
        Callable[..., Any],
        Callable[..., None],
        Callable[..., Callable[..., None]],
        Callable[..., bool | None],
    ]
    | None
):
    """Launch functions generated for a signature of Array and scalar parameters:
    ``launch(submit, count, dim, args)``, ``direct(client, count, dim, args)``,
    ``make_entry(general)``, which makes ``direct`` a kernel's ``launch(client, count, dim,
    *args, **comptime)`` (one Python frame fewer), ``general`` taking every other case, and
    ``unchecked(client, count, dim, args)``, ``direct``'s form for ``launch_unchecked`` (ruda's
    own arguments only; False for anything else, which the general path binds or refuses).

    They accept exactly what the binders accept when every Array argument is an ``ArrayArg``
    that fits its handle and every scalar is already of the parameter's NumPy type (or is
    converted by the same converter); ``direct`` also takes a NumPy array or torch tensor
    for an Array parameter, through :func:`~.borrow.lend` (kept alive and ordered after its
    producer by the launch's ``kept``, see :class:`ClientLaunch`); exact torch tensors seen
    before at the same addresses take one guard's check instead (:func:`_guarded`). Anything
    else goes to :meth:`Launcher.checked_launch` or :meth:`Launcher._direct`, which raise the
    precise error. The generated code does no per-parameter dispatch.
    """
    defn = launcher.definition
    if any(p.kind is ParamKind.TENSOR or p.elem is Elem.BF16 for p in defn.params):
        return None
    env: dict[str, object] = {"ArrayArg": ArrayArg, "RudaTensor": RudaTensor, "task": launcher.task}
    checks, bindings, scalars, lengths = [], [], [], []
    borrowing: list[Lines] = []  # per Array: its lines, as _guarded takes them
    for k, p in enumerate(defn.params):
        a = f"a{k}"
        if p.kind is ParamKind.ARRAY:
            env[f"E{k}"] = p.elem

            def fits(x: str, p: Param = p) -> str:
                misaligned = ""
                if p in launcher.alignment:
                    misaligned = f" or {x}._binding.offset_bytes % {launcher.alignment[p]}"
                return f"{x}.length * {p.elem.nbytes} > {x}._nbytes{misaligned}"

            checks.append(
                f"if type({a}) is not ArrayArg or ({a}.elem is not None and {a}.elem is not E{k})"
                f" or {fits(a)}: return SLOW"
            )
            own = [  # an ArrayArg
                f"if ({a}.elem is not None and {a}.elem is not E{k}) or {fits(a)}: return SLOW",
                f"b{k} = {a}._binding",
                f"n{k} = {a}.length",
            ]
            foreign = [  # anything else: lent (a CuPy array lent before: found by identity)
                "if known is None: known = cupy_known.get(cl, NONE)",
                f"seen = known.get(id({a}))",
                f"if seen is not None and seen[0]() is {a}: lent = seen[1]",
                f"elif (lender := lenders.get(type({a}))) is lend_torch:  # inlined but for a miss",
                "    if table is None: table = tables.get(cl, NONE)",
                f"    try: lent = table.get({TORCH_KEY.format(t=a)})",
                "    except RuntimeError: return SLOW",
                f"    if lent is None: lent = lend_torch(cl, {a})",
                "else:",
                f"    lent = (lender or lend)(cl, {a})",
                f"if lent is None or lent[2] is not E{k}: return SLOW",
                f"b{k}, n{k}, _, o = lent",
                *(  # a NumPy array the kernel writes holds its results when launch returns
                    [f"if type({a}) is ndarray: wait = drain"]
                    if launcher.task.writes(len(borrowing))
                    else []
                ),
                *(
                    [f"if b{k}.offset_bytes % {launcher.alignment[p]}: return SLOW"]
                    if p in launcher.alignment
                    else []
                ),
                f"if kept is None: kept, origin = [{a}], o",
                "elif o is not origin: return SLOW",
                f"else: kept.append({a})",
            ]
            mine = [  # a RudaTensor: its flat view, made when the tensor was
                f"lent = {a}.flat",
                f"if lent is None or lent[2] is not E{k}: return SLOW",
                f"b{k}, n{k}, _ = lent",
                *(
                    [f"if b{k}.offset_bytes % {launcher.alignment[p]}: return SLOW"]
                    if p in launcher.alignment
                    else []
                ),
            ]
            borrowing.append((k, own, mine, foreign))
            bindings.append(f"{a}._binding")
            lengths.append(f"{a}.length")
        else:
            env[f"T{k}"] = p.elem.numpy.type
            env[f"C{k}"] = _scalar_converter(f"kernel '{defn.name}': argument '{p.name}'", p.elem)
            scalars.append(f"{a} if type({a}) is T{k} else C{k}({a})")
    names = ", ".join(f"a{k}" for k in range(len(defn.params)))
    unpack = f"    {names}{',' if len(defn.params) == 1 else ''} = args\n" if defn.params else ""
    head = f"    if len(args) != {len(defn.params)}: return SLOW\n" + unpack
    arrays = [k for k, p in enumerate(defn.params) if p.kind is ParamKind.ARRAY]
    lists = f"{_tuple(bindings)}, {_tuple(scalars)}, {_tuple(lengths)}"
    direct_lists = f"bs, {_tuple(scalars)}, ns" if arrays else f"(), {_tuple(scalars)}, ()"
    tail = f"run(c, d, {direct_lists}, kept, None if origin is None else origin())"
    own_only = []  # launch_unchecked: ruda's own arrays alone, anything else to the general path
    for k, own, mine, _ in borrowing:
        own_only += [f"if type(a{k}) is ArrayArg:", *_indent(own)]
        own_only += [f"elif type(a{k}) is RudaTensor:", *_indent(mine), "else: return SLOW"]
    if arrays:
        own_only.append(
            f"bs, ns = {_tuple([f'b{k}' for k in arrays])}, {_tuple([f'n{k}' for k in arrays])}"
        )
    body = (  # direct's and the entry's, but for their slow paths and their last lines
        head
        + ("    kept, origin, table, known, wait = KEPT\n" if arrays else "")
        + "".join(f"    {line}\n" for line in _guarded(borrowing))
        + "    run = runs.get(cl)\n"
        "    if run is None: run = run_on(cl)\n"
        + (f"    if kept is None: return run(c, d, {direct_lists})\n" if arrays else "")
    )
    source = (
        "def launch(s, c, d, args):\n"
        + (head + "".join(f"    {line}\n" for line in checks)).replace(
            "SLOW", "slow(s, c, d, args)"
        )
        + f"    return s(task, c, d, {lists})\n"
        "def direct(cl, c, d, args, held=None, held_origin=None):\n"
        + body.replace(
            "KEPT", "held, held_origin, None, None, None if held is None else settle"
        ).replace("SLOW", "slow_direct(cl, c, d, args, held, held_origin)")
        + (
            f"    done = {tail}\n"
            "    if wait is not None and done is not False: wait(cl, task, kept)\n"
            "    return done\n"
            if arrays
            else f"    return run(c, d, {direct_lists})\n"
        )
        # the entry: direct's body as the kernel's launch(), with the kernel's own launch as
        # every slow path; a launch refused while a capture is open (run() returns False, see
        # ClientLaunch) is made again through it
        + "def make_entry(general):\n"
        "    def launch(cl, c, d, *args, **comptime):\n"
        "        if comptime: return general(cl, c, d, *args, **comptime)\n"
        + "".join(
            f"    {line}\n"
            for line in body.replace("KEPT", "None, None, None, None, None")
            .replace("SLOW", "general(cl, c, d, *args)")
            .splitlines()
        )
        + (
            f"        if {tail} is False: general(cl, c, d, *args)\n"
            "        elif wait is not None: wait(cl, task, kept)\n"
            if arrays
            else f"        return run(c, d, {direct_lists})\n"
        )
        + "    return launch\n"
        # launch_unchecked: the launcher kept for the bounds mode in force
        + "def unchecked(cl, c, d, args):\n"
        + (
            head
            + "".join(f"    {line}\n" for line in own_only)
            + "    mode = bounds_mode().execution_mode\n"
            "    run = runs.get(cl if mode is CHECKED else (cl, mode))\n"
            "    if run is None: run = run_on(cl, mode)\n"
            f"    return run(c, d, {direct_lists})\n"
        ).replace("SLOW", "False")
    )
    env["slow"] = launcher.checked_launch
    env["slow_direct"] = launcher._direct
    env["runs"] = launcher._runs
    env["run_on"] = launcher.run_on
    env["lend"] = lend
    env["lend_torch"] = lend_torch
    env["cupy_known"] = known_cupy
    env["lenders"] = lenders
    env["tables"] = lent_tables
    env["guarded"] = guarded_types
    env["guards"] = launcher._guarded.tables
    env["remember"] = launcher._guarded.remember
    env["NONE"] = {}
    env["ndarray"] = np.ndarray
    env["drain"] = _drain
    env["settle"] = settle
    env["bounds_mode"] = BoundsCheckMode.current
    env["CHECKED"] = ExecutionMode.CHECKED
    exec(compile(source, f"<ruda launch of {defn.name}>", "exec"), env)
    return env["launch"], env["direct"], env["make_entry"], env["unchecked"]  # type: ignore[return-value]


def _drain(client: Any, _task: object, _kept: object) -> None:
    """Wait for ``client``'s stream: the generated launch's way to make a NumPy array that a
    kernel writes in place (on a device that uses host memory) hold its results."""
    client.sync().result()


def _guarded(borrowing: Sequence[Lines]) -> list[str]:
    """The lines that bind the Array arguments ``a{k}``, given per ``(k, own, mine, foreign)``
    of ``borrowing`` as the lines for an ``ArrayArg``, a ``RudaTensor`` and any other argument.
    When the first is neither and all are of :data:`~.borrow.guarded_types` (exact torch tensors),
    their addresses (``key``) find what lending them gave before, and its guard checks their
    layouts in one call; on a miss they are lent one by one, then remembered
    (:meth:`~.borrow.GuardedTensors.remember`). ruda's own arguments take no step more."""
    if not borrowing:
        return []
    (first, own, mine, foreign), rest = borrowing[0], _lending(borrowing[1:])
    arrays = [k for k, _, _, _ in borrowing]
    tensors = _tuple([f"a{k}" for k in arrays])
    same = "".join(f" and type(a{k}) is kind" for k in arrays[1:])
    addresses = _tuple([f"a{k}.data_ptr()" for k in arrays])
    gather = f"bs, ns = {_tuple([f'b{k}' for k in arrays])}, {_tuple([f'n{k}' for k in arrays])}"
    guarded = [
        f"if (kind := type(a{first})) in guarded{same}:",
        f"    try: hit = guards.get(cl, NONE).get(key := {addresses})",
        "    except RuntimeError: return SLOW",
        f"    if hit is not None and not hit[0]{tensors}:",
        "        hit = hit[-1]  # the other layouts seen at the same addresses, newest first",
        f"        while hit is not None and not hit[0]{tensors}: hit = hit[-1]",
        "else: hit = key = None",
        "if hit is not None:",
        "    _, bs, ns, origin, _ = hit",
        f"    kept = {tensors}",
        "else:",
        *_indent(
            [
                *foreign,
                *rest,
                gather,
                f"if key is not None: remember(cl, key, {tensors}, (bs, ns, origin))",
            ]
        ),
    ]
    return [
        f"if type(a{first}) is ArrayArg:",
        *_indent([*own, *rest, gather]),
        f"elif type(a{first}) is RudaTensor:",
        *_indent([*mine, *rest, gather]),
        "else:",
        *_indent(guarded),
    ]


def _lending(borrowing: Sequence[Lines]) -> list[str]:
    """The lines that bind each Array argument of ``borrowing`` (as :func:`_guarded`'s) alone."""
    lines = []
    for k, own, mine, foreign in borrowing:
        lines += [f"if type(a{k}) is ArrayArg:", *_indent(own)]
        lines += [f"elif type(a{k}) is RudaTensor:", *_indent(mine), "else:", *_indent(foreign)]
    return lines


def _indent(lines: Sequence[str]) -> list[str]:
    """``lines`` one block deeper."""
    return [f"    {line}" for line in lines]


def _tuple(items: Sequence[str]) -> str:
    """The source of a tuple of ``items`` (the generated launches pass tuples: a constant when
    empty, and cheaper to build than lists)."""
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

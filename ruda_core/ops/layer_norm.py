"""LayerNorm over the last axis: :func:`layer_norm` and :func:`layer_norm_backward`.

Both take a contiguous 2-D ``input`` of shape ``(rows, features)`` (the leading axes of a larger
tensor flattened into ``rows``) as a :class:`~ruda_core.tensor.RudaTensor` or a
:class:`~ruda_core.runtime.layer_norm_args.TensorBuffer`, run on the device of ``input`` (or on
a client passed first) and return ``RudaTensor`` values; :func:`portable_layer_norm` and
:func:`portable_layer_norm_backward`, which the ``Runtime`` LayerNorm hooks fall back to, take the
client first and return :class:`TensorBuffer` values, the type of those hooks. Semantics are
PyTorch's ``torch.nn.functional.layer_norm`` and its gradients, per row ``r``::

    mean[r] = sum(x[r, :]) / features
    rstd[r] = 1 / sqrt(sum((x[r, :] - mean[r]) ** 2) / features + epsilon)   # biased variance
    out[r, j] = (x[r, j] - mean[r]) * rstd[r] * weight[j] + bias[j]

Element types: ``input``, ``weight``, ``bias``, ``grad``, ``out`` and the three gradients share
one float type (f16, bf16, f32 or f64, where the device supports it). ``mean`` and ``rstd`` have
shape ``(rows,)`` and the accumulator type: f32 for f16, bf16 and f32 input, f64 for f64 input
(as PyTorch's CUDA kernels keep them in f32 for half input). Every sum is accumulated in that
type and each result is rounded to its element type once.

Dispatch: where a native LayerNorm is registered for the client's runtime
(:mod:`.native`, the ``"layer_norm"`` a driver's plugin supplies: a :class:`NativeLayerNorm`),
the checked operands are passed to it and its results returned as they are; else, where the
runtime claims its own (``Runtime.has_native_layer_norm()``), to ``Runtime.layer_norm`` /
``layer_norm_backward``; otherwise ruda's portable kernels (:mod:`.layer_norm_kernels`) run on
the client's stream. :func:`portable_layer_norm` and :func:`portable_layer_norm_backward` always
run the portable kernels: a native implementation's fallback for operands it does not cover.

Cost of a call: the checks and the launch plan (:mod:`.layer_norm_plan`: kernel, line width,
cube shape, scalars, the layout of the one allocation holding the results) depend only on the
operands' shapes, strides, element types, byte alignment, the options and the client, so they
are made once per such key and kept; a repeated call looks its plan up, checks each handle's
size, allocates once and enqueues through the client's launchers kept with the plan, in the
mode ``BoundsCheckMode`` selects at that call. A key whose calls go to a runtime's native
LayerNorm is kept too: a repeated call runs the native implementation's replay of that kind of
call (``NativeLayerNorm.forward_replay``) with the operands' bindings, or, where it gave none,
passes its operands to the native LayerNorm as the checks would have, without running them
again. An
operand that differs in anything the checks cover makes another key, which runs the full
checks.

Both functions check every operand before anything is enqueued and then return at once: results
are computed asynchronously, and faults of the enqueued kernels surface at the next ``sync()``
or read on the client's stream, like any ``launch``. Since the checked shapes keep every access
in bounds, the portable kernels are enqueued in ``launch_unchecked``'s mode: ``BoundsCheckMode``
(``RUDA_BOUNDS_CHECK=validate``) turns the checks back on. They are thread-safe in the way
launches are. The gradients are deterministic: the same inputs on the same device give the same
bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, overload, runtime_checkable

from ..runtime import Binding, BoundsCheckMode, ComputeClient, LayoutError, PluginError, Runtime
from ..runtime.layer_norm_args import TensorBuffer, tensor_buffer
from ..tensor import RudaTensor
from .geometry import accumulator
from .layer_norm_plan import (
    CHUNK_ROWS,
    MAX_CHUNKS,
    BackwardPlan,
    ForwardPlan,
    backward_plan,
    forward_plan,
)
from .native import implementation
from .operands import (
    Operand,
    as_buffer,
    as_tensors,
    check_device,
    check_elem,
    check_epsilon,
    check_float,
    check_shape,
    client_and_operands,
)

__all__ = [
    "CHUNK_ROWS",
    "MAX_CHUNKS",
    "LayerNormReplay",
    "NativeLayerNorm",
    "layer_norm",
    "layer_norm_backward",
    "portable_layer_norm",
    "portable_layer_norm_backward",
]

Outputs = tuple[TensorBuffer, TensorBuffer, TensorBuffer]
#: What :func:`layer_norm` and :func:`layer_norm_backward` return.
Results = tuple[RudaTensor, RudaTensor, RudaTensor]
#: What a replay is: one kind of call again, from the bindings of its operands' handles.
LayerNormReplay = Callable[..., Outputs]


@runtime_checkable
class NativeLayerNorm(Protocol):
    """A runtime's native LayerNorm, registered as its ``"layer_norm"`` (:mod:`.native`).

    Each function takes operands already checked here (shapes, element types, contiguity,
    handle sizes) and keeps this module's contract: results, element types, asynchrony and
    deterministic gradients."""

    def layer_norm(
        self,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        bias: TensorBuffer | None,
        epsilon: float,
        /,
    ) -> Outputs:
        """``(output, mean, rstd)``, as :func:`layer_norm` returns them."""

    def layer_norm_backward(
        self,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        grad: TensorBuffer,
        mean: TensorBuffer,
        rstd: TensorBuffer,
        /,
    ) -> Outputs:
        """``(grad_input, grad_weight, grad_bias)``, as :func:`layer_norm_backward`."""

    def forward_replay(
        self,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        bias: TensorBuffer | None,
        epsilon: float,
        /,
    ) -> LayerNormReplay | None:
        """A function repeating :meth:`layer_norm` for operands like these, given the
        bindings of their handles (``input``, ``weight`` and, with a bias, ``bias``): operands
        of the same shapes, strides and element types, with the same byte offsets modulo 16 in
        their memory, the same epsilon and bias or not, on the same client. Asked once per such
        kind of checked call, and kept; None: every call of the kind takes :meth:`layer_norm`."""

    def backward_replay(
        self,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        grad: TensorBuffer,
        mean: TensorBuffer,
        rstd: TensorBuffer,
        /,
    ) -> LayerNormReplay | None:
        """As :meth:`forward_replay`, for :meth:`layer_norm_backward` (the five operands'
        bindings in order)."""


class _RuntimeHooks:
    """The native LayerNorm of a runtime that claims its own through ``Runtime``'s hooks
    (``has_native_layer_norm()``) with none registered: those hooks, without replays."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: type[Runtime]) -> None:
        self.runtime = runtime

    def layer_norm(
        self,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        bias: TensorBuffer | None,
        epsilon: float,
        /,
    ) -> Outputs:
        out, mean, rstd = self.runtime.layer_norm(client, input, weight, bias, epsilon)
        return out, mean, rstd

    def layer_norm_backward(
        self,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        grad: TensorBuffer,
        mean: TensorBuffer,
        rstd: TensorBuffer,
        /,
    ) -> Outputs:
        grads = self.runtime.layer_norm_backward(client, input, weight, grad, mean, rstd)
        return grads[0], grads[1], grads[2]

    def forward_replay(self, *operands: object) -> None:
        return None

    def backward_replay(self, *operands: object) -> None:
        return None


class _Native:
    """The plan of a key whose calls go to a native LayerNorm without a replay (checked once);
    a key whose native LayerNorm gave a replay keeps that instead."""

    __slots__ = ("native",)

    def __init__(self, native: NativeLayerNorm) -> None:
        self.native = native


P = TypeVar("P", ForwardPlan | _Native | LayerNormReplay, BackwardPlan | _Native | LayerNormReplay)
#: A plan and the bytes each operand's handle must hold for it.
Entry = tuple[P, tuple[int, ...]]
Key = tuple[object, ...]

#: The operand types the repeated path reads straight from their fields.
_OPERANDS = (TensorBuffer, RudaTensor)
#: The most plans kept per direction; a full table is emptied (a plan is cheap to rebuild).
_MAX_PLANS = 256
_forward_plans: dict[Key, Entry[ForwardPlan | _Native | LayerNormReplay]] = {}
_backward_plans: dict[Key, Entry[BackwardPlan | _Native | LayerNormReplay]] = {}
#: Whether a key is of a call that dispatches (to the native LayerNorm or the portable one)
#: or of a ``portable_*`` call.
_DISPATCH, _PORTABLE = "dispatch", "portable"


@overload
def layer_norm(
    input: Operand, weight: Operand, bias: Operand | None = None, epsilon: float = 1e-5
) -> Results: ...
@overload
def layer_norm(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None = None,
    epsilon: float = 1e-5,
) -> Results: ...
def layer_norm(*args: Any, **kwargs: Any) -> Results:
    """Normalise each row of ``input`` and apply ``weight`` and ``bias``, on ``input``'s
    device (or on a client passed first: ``layer_norm(client, input, weight, …)``).

    :param input: ``(rows, features)``, contiguous, float, ``features >= 1``; ``rows`` may be 0.
    :param weight: ``(features,)``, of ``input``'s element type.
    :param bias: ``(features,)`` of that type, or None for no bias.
    :param epsilon: added to the variance; a finite number >= 0, cast to the accumulator type.
    :returns: ``(output, mean, rstd)``: ``output`` like ``input``; ``mean`` and ``rstd`` of
        shape ``(rows,)`` in the accumulator type (f64 for f64 input, else f32). New tensors
        (from the portable kernels: views of one allocation, held while any of them lives),
        written asynchronously; ``numpy()`` waits for them.
    :raises TypeError: for an operand that is not a ``TensorBuffer`` or ``RudaTensor``.
    :raises LayoutError: for a wrong rank or shape, a non-contiguous operand, or a handle
        smaller than its tensor.
    :raises LaunchConfigError: for a non-float or mismatched element type or a bad epsilon.
    :raises UnsupportedFeature: when the device lacks ``input``'s element type.
    """
    client, operands = client_and_operands("layer_norm", args)
    return as_tensors(_layer_norm(client, *operands, **kwargs))  # type: ignore[return-value]


def _layer_norm(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None = None,
    epsilon: float = 1e-5,
) -> Outputs:
    """:func:`layer_norm` on ``client``, returning the buffers."""
    key, kept = _replay_forward(_DISPATCH, client, input, weight, bias, epsilon)
    if kept is not None:
        return kept
    x, w, b, eps = _forward_operands("layer_norm", client, input, weight, bias, epsilon)
    native = _native(client.runtime)
    if native is not None:
        buffers = (x, w) if b is None else (x, w, b)
        replay = native.forward_replay(client, x, w, b, eps)
        _keep(_forward_plans, key, _Native(native) if replay is None else replay, buffers)
        if replay is not None:
            return replay(*(buf.handle.binding() for buf in buffers))
        return native.layer_norm(client, x, w, b, eps)
    return _portable_forward(client, x, w, b, eps, key)


def portable_layer_norm(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None = None,
    epsilon: float = 1e-5,
) -> Outputs:
    """:func:`layer_norm` through ruda's portable kernels, whatever the runtime supplies: what a
    native implementation falls back to for operands it does not cover, and its baseline.
    Same contract and errors as :func:`layer_norm`."""
    key, kept = _replay_forward(_PORTABLE, client, input, weight, bias, epsilon)
    if kept is not None:
        return kept
    x, w, b, eps = _forward_operands("layer_norm", client, input, weight, bias, epsilon)
    return _portable_forward(client, x, w, b, eps, key)


@overload
def layer_norm_backward(
    input: Operand, weight: Operand, grad: Operand, mean: Operand, rstd: Operand
) -> Results: ...
@overload
def layer_norm_backward(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> Results: ...
def layer_norm_backward(*args: Any, **kwargs: Any) -> Results:
    """The gradients of :func:`layer_norm` given the gradient of its output, on ``input``'s
    device (or on a client passed first).

    :param input: the forward's ``input``: ``(rows, features)``, contiguous, float.
    :param weight: the forward's ``weight``: ``(features,)``, of ``input``'s element type.
    :param grad: the gradient of the forward's ``output``: like ``input``.
    :param mean: the forward's ``mean``: ``(rows,)``, in the accumulator type.
    :param rstd: the forward's ``rstd``: ``(rows,)``, in the accumulator type.
    :returns: ``(grad_input, grad_weight, grad_bias)`` of the shapes and element type of
        ``input``, ``weight`` and ``weight``; ``grad_bias`` is returned whether or not the
        forward had a bias. New tensors (from the portable kernels: views of one allocation),
        written asynchronously.
    :raises TypeError, LayoutError, LaunchConfigError, UnsupportedFeature: as
        :func:`layer_norm`, for every operand.
    """
    client, operands = client_and_operands("layer_norm_backward", args)
    return as_tensors(_layer_norm_backward(client, *operands, **kwargs))  # type: ignore[return-value]


def _layer_norm_backward(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> Outputs:
    """:func:`layer_norm_backward` on ``client``, returning the buffers."""
    operands = (input, weight, grad, mean, rstd)
    key, kept = _replay_backward(_DISPATCH, client, operands)
    if kept is not None:
        return kept
    x, w, g, mu, inv = _backward_operands(client, input, weight, grad, mean, rstd)
    native = _native(client.runtime)
    if native is not None:
        buffers = (x, w, g, mu, inv)
        replay = native.backward_replay(client, x, w, g, mu, inv)
        _keep(_backward_plans, key, _Native(native) if replay is None else replay, buffers)
        if replay is not None:
            return replay(*(buf.handle.binding() for buf in buffers))
        return native.layer_norm_backward(client, x, w, g, mu, inv)
    return _portable_backward(client, (x, w, g, mu, inv), key)


def portable_layer_norm_backward(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> Outputs:
    """:func:`layer_norm_backward` through ruda's portable kernels, whatever the runtime
    supplies (see :func:`portable_layer_norm`). Same contract and errors."""
    key, kept = _replay_backward(_PORTABLE, client, (input, weight, grad, mean, rstd))
    if kept is not None:
        return kept
    buffers = _backward_operands(client, input, weight, grad, mean, rstd)
    return _portable_backward(client, buffers, key)


def _native(runtime: type[Runtime]) -> NativeLayerNorm | None:
    """The native LayerNorm of ``runtime``'s clients: the one registered (:mod:`.native`), else
    the runtime's own hooks where it claims them, else None (the portable kernels run).

    :raises PluginError: for a registered implementation that is not a
        :class:`NativeLayerNorm`.
    """
    found = implementation("layer_norm", runtime)
    if found is None:
        return _RuntimeHooks(runtime) if runtime.has_native_layer_norm() else None
    if not isinstance(found, NativeLayerNorm):
        raise PluginError(
            f"the native layer_norm registered for {runtime.__name__} is {found!r}; it must "
            "define layer_norm, layer_norm_backward, forward_replay and backward_replay"
        )
    return found


def _forward_operands(
    op: str,
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None,
    epsilon: float,
) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer | None, float]:
    x = _input(op, client, input)
    w = _affine(op, "weight", weight, x, client)
    b = None if bias is None else _affine(op, "bias", bias, x, client)
    return x, w, b, check_epsilon(op, epsilon, accumulator(x.elem))


def _backward_operands(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer, TensorBuffer, TensorBuffer]:
    op = "layer_norm_backward"
    x = _input(op, client, input)
    w = _affine(op, "weight", weight, x, client)
    g = as_buffer(op, "grad", grad)
    check_device(op, "grad", g, client)
    check_shape(op, "grad", g, x.shape)
    check_elem(op, "grad", g, x.elem, "the input's element type")
    acc = accumulator(x.elem)
    stats = []
    for name, value in (("mean", mean), ("rstd", rstd)):
        buf = as_buffer(op, name, value)
        check_device(op, name, buf, client)
        check_shape(op, name, buf, (x.shape[0],))
        check_elem(op, name, buf, acc, f"the accumulator type of {x.elem} input")
        stats.append(buf)
    return x, w, g, stats[0], stats[1]


def _replay_forward(
    kind: str,
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None,
    epsilon: float,
) -> tuple[Key | None, Outputs | None]:
    """The call's key and, where a plan is kept for it and the handles are large enough, the
    results of replaying it: the kept portable plan, the native replay with the operands'
    bindings, or the native LayerNorm with the operands as the checks would have passed
    them."""
    operands = (input, weight) if bias is None else (input, weight, bias)
    key, plan, bindings = _lookup(_forward_plans, client, operands, (kind, type(epsilon), epsilon))
    if plan is None:
        return key, None
    if type(plan) is ForwardPlan:
        return key, plan.run(client, BoundsCheckMode.current().execution_mode, *bindings)
    if type(plan) is _Native:
        b = None if bias is None else _as_buffer(bias)
        x, w = _as_buffer(input), _as_buffer(weight)
        return key, plan.native.layer_norm(client, x, w, b, float(epsilon))
    return key, plan(*bindings)  # type: ignore[operator]  # the native replay


def _replay_backward(
    kind: str, client: ComputeClient, operands: tuple[Operand, ...]
) -> tuple[Key | None, Outputs | None]:
    """As :func:`_replay_forward`, for the backward's five operands."""
    key, plan, bindings = _lookup(_backward_plans, client, operands, (kind,))
    if plan is None:
        return key, None
    if type(plan) is BackwardPlan:
        return key, plan.run(client, BoundsCheckMode.current().execution_mode, *bindings)
    if type(plan) is _Native:
        x, w, g, mu, inv = map(_as_buffer, operands)
        return key, plan.native.layer_norm_backward(client, x, w, g, mu, inv)
    return key, plan(*bindings)  # type: ignore[operator]  # the native replay


def _lookup(
    plans: dict[Key, Entry[P]],
    client: ComputeClient,
    operands: tuple[Operand, ...],
    options: tuple[object, ...],
) -> tuple[Key | None, P | None, list[Binding]]:
    """The call's key, the plan kept for it if every handle is large enough for it, and the
    bindings of the operands' handles (what the plan launches with).

    The key is what a call's plan depends on: the client, the options, and each operand's
    shape, strides, element type and byte offset modulo 16 (the widest line); None when an
    operand is not exactly a ``TensorBuffer`` or ``RudaTensor`` (the full checks then run and
    say why), is on another device, or has a shape or strides that are not tuples."""
    key: list[object] = [client, *options]
    bindings: list[Binding] = []
    add_binding, add_key = bindings.append, key.append  # a method lookup less per operand
    server = client.server.server_id
    for value in operands:
        if type(value) not in _OPERANDS:
            return None, None, bindings  # the full checks say why
        buf: TensorBuffer = value  # type: ignore[assignment]  # both types have these fields
        binding = buf.handle.binding()
        if binding.server_id != server:
            return None, None, bindings
        add_binding(binding)
        add_key((buf.shape, buf.strides, buf.elem, binding.offset_bytes & 15))
    kept = tuple(key)
    try:
        entry = plans.get(kept)
    except TypeError:  # a TensorBuffer's list for a shape: the full checks make it a tuple
        return None, None, bindings
    if entry is None:
        return kept, None, bindings
    needs = entry[1]
    for k, binding in enumerate(bindings):  # not zip(strict=True): its end check costs 0.2 µs
        if binding.nbytes < needs[k]:
            return kept, None, bindings  # the full checks say why
    return kept, entry[0], bindings


def _as_buffer(value: Operand) -> TensorBuffer:
    """An operand of a kept key as the checks return it (its fields are already checked)."""
    if type(value) is TensorBuffer:
        return value
    return tensor_buffer(value.handle, value.shape, value.strides, value.elem)


def _portable_forward(
    client: ComputeClient,
    x: TensorBuffer,
    w: TensorBuffer,
    b: TensorBuffer | None,
    eps: float,
    key: Key | None,
) -> Outputs:
    buffers = (x, w) if b is None else (x, w, b)
    rows, features = x.shape
    plan = forward_plan(client, (rows, features), x.elem, b is not None, eps, _offsets(buffers))
    _keep(_forward_plans, key, plan, buffers)
    mode = BoundsCheckMode.current().execution_mode
    return plan.run(client, mode, *(buf.handle.binding() for buf in buffers))


def _portable_backward(
    client: ComputeClient, buffers: tuple[TensorBuffer, ...], key: Key | None
) -> Outputs:
    """``buffers``: the checked input, weight, grad, mean and rstd."""
    x = buffers[0]
    rows, features = x.shape
    plan = backward_plan(client, (rows, features), x.elem, _offsets(buffers[:3]))
    _keep(_backward_plans, key, plan, buffers)
    mode = BoundsCheckMode.current().execution_mode
    return plan.run(client, mode, *(buf.handle.binding() for buf in buffers))


def _keep(
    plans: dict[Key, Entry[P]],
    key: Key | None,
    plan: P,
    buffers: tuple[TensorBuffer, ...],
) -> None:
    """Keep ``plan`` under ``key`` (unless None) with the bytes each operand needs."""
    if key is None:
        return
    if len(plans) >= _MAX_PLANS:
        plans.clear()
    plans[key] = (plan, tuple(buf.size * buf.elem.nbytes for buf in buffers))


def _offsets(buffers: tuple[TensorBuffer, ...]) -> int:
    """The bitwise or of the operands' byte offsets in their memory (what bounds lines)."""
    offsets = 0
    for buf in buffers:
        offsets |= buf.handle.binding().offset_bytes
    return offsets


def _input(op: str, client: ComputeClient, value: object) -> TensorBuffer:
    x = as_buffer(op, "input", value)
    if len(x.shape) != 2:
        raise LayoutError(
            f"{op}: input has shape {x.shape}; expected (rows, features): flatten the leading "
            "axes into rows"
        )
    if x.shape[1] == 0:
        raise LayoutError(f"{op}: input has shape {x.shape}; LayerNorm needs features >= 1")
    check_float(op, "input", x, client)
    check_device(op, "input", x, client)
    return x


def _affine(
    op: str, name: str, value: object, x: TensorBuffer, client: ComputeClient
) -> TensorBuffer:
    buf = as_buffer(op, name, value)
    check_device(op, name, buf, client)
    check_shape(op, name, buf, (x.shape[1],))
    check_elem(op, name, buf, x.elem, "the input's element type")
    return buf

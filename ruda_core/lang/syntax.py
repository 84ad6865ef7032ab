"""Reading a kernel or device function: its source, the syntax the language accepts, and its
signature.

:func:`parse_function` runs when ``@kernel``/``@func`` decorates a function: it parses the
source and rejects, with a :class:`CompilationError` that names the function, file and line,
everything the language never accepts (lambdas, lists, dicts, comprehensions, slices, nested
functions, ``with``/``try``/``raise``/``import``/``global``, ``for``/``while`` ``else`` clauses,
``return <value>`` in a kernel, tuples other than a shape, an index, the targets and value of
one unpacking assignment ``a, b = ...`` and a ``@func``'s return value, f-strings outside
``print`` and ``print`` keywords other than ``sep``/``end``). Names are resolved later, when a
kernel is specialised, because a module may define an ``@func`` after the kernel that calls it.
This module builds no IR.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from ..errors import CompilationError
from ..ir import Elem
from .types import (
    ArrayType,
    Comptime,
    ComptimeType,
    ElemSpec,
    ElemVar,
    ScalarType,
    TensorType,
    annotation_type,
)

__all__ = [
    "KernelParam",
    "ParsedFunction",
    "evaluated_annotations",
    "parse_function",
    "parse_signature",
]


@dataclass(frozen=True, slots=True)
class ParsedFunction:
    """A checked Python function of the kernel language.

    :param once: names bound by exactly one plain assignment and never otherwise written; such a
        name bound to a compile-time value stays a compile-time value.
    :param assigned: every name the body writes (assignments, augmented assignments, loop
        targets).
    :param returns: how many ``return`` statements the body has.
    :param tail_return: the last top-level statement is a ``return``.
    """

    fn: Callable[..., object]
    kind: str
    name: str
    tree: ast.FunctionDef
    file: str
    line_offset: int
    once: frozenset[str]
    assigned: frozenset[str]
    returns: int
    tail_return: bool

    def line(self, node: ast.AST) -> int:
        """The file line of ``node``."""
        return self.line_offset + getattr(node, "lineno", 1)

    def error(self, message: str, node: ast.AST | None = None) -> CompilationError:
        line = self.line(node if node is not None else self.tree)
        return CompilationError(
            f"{self.file}:{line}: in {self.kind} '{self.name}': {message}",
            file=self.file,
            line=line,
        )


def parse_function(fn: Callable[..., object], kind: str) -> ParsedFunction:
    """Parse and check ``fn`` (``kind`` is ``"kernel"`` or ``"@func"``, for messages).

    :raises CompilationError: when the source cannot be read or uses unsupported syntax.
    """
    name = getattr(fn, "__name__", repr(fn))
    code = getattr(fn, "__code__", None)
    if code is None:
        raise CompilationError(f"{kind} '{name}': {fn!r} is not a Python function")
    file, first_line = code.co_filename, code.co_firstlineno
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise CompilationError(
            f"{file}:{first_line}: {kind} '{name}': cannot read its source ({exc}); define it in "
            "a file", file=file, line=first_line,
        ) from None  # fmt: skip
    tree = ast.parse(source)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise CompilationError(
            f"{file}:{first_line}: {kind} '{name}' must be a plain `def` function",
            file=file,
            line=first_line,
        )
    counts = _AssignCounter()
    for stmt in fdef.body:
        counts.visit(stmt)
    parsed = ParsedFunction(
        fn=fn,
        kind=kind,
        name=name,
        tree=fdef,
        file=file,
        line_offset=first_line - 1,
        once=frozenset(n for n, c in counts.plain.items() if c == 1 and n not in counts.other),
        assigned=frozenset(counts.plain) | counts.other,
        returns=counts.returns,
        tail_return=bool(fdef.body) and isinstance(fdef.body[-1], ast.Return),
    )
    _SyntaxChecker(parsed).check()
    return parsed


class _AssignCounter(ast.NodeVisitor):
    def __init__(self) -> None:
        self.plain: dict[str, int] = {}
        self.other: set[str] = set()
        self.returns = 0

    def visit_Assign(self, node: ast.Assign) -> None:
        targets = list(node.targets)
        while targets:  # the names of `a = ...` and of unpackings `a, (b, c) = ...` alike
            target = targets.pop()
            if isinstance(target, ast.Name):
                self.plain[target.id] = self.plain.get(target.id, 0) + 1
            elif isinstance(target, ast.Tuple):
                targets += target.elts
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.other.add(node.target.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.other.add(node.target.id)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        if isinstance(node.target, ast.Name):
            self.other.add(node.target.id)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        self.returns += 1
        self.generic_visit(node)


_STMTS = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.If,
    ast.For,
    ast.While,
    ast.Break,
    ast.Continue,
    ast.Return,
    ast.Expr,
    ast.Pass,
)
_EXPRS = (
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.IfExp,
    ast.Compare,
    ast.Call,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Name,
)
_OTHER = (ast.keyword, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

_REFUSED: dict[type[ast.AST], str] = {
    ast.Lambda: "lambdas are not supported in kernels; define an @func",
    ast.List: "lists are not supported in kernels; use LocalArray or SharedMemory",
    ast.ListComp: "comprehensions are not supported in kernels; write a for loop",
    ast.SetComp: "comprehensions are not supported in kernels; write a for loop",
    ast.DictComp: "comprehensions are not supported in kernels; write a for loop",
    ast.GeneratorExp: "generators are not supported in kernels; write a for loop",
    ast.Dict: "dicts are not supported in kernels",
    ast.Set: "sets are not supported in kernels",
    ast.Tuple: "tuples are not supported in kernels; assign one value per statement",
    ast.Slice: "a slice is a view of one axis, a[lo:hi]; a shaped array takes indices only",
    ast.Starred: "starred expressions are not supported in kernels",
    ast.NamedExpr: "the walrus operator is not supported in kernels",
    ast.JoinedStr: "f-strings are supported in kernels only as arguments of print()",
    ast.FunctionDef: "nested functions are not supported; define an @func at module level",
    ast.AsyncFunctionDef: "async functions are not supported in kernels",
    ast.ClassDef: "classes cannot be defined in kernels",
    ast.With: "`with` is not supported in kernels",
    ast.Try: "`try` is not supported in kernels",
    ast.Raise: "`raise` is not supported in kernels",
    ast.Assert: "`assert` is not supported in kernels",
    ast.Delete: "`del` is not supported in kernels",
    ast.Import: "imports are not allowed in kernels; import at module level",
    ast.ImportFrom: "imports are not allowed in kernels; import at module level",
    ast.Global: "`global` is not supported in kernels",
    ast.Nonlocal: "`nonlocal` is not supported in kernels",
    ast.Yield: "generators are not supported in kernels",
    ast.YieldFrom: "generators are not supported in kernels",
    ast.Await: "`await` is not supported in kernels",
}


def _declares_array(node: ast.AST) -> bool:
    """A call of ``SharedMemory`` or ``LocalArray`` (by name or attribute)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name in ("SharedMemory", "LocalArray")


def _fstring_nodes(call: ast.Call) -> list[ast.AST]:
    """The f-strings passed to ``print``, and their format specs (f-strings themselves)."""
    found: list[ast.AST] = []
    for arg in call.args:
        if isinstance(arg, ast.JoinedStr):
            found.append(arg)
            found += [
                v.format_spec
                for v in arg.values
                if isinstance(v, ast.FormattedValue) and v.format_spec is not None
            ]
    return found


class _SyntaxChecker:
    def __init__(self, parsed: ParsedFunction) -> None:
        self.parsed = parsed

    def fail(self, message: str, node: ast.AST) -> NoReturn:
        raise self.parsed.error(message, node)

    def check(self) -> None:
        args = self.parsed.tree.args
        if args.vararg is not None or args.kwarg is not None:
            self.fail("*args and **kwargs are not supported", self.parsed.tree)
        for stmt in self.parsed.tree.body:
            nodes = list(ast.walk(stmt))
            # tuples are allowed as a shaped array's shape and index: SharedMemory(T, (h, w)),
            # a[y, x]; a slice as the whole index is a view: a[lo:hi]
            allowed = {id(n.slice) for n in nodes if isinstance(n, ast.Subscript)}
            allowed |= {id(a) for n in nodes if _declares_array(n) for a in n.args}  # type: ignore[attr-defined]
            allowed |= {id(n) for n in _unpacking_tuples(nodes, self.parsed.kind)}
            calls = [n for n in nodes if isinstance(n, ast.Call) and self.prints(n)]
            allowed |= {id(f) for call in calls for f in _fstring_nodes(call)}
            for node in nodes:
                if not (
                    isinstance(node, ast.Tuple | ast.Slice | ast.JoinedStr) and id(node) in allowed
                ):
                    self.node(node)

    def node(self, node: ast.AST) -> None:
        refused = _REFUSED.get(type(node))
        if refused is not None:
            self.fail(refused, node)
        if isinstance(node, ast.For | ast.While) and node.orelse:
            self.fail(f"`{type(node).__name__.lower()} ... else` is not supported", node)
        elif isinstance(node, ast.For) and not isinstance(node.target, ast.Name):
            self.fail("a for loop needs one plain name as its target", node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self.target(target)
        elif isinstance(node, ast.AugAssign):
            self.target(node.target)
        elif isinstance(node, ast.AnnAssign) and (
            not isinstance(node.target, ast.Name) or node.value is None
        ):
            self.fail("an annotated assignment needs a plain name and a value", node)
        elif (
            isinstance(node, ast.Return) and node.value is not None and self.parsed.kind == "kernel"
        ):
            self.fail("a kernel cannot return a value; store results into an array", node)
        elif self.prints(node):
            self.print_call(node)  # type: ignore[arg-type]  # a Call, by prints()
        elif isinstance(node, ast.FormattedValue):
            self.formatted(node)
        elif not isinstance(node, _STMTS + _EXPRS + _OTHER):
            self.fail(f"{type(node).__name__} is not supported in kernels", node)

    def prints(self, node: ast.AST) -> bool:
        """Whether ``node`` calls the builtin ``print`` (a name the function never assigns)."""
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
            and "print" not in self.parsed.assigned
        )

    def print_call(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg not in ("sep", "end"):
                shown = f"{kw.arg}=" if kw.arg is not None else "**"
                self.fail(
                    f"print() in a kernel takes sep= and end= only, not {shown}: it always "
                    "writes to the device's output, flushed at the host's next sync",
                    kw,
                )

    def formatted(self, node: ast.FormattedValue) -> None:
        if node.conversion != -1:
            self.fail(
                "f-string conversions (!r, !s, !a) are not supported in kernels; write {x} or "
                "a format spec such as {x:.3f}",
                node,
            )
        spec = node.format_spec
        if spec is not None and any(isinstance(v, ast.FormattedValue) for v in spec.values):  # type: ignore[attr-defined]
            self.fail("a format spec in a kernel must be literal text, such as {x:8.3f}", spec)

    def target(self, target: ast.expr) -> None:
        elts = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(t, ast.Name | ast.Subscript) for t in elts):
            self.fail("assign to names or array elements (a[i]): x = ..., or x, y = ...", target)
        if any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Slice) for t in elts):
            self.fail("assign to one element at a time: v = a[lo:hi]; v[i] = ...", target)


def _unpacking_tuples(nodes: list[ast.AST], kind: str) -> list[ast.Tuple]:
    """The tuples of unpacking assignments (``a, b = c, d``) and, in a ``@func``, of returns."""
    found: list[ast.Tuple] = []
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            if len(node.targets) == 1:
                found.append(node.targets[0])
                if isinstance(node.value, ast.Tuple):
                    found.append(node.value)
        elif isinstance(node, ast.Return) and kind == "@func" and isinstance(node.value, ast.Tuple):
            found.append(node.value)
    return found


# -- signatures ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KernelParam:
    """One parameter of a kernel's Python signature.

    :param kind: ``"array"``, ``"tensor"``, ``"scalar"`` or ``"comptime"``.
    :param elem: the element (a scalar type or an element variable); ``None`` for comptime.
    :param default: the default of a comptime parameter (``inspect.Parameter.empty`` if none).
    :param group: for a field of a dataclass parameter, that parameter's name (``name`` is then
        ``<group>_<field>``), ``field`` the field's name and ``struct`` the dataclass.
    """

    name: str
    kind: str
    elem: ElemSpec | None
    default: object = inspect.Parameter.empty
    group: str | None = None
    field: str = ""
    struct: type | None = None

    def resolve(self, bindings: dict[ElemVar, Elem]) -> Elem:
        """The element of this parameter under ``bindings`` (which must bind its variable)."""
        if isinstance(self.elem, ScalarType):
            return self.elem.elem
        if isinstance(self.elem, ElemVar):
            return bindings[self.elem]
        raise TypeError(f"parameter '{self.name}' has no element")


def parse_signature(parsed: ParsedFunction) -> tuple[KernelParam, ...]:
    """The kernel's parameters from its annotations.

    :raises CompilationError: for a missing or unsupported annotation.
    """
    try:
        annotations = evaluated_annotations(parsed.fn)
    except Exception as exc:  # any error of the user's annotation expressions
        raise parsed.error(f"cannot evaluate the annotations: {exc}") from None
    sig = inspect.signature(parsed.fn)
    args = parsed.tree.args
    nodes = {a.arg: a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params: list[KernelParam] = []
    for p in sig.parameters.values():
        ann = annotations.get(p.name, inspect.Parameter.empty)
        if isinstance(ann, type) and dataclasses.is_dataclass(ann):
            params += _struct_params(parsed, nodes[p.name], p, ann)
        else:
            params.append(_kernel_param(parsed, nodes[p.name], p, ann))
    names = [kp.name for kp in params]
    clash = next((n for n in names if names.count(n) > 1), None)
    if clash is not None:
        raise parsed.error(
            f"the parameter name '{clash}' is used twice (a dataclass field's "
            "parameter is named <parameter>_<field>)"
        )
    return tuple(params)


def _struct_params(
    parsed: ParsedFunction, node: ast.arg, p: inspect.Parameter, cls: type
) -> list[KernelParam]:
    """The parameters of a dataclass parameter: one per field, arrays, tensors and scalars."""
    if p.default is not inspect.Parameter.empty:
        raise parsed.error(f"the dataclass parameter '{p.name}' cannot have a default", node)
    try:
        hints = typing.get_type_hints(cls)
    except Exception as exc:  # any error of the user's annotation expressions
        raise parsed.error(f"cannot evaluate the fields of {cls.__name__}: {exc}") from None
    out = []
    for f in dataclasses.fields(cls):
        field = inspect.Parameter(f"{p.name}_{f.name}", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        kp = _kernel_param(parsed, node, field, hints.get(f.name, inspect.Parameter.empty))
        if kp.kind == "comptime":
            raise parsed.error(
                f"field '{f.name}' of {cls.__name__}: a dataclass parameter holds arrays, "
                "tensors and scalars; pass a compile-time value as its own Comptime parameter",
                node,
            )
        out.append(dataclasses.replace(kp, group=p.name, field=f.name, struct=cls))
    if not out:
        raise parsed.error(f"the dataclass {cls.__name__} of '{p.name}' has no fields", node)
    return out


def evaluated_annotations(fn: Callable[..., object]) -> dict[str, Any]:
    """``fn``'s annotations, string ones evaluated in its globals and closure.

    :raises Exception: whatever evaluating an annotation raises.
    """
    code = fn.__code__
    cells = fn.__closure__ or ()
    closure = {}
    for name, cell in zip(code.co_freevars, cells, strict=True):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # an empty cell: a name assigned after the definition
            continue
    return inspect.get_annotations(fn, eval_str=True, locals=closure)


def _kernel_param(
    parsed: ParsedFunction, node: ast.arg, p: inspect.Parameter, ann: object
) -> KernelParam:
    ann = annotation_type(ann)
    if isinstance(ann, ArrayType):
        kind = "array"
    elif isinstance(ann, TensorType):
        kind = "tensor"
    elif isinstance(ann, ScalarType | ElemVar):
        return _no_default(parsed, node, p, KernelParam(p.name, "scalar", ann))
    elif isinstance(ann, ComptimeType) or ann is Comptime:
        return KernelParam(p.name, "comptime", None, p.default)
    else:
        shown = "no annotation" if ann is inspect.Parameter.empty else f"annotation {ann!r}"
        raise parsed.error(
            f"parameter '{p.name}' has {shown}; use Array[T], Tensor[T], a scalar type (f32, u32 "
            "…), an element variable (Float …) or Comptime[...]",
            node,
        )
    return _no_default(parsed, node, p, KernelParam(p.name, kind, ann.elem))


def _no_default(
    parsed: ParsedFunction, node: ast.arg, p: inspect.Parameter, param: KernelParam
) -> KernelParam:
    if p.default is not inspect.Parameter.empty:
        raise parsed.error(
            f"only Comptime parameters may have a default ('{p.name}' has one)", node
        )
    return param

"""The kernel IR: element types, variables, operations and structured control flow.

A backend author reads this package to write a compiler: :class:`KernelDefinition` is what
``Compiler.compile`` receives, and ``ops`` states the exact meaning of every operation.

This package is the ground floor: it imports nothing of ruda but the leaf :mod:`ruda_core.errors`,
so the runtime, the language and every backend build on it in any import order.
"""

from .bounds import REPORT_PARAM, lower_bounds, report_names
from .kernel import (
    DYNAMIC_SHARED_ALIGN,
    Block,
    Break,
    Continue,
    If,
    Instr,
    KernelDefinition,
    Loop,
    RangeLoop,
    Return,
    Stmt,
    rewrite,
    walk,
)
from .lines import line_alignment, scalarize_lines, uses_lines
from .modes import ExecutionMode
from .ops import (
    ARITH_BINARY,
    ATOMIC_OPS,
    BIT_COUNTS,
    BITWISE_BINARY,
    COMPARE_OPS,
    FLOAT_BINARY,
    FLOAT_TESTS,
    FLOAT_UNARY,
    INT_BINARY,
    INT_UNARY,
    LANE_WISE_OPS,
    LINE_OPS,
    PLANE_OPS,
    SYNC_REDUCE_OPS,
    Op,
)
from .printing import MAX_PRINT_VALUES, Conversion, PrintFormat
from .types import FLOAT_ELEMS, INT_ELEMS, NUMERIC_ELEMS, Elem
from .variables import (
    LINE_WIDTHS,
    ArrayVar,
    Builtin,
    BuiltinKind,
    Const,
    Local,
    LocalArray,
    Operand,
    Param,
    ParamKind,
    SharedArray,
    SourceLoc,
)
from .verify import verify

__all__ = [
    "ARITH_BINARY",
    "ATOMIC_OPS",
    "BITWISE_BINARY",
    "BIT_COUNTS",
    "COMPARE_OPS",
    "DYNAMIC_SHARED_ALIGN",
    "FLOAT_BINARY",
    "FLOAT_ELEMS",
    "FLOAT_TESTS",
    "FLOAT_UNARY",
    "INT_BINARY",
    "INT_ELEMS",
    "INT_UNARY",
    "LANE_WISE_OPS",
    "LINE_OPS",
    "LINE_WIDTHS",
    "MAX_PRINT_VALUES",
    "NUMERIC_ELEMS",
    "PLANE_OPS",
    "REPORT_PARAM",
    "SYNC_REDUCE_OPS",
    "ArrayVar",
    "Block",
    "Break",
    "Builtin",
    "BuiltinKind",
    "Const",
    "Continue",
    "Conversion",
    "Elem",
    "ExecutionMode",
    "If",
    "Instr",
    "KernelDefinition",
    "Local",
    "LocalArray",
    "Loop",
    "Op",
    "Operand",
    "Param",
    "ParamKind",
    "PrintFormat",
    "RangeLoop",
    "Return",
    "SharedArray",
    "SourceLoc",
    "Stmt",
    "line_alignment",
    "lower_bounds",
    "report_names",
    "rewrite",
    "scalarize_lines",
    "uses_lines",
    "verify",
    "walk",
]

"""Operations of the kernel IR and their exact semantics.

Every backend implements every operation with the meaning written here; the NumPy reference
device is the executable form of this page. Operands of an operation have one element type
unless the operation says otherwise (the front end inserts casts). Results are written to a
:class:`~ruda_core.ir.variables.Local`.

Integer arithmetic wraps (two's complement). ``FLOOR_DIV`` and ``MOD`` follow Python: the
quotient rounds toward negative infinity and the remainder has the divisor's sign (for floats
``FLOOR_DIV`` is ``floor(a / b)`` and ``MOD`` is ``a - floor(a / b) * b``, unlike Python's
where ``b`` is infinite and ``a`` finite: ``MOD`` is NaN, and ``FLOOR_DIV`` a zero where the
signs differ, Python's ``-1.0``). Integer division or modulo by zero gives an unspecified
value (never a crash). Shifts use the shift amount modulo the operand's bit width; ``SHR`` is
arithmetic for signed and logical for unsigned integers. A ``CAST`` from float to integer
truncates toward zero (out-of-range values are unspecified); to ``bool`` it is ``x != 0``; from
``bool`` it is 0 or 1. ``MIN``/``MAX`` of floats with one NaN return the other operand (C
``fmin``/``fmax``); of ``-0.0`` and ``+0.0`` they return either zero (devices differ), and so
does ``CLAMP`` where it compares two zeros. ``ROUND`` rounds half to even. An ``f16`` or
``bf16`` operation is computed in ``f32`` and rounded to its type once, to nearest even, the
composite ``FLOOR_DIV``, ``MOD`` and ``RSQRT`` included.

Atomics act on one element of a global or shared array and return the element's value from
before the operation (``out`` may be ``None`` when it is unused). The order in which concurrent
atomics on one element apply is unspecified, but each applies exactly once. The wrapping
counters are CUDA's ``atomicInc``/``atomicDec`` on ``u32``: ``ATOMIC_INC_WRAP`` stores
``0 if old >= limit else old + 1`` and ``ATOMIC_DEC_WRAP`` stores
``limit if old == 0 or old > limit else old - 1``.

Plane operations act over the units of one plane (``PLANE_DIM`` consecutive ``UNIT_POS`` values
of one cube) and must be reached by all of them (uniform control flow), like ``SYNC_UNITS``,
which must be reached by every unit of the cube. Lanes are ``UNIT_POS_PLANE``. A cube whose unit
count is not a multiple of ``PLANE_DIM`` ends with a *partial plane* of fewer lanes (a cube
smaller than a plane is one); ``PLANE_DIM`` is still the device's width there, and the lanes
past the cube's last unit do not exist. Every plane operation acts over the lanes that exist:
reductions, scans, ``PLANE_ALL`` and ``PLANE_ANY`` combine those lanes only. ``PLANE_BALLOT``
sets bit ``k`` for lane ``k`` when its operand is true; only lanes 0 to 31 have a bit (planes
are at most 32 lanes on every device ruda drives), and a lane that does not exist has none.
``PLANE_ELECT`` is true on the lowest lane of the plane that reaches it (lane 0 under the
uniform rule). ``PLANE_BROADCAST`` and ``PLANE_SHUFFLE`` read 0 where the source lane is not a
lane of the plane that exists (outside the plane, or past the cube's last unit). The relative
shuffles read lane ``lane - delta`` (``UP``), ``lane + delta`` (``DOWN``) or ``lane ^ mask``
(``XOR``); a lane whose source is not a lane of the plane that exists (``delta`` or ``mask`` as
large as the plane included) reads its own value, as CUDA's ``__shfl_*_sync`` do for sources
within 32 lanes.

``SYNC_PLANE`` is the barrier of one plane (its units' earlier shared and global memory accesses
are visible to the plane's later ones). ``SYNC_UNITS_COUNT``/``_AND``/``_OR`` are ``SYNC_UNITS``
that also give every unit the number of units of the cube whose operand is true (``u32``),
whether all are, and whether any is. ``FENCE_UNITS``/``FENCE_DEVICE`` order the unit's earlier
memory accesses before its later ones as seen by the units of its cube / of the whole device
(CUDA's ``__threadfence_block``/``__threadfence``); they wait for nobody.

``PRINT`` writes one record of text per unit that executes it, formatted by the instruction's
:class:`~ruda_core.ir.printing.PrintFormat` (exact per element type, see
:mod:`ruda_core.ir.printing`). A record is never split or interleaved with another; the order
of records of different units is unspecified (the NumPy device orders them by cube, then unit).

**Lines.** A :class:`~ruda_core.ir.variables.Local` of width ``w`` (2, 4 or 8) is a line: ``w``
lanes of its element. The operations of :data:`LANE_WISE_OPS` apply to lines lane by lane:
lane ``k`` of the result is the scalar operation on lane ``k`` of every line operand, with the
meaning written above for the element, and a scalar operand counts as the same value in every
lane (broadcast). All line operands have one width, which the result has; the result may also
be a line when every operand is a scalar, and then holds the scalar result in every lane
(``ASSIGN(line, 0)`` zeroes a line). A comparison of lines is a ``bool`` line; ``SELECT``
with a ``bool`` line picks per lane. No other operation takes a line, except:

* ``LOAD_LINE(arr, i)``: lane ``k`` of the result (of width ``w``) is ``arr[i * w + k]``. ``arr``
  is a global array or tensor parameter or a shared array, and ``i`` an integer *line* index, so
  a line starts at a multiple of ``w`` elements (its address is aligned to the line's size, at
  most 16 bytes, from the buffer's start: backends declare a line-accessed shared array so).
* ``STORE_LINE(arr, i, v)``: ``arr[i * w + k] = v[k]`` for every lane ``k`` of the line ``v``.
* ``LINE_LANE(v, Const k)``: lane ``k`` (``0 <= k < w``) of the line ``v``, a scalar.
* ``LINE_BUILD(a_0, …, a_{w-1})``: the line of width ``w`` whose lanes are the scalars ``a_k``.

A line access is in bounds when its whole line is: ``i < len(arr) // w``. The last, partial
line of an array whose length is not a multiple of ``w`` is out of bounds as a whole; the
bounds pass (:mod:`~ruda_core.ir.bounds`) reads it as a line of zeros and drops its store.

**Cooperative matrices** (:mod:`~ruda_core.ir.matrix`). A
:class:`~ruda_core.ir.matrix.Fragment` is a tile held by one plane as a whole; its elements are
spread over the plane's units in an unspecified, unobservable way. Every ``CMMA_*`` operation is
a plane operation: it must be reached by every unit of the plane (uniform control flow), its
scalar operands (``value``, ``offset``, ``stride``) must be the same on every unit of the plane,
and the plane must be whole (a cube's unit count a multiple of ``PLANE_DIM``); otherwise the
result is unspecified. A tile of ``R x C`` elements (``A``: ``m x k``, ``B``: ``k x n``, an
accumulator: ``m x n``) lies in memory from element ``offset`` of the array: element ``(r, c)``
is at ``offset + r * stride + c`` in ``ROW_MAJOR`` layout and ``offset + c * stride + r`` in
``COL_MAJOR`` (the layout operand is ``Const(MatrixLayout.value, u32)``). The array is a global
array or shared memory of the fragment's element type; a fragment of an ``A`` or ``B`` role is
loaded in its own layout. CUDA also needs ``offset`` to be a multiple of 32 bytes and
``stride`` a multiple of 16 bytes; other devices accept any.

* ``CMMA_FILL(frag, v)``: every element of ``frag`` is ``v`` (of the fragment's element type;
  rounded to tf32 for a tf32 fragment).
* ``CMMA_LOAD(frag, arr, offset, stride, layout)``: ``frag`` gets the tile (tf32 fragments
  round each element to tf32, :func:`~ruda_core.ir.matrix.round_tf32`).
* ``CMMA_EXECUTE(a, b, c, d)``: ``d = a*b + c`` with ``acc = c``, then for each ``k`` in order
  ``acc = round(acc + a[i, k] * b[k, j])``: the products exact, each sum rounded once to the
  accumulator's type (:func:`~ruda_core.ir.matrix.multiply_accumulate`). All four have one
  ``m, n, k``; ``a`` and ``b`` one element type, ``c`` and ``d`` another (``f16`` or ``f32``).
  The device must support the :class:`~ruda_core.ir.matrix.MatrixConfig`; ``d`` may be ``c``.
  Tensor cores sum in an unspecified order and width: devices other than the reference agree
  within the accumulator type's tolerance, not bit for bit.
* ``CMMA_STORE(arr, offset, frag, stride, layout)``: the accumulator ``frag`` is written as a
  tile (only accumulators can be stored).
* ``CMMA_CAST(dst, src)``: the accumulator ``dst`` gets ``src``'s elements converted to its type
  (``src`` an accumulator of the same shape).

A tile is in bounds when its last element is: ``offset + (R - 1) * stride + C <= len(arr)``
(row-major; ``C`` and ``R`` swap for column-major), computed without wrapping. The bounds pass
treats the tile as one access: out of bounds, a load fills the fragment with zeros and a store
is dropped.

**Asynchronous copies** (CUDA's ``cp.async``, the pipeline primitives of CubeCL and CUTLASS).
Each unit has its own queue of copies from global to shared memory, in *groups*:

* ``COPY_ASYNC(dst, i, src, j, Const w)``: queue the copy of line ``j`` of the global array
  parameter ``src`` (its elements ``j*w .. j*w+w-1``) to line ``i`` of the shared array ``dst``
  of the same element type; ``w * nbytes`` is 4, 8 or 16 bytes and ``w`` is 2, 4 or 8 (both
  starts are aligned to the line, as for ``LOAD_LINE``). The copy belongs to the unit's open
  group.
* ``ASYNC_COMMIT()``: close the unit's open group (an empty group is allowed) and open a new one.
* ``ASYNC_WAIT(Const n)``: wait until at most ``n`` (``u32``) of the unit's closed groups are
  unfinished: the copies of every other closed group are done and their elements visible to
  this unit. They become visible to the other units of the cube through a later ``SYNC_UNITS``
  that both reach, as any shared store does.

A copy may happen at any time between its ``COPY_ASYNC`` and the ``ASYNC_WAIT`` that completes
its group; its source is read at some time in that span too. A kernel that reads or writes the
destination line, or writes the source line, in that span, or that ends with a copy not
waited for, has an unspecified result (a race). A copy done when it is issued is therefore a
correct implementation: the NumPy device and the OpenCL targets run ``COPY_ASYNC`` as
``LOAD_LINE`` + ``STORE_LINE`` and drop the other two
(:func:`~ruda_core.ir.copies.lower_async_copies`). Bounds: a copy is two line accesses, each
in bounds when its whole line is; in ``CHECKED`` and ``VALIDATE`` modes the bounds pass runs
the copy as that load and store, so an out-of-bounds source line copies zeros and an
out-of-bounds destination line is dropped (and reported).

**Warpgroup matrices** (Hopper's ``wgmma``, :mod:`~ruda_core.ir.warpgroup`). A *warpgroup* is
128 consecutive units of a cube (units ``128g .. 128g + 127``: four planes of 32); a kernel that
uses these operations runs in cubes whose unit count is a multiple of 128. A ``WARPGROUP``
fragment is a ``64 x n`` tile of ``f32`` held by one warpgroup as a whole (``n`` a multiple of
8 from 8 to 256). Every ``WGMMA_*`` operation must be reached by every unit of the warpgroup
(uniform control flow) with the same scalar operands. Operands ``A`` (``64 x 16``) and ``B``
(``16 x n``) are read from shared arrays of ``bf16`` or ``f16`` (one type) that lie in the
*128-byte swizzle*: the array starts 1024-byte aligned and its logical element ``e`` is stored
at element ``swizzle(e) = e ^ (((e >> 6) & 7) << 3)``: in each row of 64 elements (128 bytes),
16-byte chunk ``c`` of row ``r`` lives at chunk ``c ^ (r % 8)``
(:func:`~ruda_core.ir.warpgroup.swizzle`). With ``S`` the array read through the swizzle:

* ``A[i, kk] = S[a_at + 64 * i + kk]`` (K-major: 64 rows of 64 elements, the operand's 16
  columns from ``a_at``), ``a_at % 16 == 0`` and ``a_at % 512 < 64``;
* ``B[kk, j] = S[b_at + block * (j // 64) + 64 * kk + j % 64]`` (N-major: rows of 64 columns
  of ``B``, blocks of 64 columns ``block`` elements apart), ``b_at % 512 == 0`` and
  ``block % 512 == 0``.

* ``WGMMA_FILL(acc, v)``: every element of the accumulator ``acc`` is ``v`` (``f32``).
* ``WGMMA_FENCE()``: orders the warpgroup's earlier writes of its accumulators and of shared
  memory before the ``WGMMA_MMA`` that follow (PTX's ``wgmma.fence``); required before the first
  ``WGMMA_MMA`` after a ``WGMMA_FILL`` or any other write of the accumulator, and after writing
  the operand tiles (with a ``SYNC_UNITS`` after the copies of other units).
* ``WGMMA_MMA(acc, a, a_at, b, b_at, Const block)``: issue ``acc += A @ B`` asynchronously, the
  products exact and the sum rounded to ``f32`` as ``CMMA_EXECUTE``'s (the order of the 16 terms
  is unspecified on tensor cores). It joins the warpgroup's open group.
* ``WGMMA_COMMIT()``: close the warpgroup's open group of products and open a new one.
* ``WGMMA_WAIT(Const n)``: wait until at most ``n`` of the warpgroup's closed groups are
  unfinished; the products of the others are in their accumulators.
* ``WGMMA_STORE(arr, offset, acc, stride, rows, cols)``: element ``(r, c)`` of ``acc`` is
  written to ``arr[offset + r * stride + c]`` (a global or shared ``f32`` array) where
  ``r < rows`` and ``c < cols`` (``u32``); the others are not written.

Between a ``WGMMA_MMA`` and the ``WGMMA_WAIT`` that completes its group the kernel must not read
or write its accumulator (``WGMMA_STORE``, ``WGMMA_FILL``) nor write its operand tiles, and every
group must be waited for before the kernel ends; otherwise the result is unspecified. The NumPy
device reads the operand tiles at issue, adds the product at the completing wait, and raises
(naming the kernel) for each of these faults it sees: an access of a pending accumulator, an
operand tile changed before the wait, a kernel that ends with products pending, a
``WGMMA_MMA`` after an accumulator write with no ``WGMMA_FENCE`` between, a misaligned operand,
and a cube whose unit count is not a multiple of 128. The bounds pass does not check these
operations: the model raises on an operand outside its shared array, and ``WGMMA_STORE`` takes
its limits from the kernel.

**Asynchronous barriers and bulk copies** (Hopper's ``mbarrier`` and the 1-D form of its tensor
memory accelerator, ``cp.async.bulk``; :mod:`~ruda_core.ir.barriers`). A barrier array is a
shared array of ``u64`` that holds one barrier per element and is touched only by these
operations. Each barrier of each cube has a *phase* (0 at the start, its parity ``phase % 2``),
an *init count*, a *pending arrival count* and a *transaction count* (bytes). In each:

* ``MBAR_INIT(bars, i, count)``: barrier ``bars[i]`` starts phase 0 with ``count`` (``u32``,
  1 to 2**20 - 1) pending arrivals and no transactions. One unit of the cube initialises a
  barrier; the others may use it only after a ``SYNC_UNITS`` that follows the init.
* ``MBAR_ARRIVE(bars, i)``: one arrival: the pending count drops by one.
* ``MBAR_EXPECT_TX(bars, i, nbytes)``: the transaction count rises by ``nbytes`` (``u32``),
  then one arrival (PTX's ``mbarrier.arrive.expect_tx``).
* ``BULK_COPY(dst, dst_at, src, src_at, n, bars, i)``: copy the ``n`` (``u32``) elements
  ``src[src_at ..]`` of the global array parameter ``src`` to ``dst[dst_at ..]`` of the shared
  array ``dst`` of the same element type, asynchronously; when the copy is done its
  ``n * nbytes`` bytes complete as transactions on ``bars[i]`` (the count drops by them). Both
  runs start 16-byte aligned and ``n * nbytes`` is a non-zero multiple of 16.
* ``TENSOR_COPY(dst, dst_at, src, rows, cols, row, col, box_rows, box_cols, bars, i)``: the
  2-D form (PTX's ``cp.async.bulk.tensor.2d`` with a tensor map of the 128-byte swizzle). The
  global array parameter ``src`` is read as a row-major ``rows x cols`` matrix (``rows`` and
  ``cols`` are ``u32`` scalar parameters of the kernel: the host builds the copy's tensor map
  from them at launch); the box of ``box_rows x box_cols`` (constants; ``box_rows`` from 1 to
  256, ``box_cols`` elements make 128 bytes) whose first element is ``(row, col)`` is copied to
  ``dst`` from element ``dst_at`` (1024-byte aligned), box row ``r`` in the 128 bytes from
  element ``dst_at + r * box_cols``, its 16-byte chunk ``c`` at chunk ``c ^ (r % 8)`` (the
  swizzle that ``WGMMA_MMA`` reads). Elements outside the matrix arrive as zeros. The whole
  box's bytes complete as transactions on ``bars[i]``, those outside the matrix included.
  ``cols * nbytes`` must be a multiple of 16 and ``src`` 16-byte aligned (the host refuses
  the launch otherwise); every other rule of ``BULK_COPY`` holds.
* ``MBAR_WAIT(bars, i, parity)``: wait until the phase of ``bars[i]`` whose parity is
  ``parity % 2`` (``u32``) has completed: return at once when the barrier's current phase has
  the other parity (so a fresh barrier's ``parity`` 1 does not wait), else spin until the
  current phase completes (PTX's ``mbarrier.try_wait.parity`` loop). The bulk copies that
  completed that phase are then visible to the waiting unit.
* ``BULK_FENCE()``: orders the unit's earlier writes of shared memory before the bulk stores
  that follow (PTX's ``fence.proxy.async.shared::cta``): a bulk store reads its source through
  another path than the units' stores, so each unit that wrote the source fences, and a
  ``SYNC_UNITS`` after the fences comes before the store of another unit.
* ``BULK_STORE(dst, dst_at, src, src_at, n)``: copy the ``n`` (``u32``) elements
  ``src[src_at ..]`` of the shared array ``src`` to ``dst[dst_at ..]`` of the global array
  parameter ``dst`` of the same element type, asynchronously, with the alignment and size rules
  of ``BULK_COPY``. It joins the unit's open *bulk group*.
* ``BULK_COMMIT()``: close the unit's open bulk group (an empty one is allowed).
* ``BULK_WAIT(Const n)``: wait until at most ``n`` (``u32``) of the unit's closed bulk groups
  still read their sources (PTX's ``cp.async.bulk.wait_group.read``): the sources of the others
  may be written again. The stores' elements are in global memory when the kernel has ended.

A phase completes when its pending arrival count and its transaction count are both zero: the
barrier then moves to the next phase (flipping its parity) with the init count pending again.
Between a ``BULK_COPY`` and the completion of the phase it completes on, the kernel must not
read or write its destination nor write its source; every copy must complete before the kernel
ends; a barrier must be initialised before any other use and by one unit; a phase must not
take more arrivals than its count. Between a ``BULK_STORE`` and the ``BULK_WAIT`` that completes
its group the kernel must not write its source; it must not access the destination again before
it ends, and it must wait for every bulk group. Otherwise the result is unspecified (on a GPU,
often a hang).

The NumPy device runs the units of a cube in step and models each barrier exactly: a copy reads
its source at issue, fills its destination with the poison pattern until the phase completes and
then writes it, and the model raises (naming the kernel) for a use before init, an init by
two units at once, a misaligned or odd-sized copy or one outside its arrays, a destination
written while its copy is pending, a phase given more arrivals than its count, a wait whose
phase cannot complete (every unit of the cube is waiting: the arrivals or transaction bytes
it lacks are named, so an ``MBAR_EXPECT_TX`` whose bytes differ from its copies' shows) and a
kernel that ends with copies pending. A bulk store reads its source at issue and writes its
destination at the wait that completes its group; the model raises for a source written before
that wait and for bulk groups pending at the end. It cannot see a missing ``BULK_FENCE``, and it
reports a wait that only units of another branch of the same ``if`` could complete as one that
can never return. The bounds pass does not check these operations.
"""

from __future__ import annotations

import enum

__all__ = [
    "ARITH_BINARY",
    "ASYNC_COPY_OPS",
    "ATOMIC_COMBINE",
    "ATOMIC_OPS",
    "BARRIER_OPS",
    "BITWISE_BINARY",
    "COMPARE_OPS",
    "FLOAT_UNARY",
    "LANE_WISE_OPS",
    "LINE_OPS",
    "MATRIX_OPS",
    "PLANE_OPS",
    "SYNC_REDUCE_OPS",
    "WARPGROUP_OPS",
    "Op",
]


class Op(enum.Enum):
    """An IR operation. Comments give (operands) -> result."""

    # copy and conversion
    ASSIGN = "assign"  #: (a) -> a
    CAST = "cast"  #: (a) -> a converted to out.elem
    SELECT = "select"  #: (cond: bool, a, b) -> a if cond else b (both already evaluated)

    # arithmetic, numeric operands of one type
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"  #: floats only: true division
    FLOOR_DIV = "floor_div"  #: Python //
    MOD = "mod"  #: Python %
    POW = "pow"  #: floats only
    MIN = "min"
    MAX = "max"
    NEG = "neg"
    ABS = "abs"
    FMA = "fma"  #: (a, b, c) -> a * b + c, fused where the target has it (floats only)
    CLAMP = "clamp"  #: (x, lo, hi) -> min(max(x, lo), hi)

    # float math, unary, float operands
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    LOG1P = "log1p"
    SQRT = "sqrt"
    RSQRT = "rsqrt"  #: 1 / sqrt(x)
    RECIP = "recip"  #: 1 / x
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    ERF = "erf"
    ERFC = "erfc"
    LGAMMA = "lgamma"  #: log |gamma(x)|
    EXPM1 = "expm1"
    LOG10 = "log10"
    CBRT = "cbrt"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"  #: half to even
    TRUNC = "trunc"
    ISNAN = "isnan"  #: -> bool
    ISINF = "isinf"  #: -> bool
    ISFINITE = "isfinite"  #: -> bool

    # float math, binary, float operands of one type
    ATAN2 = "atan2"  #: (y, x)
    HYPOT = "hypot"
    FMOD = "fmod"  #: C's fmod: truncated division's remainder, exact
    REMAINDER = "remainder"  #: IEEE remainder: x - n*y, n = x/y rounded half to even; exact
    COPYSIGN = "copysign"

    # comparison: operands of one type -> bool
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"

    # logic on bool
    AND = "and"
    OR = "or"
    NOT = "not"

    # bitwise on integers
    BIT_AND = "bit_and"
    BIT_OR = "bit_or"
    BIT_XOR = "bit_xor"
    BIT_NOT = "bit_not"
    SHL = "shl"  #: (a, n) -> a << (n mod bits); n has a's type
    SHR = "shr"  #: (a, n) -> a >> (n mod bits); n has a's type
    POPCOUNT = "popcount"  #: -> u32: the set bits
    LEADING_ZEROS = "leading_zeros"  #: -> u32: zero bits above the highest set one (width for 0)
    TRAILING_ZEROS = "trailing_zeros"  #: -> u32: zero bits below the lowest set one (width for 0)
    FIND_FIRST_SET = "find_first_set"  #: -> u32: 1 + the lowest set bit's index; 0 for 0
    REVERSE_BITS = "reverse_bits"
    MUL_HI = "mul_hi"  #: the high half of the double-width product
    SATURATING_ADD = "saturating_add"  #: clamped to the type's range instead of wrapping
    SATURATING_SUB = "saturating_sub"
    BITCAST = "bitcast"  #: (x) -> the same bits as the result's type, of x's width

    # memory: the first operand is an ArrayVar, the index any integer type
    INDEX = "index"  #: (arr, i) -> arr[i]
    INDEX_ASSIGN = "index_assign"  #: (arr, i, v) -> None; arr[i] = v

    # metadata of a global array or tensor, all u32
    LEN = "len"  #: (arr) -> number of elements
    SHAPE = "shape"  #: (tensor, Const dim) -> extent of axis dim
    STRIDE = "stride"  #: (tensor, Const dim) -> stride of axis dim, in elements
    RANK = "rank"  #: (tensor) -> number of axes

    # atomics: (arr, i, v) -> old value; CAS is (arr, i, cmp, v)
    ATOMIC_LOAD = "atomic_load"  #: (arr, i) -> value
    ATOMIC_STORE = "atomic_store"  #: (arr, i, v) -> None
    ATOMIC_SWAP = "atomic_swap"
    ATOMIC_ADD = "atomic_add"
    ATOMIC_SUB = "atomic_sub"
    ATOMIC_MIN = "atomic_min"
    ATOMIC_MAX = "atomic_max"
    ATOMIC_AND = "atomic_and"
    ATOMIC_OR = "atomic_or"
    ATOMIC_XOR = "atomic_xor"
    ATOMIC_CAS = "atomic_cas"  #: (arr, i, cmp, v): if arr[i] == cmp: arr[i] = v; -> old
    ATOMIC_INC_WRAP = "atomic_inc_wrap"  #: (arr: u32, i, limit) -> old; a counter 0..limit
    ATOMIC_DEC_WRAP = "atomic_dec_wrap"  #: (arr: u32, i, limit) -> old; counting down to 0

    # synchronisation
    SYNC_UNITS = "sync_units"  #: () -> None; a barrier for the units of one cube
    SYNC_UNITS_COUNT = "sync_units_count"  #: (bool) -> u32; a barrier counting true operands
    SYNC_UNITS_AND = "sync_units_and"  #: (bool) -> bool; a barrier: is every operand true
    SYNC_UNITS_OR = "sync_units_or"  #: (bool) -> bool; a barrier: is any operand true
    FENCE_UNITS = "fence_units"  #: () -> None; orders memory accesses for the cube
    FENCE_DEVICE = "fence_device"  #: () -> None; orders memory accesses for the device

    # plane (warp / subgroup) operations
    PLANE_SUM = "plane_sum"
    PLANE_PROD = "plane_prod"
    PLANE_MIN = "plane_min"
    PLANE_MAX = "plane_max"
    PLANE_ALL = "plane_all"  #: (bool) -> bool
    PLANE_ANY = "plane_any"  #: (bool) -> bool
    PLANE_BROADCAST = "plane_broadcast"  #: (v, lane: u32 uniform) -> v of that lane
    PLANE_SHUFFLE = "plane_shuffle"  #: (v, src: u32 per unit) -> v of lane src
    PLANE_INCLUSIVE_SUM = "plane_inclusive_sum"
    PLANE_EXCLUSIVE_SUM = "plane_exclusive_sum"
    PLANE_BALLOT = "plane_ballot"  #: (bool) -> u32: bit k set when lane k's operand is true
    PLANE_ELECT = "plane_elect"  #: () -> bool: true on the plane's lowest lane that reaches it
    PLANE_SHUFFLE_UP = "plane_shuffle_up"  #: (v, delta: u32) -> v of lane - delta
    PLANE_SHUFFLE_DOWN = "plane_shuffle_down"  #: (v, delta: u32) -> v of lane + delta
    PLANE_SHUFFLE_XOR = "plane_shuffle_xor"  #: (v, mask: u32) -> v of lane ^ mask
    SYNC_PLANE = "sync_plane"  #: () -> None; a barrier for the units of one plane

    # output
    PRINT = "print"  #: (values...) -> None; writes Instr.format's text (see ir.printing)

    # lines (see the module docstring)
    LOAD_LINE = "load_line"  #: (arr, i) -> line of out.width: lane k is arr[i * width + k]
    STORE_LINE = "store_line"  #: (arr, i, v: line) -> None; arr[i * width + k] = v[k]
    LINE_LANE = "line_lane"  #: (v: line, Const k) -> lane k of v
    LINE_BUILD = "line_build"  #: (a_0 … a_{w-1}) -> the line of width w of those lanes

    # cooperative matrices (see the module docstring); none has a result local
    CMMA_FILL = "cmma_fill"  #: (frag, v) -> None
    CMMA_LOAD = "cmma_load"  #: (frag, arr, offset: u32, stride: u32, Const layout) -> None
    CMMA_EXECUTE = "cmma_execute"  #: (a, b, c, d) -> None; d = a*b + c
    CMMA_STORE = "cmma_store"  #: (arr, offset: u32, frag, stride: u32, Const layout) -> None
    CMMA_CAST = "cmma_cast"  #: (dst, src) -> None; dst = src converted

    # asynchronous copies (see the module docstring); none has a result local
    COPY_ASYNC = "copy_async"  #: (dst: shared, i, src: global, j, Const w) -> None
    ASYNC_COMMIT = "async_commit"  #: () -> None; closes the unit's open group of copies
    ASYNC_WAIT = "async_wait"  #: (Const n: u32) -> None; at most n closed groups unfinished

    # warpgroup matrices (see the module docstring); none has a result local
    WGMMA_FILL = "wgmma_fill"  #: (acc, v: f32) -> None
    WGMMA_FENCE = "wgmma_fence"  #: () -> None
    WGMMA_MMA = "wgmma_mma"  #: (acc, a: shared, a_at: u32, b: shared, b_at: u32, Const block)
    WGMMA_COMMIT = "wgmma_commit"  #: () -> None; closes the warpgroup's open group
    WGMMA_WAIT = "wgmma_wait"  #: (Const n: u32) -> None; at most n closed groups unfinished
    WGMMA_STORE = "wgmma_store"  #: (arr, offset: u32, acc, stride, rows, cols: u32) -> None

    # asynchronous barriers and bulk copies (see the module docstring); none has a result local
    MBAR_INIT = "mbar_init"  #: (bars: shared u64, i: u32, count: u32) -> None
    MBAR_ARRIVE = "mbar_arrive"  #: (bars, i: u32) -> None; one arrival
    MBAR_EXPECT_TX = "mbar_expect_tx"  #: (bars, i: u32, nbytes: u32) -> None; then one arrival
    MBAR_WAIT = "mbar_wait"  #: (bars, i: u32, parity: u32) -> None; that phase completed
    BULK_COPY = "bulk_copy"  #: (dst: shared, dst_at, src: global, src_at, n, bars, i: u32)
    #: (dst: shared, dst_at, src: global, rows, cols: u32 params, row, col: u32, Const box_rows,
    #: Const box_cols, bars, i: u32) -> None; a swizzled 2-D box
    TENSOR_COPY = "tensor_copy"
    BULK_FENCE = "bulk_fence"  #: () -> None; shared writes before the bulk stores after
    BULK_STORE = "bulk_store"  #: (dst: global, dst_at, src: shared, src_at, n: u32) -> None
    BULK_COMMIT = "bulk_commit"  #: () -> None; closes the unit's open bulk group
    BULK_WAIT = "bulk_wait"  #: (Const n: u32) -> None; at most n closed groups still reading

    # validation (inserted by the bounds pass in Validate mode only)
    REPORT_OOB = "report_oob"  #: (Const buffer_no, index as u64, length as u64) -> None

    def __str__(self) -> str:
        return self.value


#: Binary arithmetic with operands and result of one numeric type.
ARITH_BINARY = frozenset(
    {Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOOR_DIV, Op.MOD, Op.POW, Op.MIN, Op.MAX}
)
#: Unary operations defined on floats only.
FLOAT_UNARY = frozenset(
    {
        Op.EXP,
        Op.EXP2,
        Op.LOG,
        Op.LOG2,
        Op.LOG1P,
        Op.SQRT,
        Op.RSQRT,
        Op.RECIP,
        Op.SIN,
        Op.COS,
        Op.TAN,
        Op.TANH,
        Op.ERF,
        Op.ERFC,
        Op.LGAMMA,
        Op.EXPM1,
        Op.LOG10,
        Op.CBRT,
        Op.ASIN,
        Op.ACOS,
        Op.ATAN,
        Op.SINH,
        Op.COSH,
        Op.ASINH,
        Op.ACOSH,
        Op.ATANH,
        Op.FLOOR,
        Op.CEIL,
        Op.ROUND,
        Op.TRUNC,
    }
)
#: Binary operations defined on floats only (besides ``/`` and ``**``).
FLOAT_BINARY: frozenset[Op] = frozenset({Op.ATAN2, Op.HYPOT, Op.FMOD, Op.REMAINDER, Op.COPYSIGN})
#: Float classification, -> bool.
FLOAT_TESTS: frozenset[Op] = frozenset({Op.ISNAN, Op.ISINF, Op.ISFINITE})
#: Bit counts of an integer, -> u32.
BIT_COUNTS: frozenset[Op] = frozenset(
    {Op.POPCOUNT, Op.LEADING_ZEROS, Op.TRAILING_ZEROS, Op.FIND_FIRST_SET}
)
#: Integer operations of one or two operands of one type, with that type's result.
INT_UNARY: frozenset[Op] = frozenset({Op.REVERSE_BITS})
INT_BINARY: frozenset[Op] = frozenset({Op.MUL_HI, Op.SATURATING_ADD, Op.SATURATING_SUB})
COMPARE_OPS = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
BITWISE_BINARY = frozenset({Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.SHL, Op.SHR})
ATOMIC_OPS = frozenset(
    {
        Op.ATOMIC_LOAD,
        Op.ATOMIC_STORE,
        Op.ATOMIC_SWAP,
        Op.ATOMIC_ADD,
        Op.ATOMIC_SUB,
        Op.ATOMIC_MIN,
        Op.ATOMIC_MAX,
        Op.ATOMIC_AND,
        Op.ATOMIC_OR,
        Op.ATOMIC_XOR,
        Op.ATOMIC_CAS,
        Op.ATOMIC_INC_WRAP,
        Op.ATOMIC_DEC_WRAP,
    }
)
#: Barriers of the cube that also reduce a ``bool`` over its units.
#: The plain operation each read-modify-write atomic applies to the old value and its operand.
ATOMIC_COMBINE: dict[Op, Op] = {
    Op.ATOMIC_ADD: Op.ADD,
    Op.ATOMIC_SUB: Op.SUB,
    Op.ATOMIC_MIN: Op.MIN,
    Op.ATOMIC_MAX: Op.MAX,
    Op.ATOMIC_AND: Op.BIT_AND,
    Op.ATOMIC_OR: Op.BIT_OR,
    Op.ATOMIC_XOR: Op.BIT_XOR,
}
SYNC_REDUCE_OPS = frozenset({Op.SYNC_UNITS_COUNT, Op.SYNC_UNITS_AND, Op.SYNC_UNITS_OR})
#: Operations over the units of one plane (its lanes that exist, see the module docstring).
PLANE_OPS = frozenset(
    {
        Op.PLANE_SUM,
        Op.PLANE_PROD,
        Op.PLANE_MIN,
        Op.PLANE_MAX,
        Op.PLANE_ALL,
        Op.PLANE_ANY,
        Op.PLANE_BROADCAST,
        Op.PLANE_SHUFFLE,
        Op.PLANE_INCLUSIVE_SUM,
        Op.PLANE_EXCLUSIVE_SUM,
        Op.PLANE_BALLOT,
        Op.PLANE_ELECT,
        Op.PLANE_SHUFFLE_UP,
        Op.PLANE_SHUFFLE_DOWN,
        Op.PLANE_SHUFFLE_XOR,
        Op.SYNC_PLANE,
    }
)
#: The operations that read or build lines as a whole (see the module docstring).
LINE_OPS = frozenset({Op.LOAD_LINE, Op.STORE_LINE, Op.LINE_LANE, Op.LINE_BUILD})
#: The cooperative-matrix operations: plane operations on fragments (see the module docstring).
MATRIX_OPS = frozenset({Op.CMMA_FILL, Op.CMMA_LOAD, Op.CMMA_EXECUTE, Op.CMMA_STORE, Op.CMMA_CAST})
#: The asynchronous-copy operations (see the module docstring).
ASYNC_COPY_OPS = frozenset({Op.COPY_ASYNC, Op.ASYNC_COMMIT, Op.ASYNC_WAIT})
#: The warpgroup matrix operations (see the module docstring).
WARPGROUP_OPS = frozenset(
    {Op.WGMMA_FILL, Op.WGMMA_FENCE, Op.WGMMA_MMA, Op.WGMMA_COMMIT, Op.WGMMA_WAIT, Op.WGMMA_STORE}
)
#: The asynchronous barrier and bulk copy operations (see the module docstring).
BARRIER_OPS = frozenset(
    {
        Op.MBAR_INIT,
        Op.MBAR_ARRIVE,
        Op.MBAR_EXPECT_TX,
        Op.MBAR_WAIT,
        Op.BULK_COPY,
        Op.TENSOR_COPY,
        Op.BULK_FENCE,
        Op.BULK_STORE,
        Op.BULK_COMMIT,
        Op.BULK_WAIT,
    }
)
#: Value operations that apply to lines lane by lane, scalars broadcast.
LANE_WISE_OPS = frozenset(
    {Op.ASSIGN, Op.CAST, Op.BITCAST, Op.SELECT, Op.NEG, Op.ABS, Op.FMA, Op.CLAMP}
    | ARITH_BINARY
    | FLOAT_UNARY
    | FLOAT_BINARY
    | FLOAT_TESTS
    | BIT_COUNTS
    | INT_UNARY
    | INT_BINARY
    | COMPARE_OPS
    | BITWISE_BINARY
    | {Op.AND, Op.OR, Op.NOT, Op.BIT_NOT}
)

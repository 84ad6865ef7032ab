"""How the native LayerNorm kernels (``layer_norm.cu``) cover a row: the shape class of a row
width and element size, and the grid of the backward pass.

Pure integer arithmetic on shapes and addresses: no IR, no CuPy, no launch. A width no class
covers (wider than :data:`MAX_ELEMENTS_PER_THREAD` elements for each thread of the widest
block) returns None, and the caller runs the portable kernels instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "BACKWARD_THREADS_PER_UNIT",
    "FUSED_MAX_PARTS",
    "MAX_ELEMENTS_PER_THREAD",
    "VECTOR_NBYTES",
    "RowClass",
    "backward_blocks",
    "backward_class",
    "forward_class",
    "fuses",
    "vector_width",
]

#: The widest access: one 128-bit load or store.
VECTOR_NBYTES = 16
#: Row elements one thread holds (forward) or sums partials for (backward), at most: what fits
#: in registers beside the kernel's other state.
MAX_ELEMENTS_PER_THREAD = 32
#: Warps (rows) per block in the warp tier.
_WARP_ROWS = 4
#: Threads of a block-tier block, at most.
_MAX_BLOCK = 1024
#: A backward thread holds two partial sums per element: with 1024 threads (64 registers each)
#: it takes 16 elements at most.
_MAX_BACKWARD_ELEMENTS = {1024: 16}
#: The most partial sums of each of the weight and the bias that one thread of the last block of
#: a fused backward adds (blocks x columns per thread): beyond it, the reduction by one block
#: would take longer on the device than a launch of its own takes on the host.
FUSED_MAX_PARTS = 64
#: Threads per multiprocessor that the backward's blocks fill, at most (see
#: :func:`backward_blocks`).
BACKWARD_THREADS_PER_UNIT = 1024


@dataclass(frozen=True, slots=True)
class _Tiers:
    """How a direction's rows are cut: rows of at most ``warp_elements`` elements per lane of
    one warp are one warp's (the warp tier); wider rows take a block of the power of two of
    threads, at least ``min_block``, that gives each about ``target_elements`` elements, or
    ``target_vectors`` vectors where that is set (the block tier), at most ``max_elements``
    per thread for the block sizes listed (else :data:`MAX_ELEMENTS_PER_THREAD`)."""

    warp_elements: int
    target_elements: int
    target_vectors: int
    min_block: int
    max_elements: dict[int, int]

    def target(self, vector: int) -> int:
        """Elements per thread aimed at for accesses of ``vector`` elements."""
        return self.target_vectors * vector if self.target_vectors else self.target_elements


#: Chosen from device times on the H200 (``docs/benchmarks.md``; ``benchmarks/
#: layer_norm_tiers.py``): the forward of wide rows is fastest with 32 elements per thread
#: (16384 columns: 512 threads, not 1024); the backward, which holds two partial sums per
#: element, with two vectors per thread and blocks of at least four warps (1024 f32 columns:
#: 128 threads of 8; 4096 bf16 columns: 256 threads of 16, not 512 of 8).
_FORWARD = _Tiers(
    warp_elements=32, target_elements=32, target_vectors=0, min_block=64, max_elements={}
)
_BACKWARD = _Tiers(
    warp_elements=16,
    target_elements=0,
    target_vectors=2,
    min_block=128,
    max_elements=_MAX_BACKWARD_ELEMENTS,
)


@dataclass(frozen=True, slots=True)
class RowClass:
    """The template parameters of one compiled kernel: rows of ``vector * vectors_per_thread *
    32 * row_warps`` elements at most (:attr:`capacity`), held by ``32 * row_warps`` threads that
    each own ``vectors_per_thread`` vectors of ``vector`` elements; a block holds
    ``rows_per_block`` row groups (several only when a row group is one warp)."""

    vector: int
    vectors_per_thread: int
    row_warps: int
    rows_per_block: int

    def __post_init__(self) -> None:
        if self.row_warps > 1 and self.rows_per_block != 1:
            raise ValueError(f"{self}: a row group of several warps is a whole block")

    @property
    def row_threads(self) -> int:
        return 32 * self.row_warps

    @property
    def block_threads(self) -> int:
        return self.row_threads * self.rows_per_block

    @property
    def capacity(self) -> int:
        """The widest row this class covers, in elements."""
        return self.row_threads * self.vectors_per_thread * self.vector

    @property
    def label(self) -> str:
        """A short name for kernel names: vector, vectors per thread, warps per row, rows."""
        return f"v{self.vector}_k{self.vectors_per_thread}_w{self.row_warps}_r{self.rows_per_block}"


def vector_width(features: int, elem_nbytes: int, addresses: Iterable[int]) -> int:
    """The most elements per access, a power of two of at most :data:`VECTOR_NBYTES` bytes,
    that divides ``features`` and to whose size every address (of a row-major operand) is
    aligned; 1 where nothing wider fits."""
    addresses = tuple(addresses)
    vector = VECTOR_NBYTES // elem_nbytes
    while vector > 1 and (features % vector or any(a % (vector * elem_nbytes) for a in addresses)):
        vector //= 2
    return vector


def _ceil_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _row_class(features: int, vector: int, tiers: _Tiers) -> RowClass | None:
    vectors = -(-features // vector)
    per_lane = _ceil_pow2(-(-vectors // 32))
    if per_lane * vector <= tiers.warp_elements:
        return RowClass(vector, per_lane, 1, _WARP_ROWS)
    wanted = _ceil_pow2(-(-features // tiers.target(vector)))
    threads = min(max(wanted, tiers.min_block), _MAX_BLOCK)
    per_thread = _ceil_pow2(-(-vectors // threads))
    limit = tiers.max_elements.get(threads, MAX_ELEMENTS_PER_THREAD)
    if per_thread * vector > limit:
        return None
    return RowClass(vector, per_thread, threads // 32, 1)


def forward_class(features: int, vector: int) -> RowClass | None:
    """The forward kernel's class for rows of ``features`` elements accessed ``vector`` at a
    time, or None when the row is too wide to hold in registers."""
    return _row_class(features, vector, _FORWARD)


def backward_class(features: int, vector: int) -> RowClass | None:
    """The backward kernel's class (as :func:`forward_class`, with the backward's limits)."""
    return _row_class(features, vector, _BACKWARD)


def backward_blocks(rows: int, row_class: RowClass, compute_units: int) -> int:
    """Blocks of the backward pass, and so rows of weight and bias partial sums: one row group
    per row up to :data:`BACKWARD_THREADS_PER_UNIT` threads on each of the device's
    ``compute_units`` multiprocessors (half of what an H200's hold: more blocks only add rows
    of partial sums to write and reduce), beyond which blocks loop over rows. A function of the
    shape and the device only, so a device always adds the partial sums in the same order."""
    wave = compute_units * max(1, BACKWARD_THREADS_PER_UNIT // row_class.block_threads)
    return max(1, min(-(-rows // row_class.rows_per_block), wave))


def fuses(blocks: int, features: int, row_class: RowClass) -> bool:
    """Whether a backward of ``blocks`` blocks of ``row_class`` over rows of ``features`` is one
    launch whose last block reduces the partial sums (see :data:`FUSED_MAX_PARTS`) rather than
    two."""
    return blocks * -(-features // row_class.block_threads) <= FUSED_MAX_PARTS

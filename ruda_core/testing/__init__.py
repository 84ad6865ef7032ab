"""``ruda_core.testing``: the backend conformance suite and its tools.

A driver package proves itself by running the suite against its devices::

    pytest -p ruda_core.testing.plugin --pyargs ruda_core.testing.conformance --ruda-device D

or ``ruda conformance --device D --report matrix.md``. The suite compares every kernel result
with the NumPy reference device: integers exactly, floats within :mod:`.tolerance`'s table.

* :mod:`.plugin`: the pytest plugin (options, fixtures, markers, overrides, Hypothesis profile);
* :mod:`.markers`: ``requires(Feature...)``, ``requires_elem(Elem...)``, ``need(...)``;
* :mod:`.tolerance`: the per-element tolerance table and ``assert_matches``;
* :mod:`.irbuild`, :mod:`.runner`: kernels written as IR and running them on a client;
* :mod:`.random_kernels`, :mod:`.differential`: random well-typed kernels (Hypothesis), and
  their comparison with the reference;
* :mod:`.report`: the result matrix behind ``ruda conformance``.

Importing this package imports pytest and Hypothesis; ``import ruda_core`` never imports it.
"""

from .markers import need, requires, requires_elem
from .runner import TIMEOUT_S, read_array, run_definition
from .tolerance import OpClass, assert_matches, op_class

__all__ = [
    "TIMEOUT_S",
    "OpClass",
    "assert_matches",
    "need",
    "op_class",
    "read_array",
    "requires",
    "requires_elem",
    "run_definition",
]

"""The stack autotuning API: pick, per device and problem, the fastest of several ways to compute
an operation, and remember the choice.

::

    from ruda_core.autotune import Tunable, TunableSet, Tuner, anchor

    DOUBLE = TunableSet(
        "mylib.double",
        key_fn=lambda x, n: anchor(n),            # coarse: sizes of one magnitude share a result
        tunables=[Tunable("vectorised", double_vec), Tunable("simple", double_simple)],
    )
    TUNER = Tuner()

    out = TUNER.execute(client, DOUBLE, x, n)     # benchmarks on the first call of a key

The pieces, modelled on CubeCL's ``tune`` module:

* :class:`Tunable` (``tunable.py``): one candidate, ``fn(client, *inputs) -> output``, which
  enqueues its work and returns without waiting.
* :class:`TunableSet`: an operation's candidates and its ``key_fn(*inputs) -> key``.
* :class:`Tuner` (``tuner.py``): ``execute`` runs the recorded winner of the key (one lookup on
  a hit); on a miss it benchmarks every candidate on the device (``benchmark.py``: a warm-up run,
  then the median of timed runs with ``client.profile``), records the fastest and runs it.
  Candidates that raise, at launch or at the sync after them, are excluded and recorded; when
  all do, :class:`AutotuneError` (a ``ServerError``) lists each error. A recorded winner that
  raises is tuned again once. Threads that miss on the same key tune it once.
* :func:`runtime_environment` (``environment.py``): the memoised identity of the client's stack
  (runtime, device id, properties and driver fingerprints, deployment tags, ruda version); every
  stored result is keyed by it, so a result is reused only where it was measured.
* :func:`set_deployment_tags`: process-wide tags that enter every environment. They freeze at
  their first use; changing them afterwards raises :class:`DeploymentTagsError`.
* Storage (``cache.py``): results persist in ``DiskCache(CacheKind.TUNING)`` under
  ``RUDA_CACHE_DIR`` (atomic, checksummed; a corrupt entry is a ``CacheWarning`` and a new
  tuning). A device whose driver fingerprint is None keeps results in a process-wide session
  store instead.

Tuning blocks and syncs; a hit neither blocks nor syncs. Nothing here imports a backend.
"""

from .environment import (
    DeploymentTagsError,
    RuntimeEnvironment,
    TagValue,
    deployment_tags,
    runtime_environment,
    set_deployment_tags,
)
from .result import AutotuneError, TuneResult, TuneStats
from .tunable import Tunable, TunableSet, anchor
from .tuner import Tuner

__all__ = [
    "AutotuneError",
    "DeploymentTagsError",
    "RuntimeEnvironment",
    "TagValue",
    "Tunable",
    "TunableSet",
    "TuneResult",
    "TuneStats",
    "Tuner",
    "anchor",
    "deployment_tags",
    "runtime_environment",
    "set_deployment_tags",
]

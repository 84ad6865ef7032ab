"""Running ruda in other processes, for what must hold across them: :func:`fingerprints_elsewhere`
asks a new interpreter for device fingerprints.

Children open devices by name through ``ruda_core.client``; nothing here knows a backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .runner import TIMEOUT_S

__all__ = ["fingerprints_elsewhere"]

_FINGERPRINTS = """
import json, sys
import ruda_core
print(json.dumps({d: ruda_core.client(d).properties_fingerprint() for d in sys.argv[1:]}))
"""


def fingerprints_elsewhere(
    devices: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``properties_fingerprint()`` of each of ``devices``, as a new Python process (this
    interpreter, this environment plus ``env``) computes it. Waits for the process.

    :raises RuntimeError: with the child's stderr when it fails.
    """
    child = subprocess.run(
        [sys.executable, "-c", _FINGERPRINTS, *devices],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(f"the fingerprint process failed ({child.returncode}):\n{child.stderr}")
    result: dict[str, str] = json.loads(child.stdout.splitlines()[-1])
    return result

"""Asynchronous copies from global to shared memory in kernels, after CUDA's ``cp.async``
(CubeCL's ``memcpy_async``, CUTLASS's multistage copies): each unit queues line copies, closes
them into groups, and waits for all but the newest groups before the cube reads them.

::

    from ruda_core.lang import pipeline, sync_units

    for s in unroll(range(STAGES - 1)):                  # fill the first stages
        pipeline.copy_async(smem, s * LINES + UNIT_POS, x, first + s * LINES + UNIT_POS, 8)
        pipeline.commit()
    ...
    pipeline.wait(STAGES - 2)   # this unit's copies of all but the newest STAGES-2 groups are done
    sync_units()                # … and everybody's: the stage may be read
    ... compute on the stage, then queue the copies of a later stage and commit ...

* ``pipeline.copy_async(dst, i, src, j, N)`` queues the copy of line ``j`` of the global array
  (or tensor) ``src``, its elements ``j*N .. j*N+N-1``, into line ``i`` of the ``SharedMemory``
  ``dst`` of the same element type. ``N`` is a compile-time 2, 4 or 8 and a line is 4, 8 or 16
  bytes. Both arrays start aligned to the line (as for ``load_line``).
* ``pipeline.commit()`` closes this unit's open group of copies (an empty group is fine).
* ``pipeline.wait(n)`` (``n`` a compile-time int ``>= 0``) returns when at most ``n`` of this
  unit's closed groups are unfinished; the copies of the others are in shared memory. Other
  units see them after a following ``sync_units()`` that both reach.

Between a copy's ``copy_async`` and the ``wait`` that completes its group, the kernel must not
read or write the destination line nor write the source line, and every copy must be waited for
before the kernel ends; otherwise the result is unspecified. Groups are per unit: no call is a
plane or cube operation, and each may sit in divergent code. There is no zero-filling form:
write zeros with ``dst.store_line(i, Line.splat(T(0), N))`` where the source line is outside the
matrix, and that plain store is visible after the next ``sync_units()``.

On CUDA from sm_80 a copy is one ``cp.async`` (``.cg`` for 16 bytes, bypassing L1; ``.ca``
for 4 and 8), a commit ``cp.async.commit_group`` and a wait ``cp.async.wait_group n``. Every
other target, the NumPy device included, copies at ``copy_async`` (a line load and a line store)
and has nothing to do at ``commit`` and ``wait``: an allowed behaviour, so a kernel that is
correct by the rules above gives the same result everywhere. Under ``launch``'s checks the copy
is that plain load and store, each checked as a line access (an out-of-bounds source line copies
zeros, an out-of-bounds destination line is dropped). The exact meaning is in
:mod:`ruda_core.ir.ops`. This module builds no IR; its names are markers the front end
recognises.
"""

from __future__ import annotations

from .builtins import Intrinsic

__all__ = ["commit", "copy_async", "wait"]

copy_async = Intrinsic("pipeline.copy_async")
commit = Intrinsic("pipeline.commit")
wait = Intrinsic("pipeline.wait")

"""CPython's garbage collector while jobs run in this process.

Records travel in batches: a network buffer holds 1,024 of them, and a producer runs ahead of
its consumer by as many buffers as it has credits. So thousands of young objects (the records
a function returned) are alive at any time, and CPython, collecting the young generation every
700 allocations, scans them again and again — work a plain loop over the same records never
causes, as its records die at once. While a job runs the young generation is collected every
``YOUNG_THRESHOLD`` allocations instead (older generations as before); the previous thresholds
come back when the last running job of the process ends. Collection stays automatic: cyclic
garbage made meanwhile is found, a little later.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

YOUNG_THRESHOLD = 50_000

_lock = threading.Lock()
_running = 0
_saved: tuple[int, ...] = ()


@contextmanager
def collecting_for_batches() -> Iterator[None]:
    """While the block runs (a job), the young generation is collected less often."""
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(YOUNG_THRESHOLD, _saved[0]), *_saved[1:])
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                gc.set_threshold(*_saved)

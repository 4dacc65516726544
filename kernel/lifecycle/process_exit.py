"""A rill process ends without the interpreter's last full collection.

At exit the interpreter collects every object the process made: 20-60 ms spent freeing memory
the OS takes back at once. Everything rill opens it closes itself before its process ends (not
in finalizers), so ``gc.freeze`` skips that collection; what atexit handlers create is still
collected. Not in a process that loaded DuckDB: its bindings report every object of theirs still
alive at exit.
"""

from __future__ import annotations

import gc
import sys


def skip_last_collection() -> None:
    """Freeze the collector's generations, unless DuckDB was loaded (the process is ending)."""
    if "duckdb" not in sys.modules:
        gc.freeze()

"""The bounds of one ``rill sql`` query, the same on every engine: how long it may run
(``sql.timeout``), how much memory its engine may use (``sql.memory-limit``) and how many rows it
may print (``sql.max-rows``; ``--output FILE`` writes them all).

An engine starts the clock when it starts answering (a Spark session's start-up is not the
query's time) with :meth:`QueryBounds.watch`, giving it the engine's own way to stop a
statement (DuckDB's ``interrupt()``, cancelling Spark's jobs), which the watchdog calls when the
time is up and again until the statement has stopped. Hitting a bound is one
:class:`~kernel.errors.BoundExceeded` line naming the bound and how to raise it, exit 1.

The default memory limit is a quarter of this machine's memory (or of its cgroup's limit, when
lower). DuckDB on its own takes 80 %, as if it had the machine to itself; ``rill sql`` runs
beside the runs it reads — their TaskExecutors, worker processes, a Spark driver — and its own
process holds up to ``sql.max-rows`` rows and renders them, a copy or two of what the engine
returns. A quarter leaves the rest of the machine (and a run being recorded) its memory.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Annotated, Any, Callable, Iterator

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs, MemoryBytes
from kernel.errors import BoundExceeded

#: the share of the machine's memory ``sql.memory-limit`` defaults to
MEMORY_SHARE = 4
#: the smallest memory limit a query gets (DuckDB needs a few buffers to read anything)
MIN_MEMORY = 16 << 20
#: how often the watchdog stops the statement again once the time is up (a statement may not have
#: started when it first tries, or a new one may start)
REPEAT_S = 0.1
#: how long a statement may take to stop before the watchdog's last resort
GRACE_S = 5.0
CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


class SqlOptions(Section):
    """What every ``rill sql`` query is bounded by, on every engine."""

    timeout: Annotated[DurationMs, msgspec.Meta(ge=1, description="a query still running after this long is stopped "
                                                                  "(exit 1)")] = (
        msgspec.field(name="sql.timeout", default=60_000))
    memory_limit: Annotated[MemoryBytes | None, msgspec.Meta(description=(
        "memory a query's engine may use (DuckDB's memory_limit, the Spark driver's heap when rill starts Spark "
        "for the query); unset: a quarter of this machine's memory"))] = (
        msgspec.field(name="sql.memory-limit", default=None))
    max_rows: Annotated[int, msgspec.Meta(ge=1, description="rows a query prints at most; with more it prints these "
                                                            "and fails (--output FILE writes them all)")] = (
        msgspec.field(name="sql.max-rows", default=10_000))

    def check(self) -> None:
        if self.memory_limit is not None and self.memory_limit < MIN_MEMORY:
            raise ValueError(f"sql.memory-limit must be at least {size(MIN_MEMORY)}")
        if self.memory_limit is not None and self.memory_limit > machine_memory():
            raise ValueError(f"sql.memory-limit ({size(self.memory_limit)}) is more than this machine's memory "
                             f"({size(machine_memory())})")

    def memory_bytes(self) -> int:
        """The memory limit in effect."""
        return self.memory_limit if self.memory_limit is not None else default_memory_limit()

    def resolved(self) -> dict[str, tuple[Any, str]]:
        if self.memory_limit is not None:
            return {}
        limit = default_memory_limit()
        return {"sql.memory-limit": (limit, f"default: a quarter of this machine's memory ({size(limit)})")}

    def bounds(self) -> QueryBounds:
        return QueryBounds(self.timeout / 1000, self.memory_bytes(), self.max_rows)


def machine_memory() -> int:
    """Bytes of physical memory this process may use: the machine's, or its cgroup's limit when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_LIMITS:
        try:
            with open(path) as handle:
                text = handle.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def default_memory_limit() -> int:
    return max(MIN_MEMORY, machine_memory() // MEMORY_SHARE)


def size(n: int) -> str:
    """A memory size as people read it (``256 MiB``, ``5.9 GiB``)."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):.0f} MiB"


class QueryBounds:
    """The bounds of one query: its clock, its memory, its rows. ``watch`` starts the clock."""

    def __init__(self, timeout_s: float, memory_bytes: int, max_rows: int) -> None:
        self.timeout_s = timeout_s
        self.memory_bytes = memory_bytes
        self.max_rows = max_rows
        self._deadline: float | None = None
        self._expired = threading.Event()

    @property
    def expired(self) -> bool:
        return self._expired.is_set()

    def start(self) -> None:
        """Start the query's clock (once: a second engine step keeps the first one's deadline)."""
        if self._deadline is None:
            self._deadline = time.monotonic() + self.timeout_s

    def check(self) -> None:
        """Raise the timeout when the query's time is up (between steps the engine does not run)."""
        if self.expired or (self._deadline is not None and time.monotonic() >= self._deadline):
            self._expired.set()
            raise self.timed_out()

    @contextmanager
    def watch(self, stop: Callable[[], Any], last_resort: Callable[[], Any] | None = None) -> Iterator[None]:
        """Run a step of the query with the clock running: when the time is up, ``stop()`` is
        called (again every 0.1 s until the step ends) and, if the step has not ended after a
        grace period, ``last_resort()`` once. Whatever the step raises after the time is up is
        the timeout."""
        self.start()
        done = threading.Event()
        watchdog = threading.Thread(target=self._watch, args=(done, stop, last_resort), name="rill-sql-watchdog",
                                    daemon=True)
        watchdog.start()
        try:
            yield
        except Exception:
            if self.expired:
                raise self.timed_out() from None
            raise
        finally:
            done.set()
            watchdog.join()

    def _watch(self, done: threading.Event, stop: Callable[[], Any], last_resort: Callable[[], Any] | None) -> None:
        assert self._deadline is not None
        if done.wait(max(0.0, self._deadline - time.monotonic())):
            return
        self._expired.set()
        give_up = time.monotonic() + GRACE_S
        while True:
            try:
                stop()
            except Exception:  # the statement ended (its connection closed) while being stopped
                pass
            if done.wait(REPEAT_S):
                return
            if last_resort is not None and time.monotonic() >= give_up:
                last_resort()
                last_resort = None

    def timed_out(self) -> BoundExceeded:
        return BoundExceeded(f"query stopped: it ran longer than sql.timeout ({self.timeout_s:g} s); raise it with "
                             f"--set sql.timeout={2 * self.timeout_s:g}s")

    def out_of_memory(self, what: str = "it needs more memory than") -> BoundExceeded:
        return BoundExceeded(f"query stopped: {what} sql.memory-limit ({size(self.memory_bytes)}); raise it with "
                             f"--set sql.memory-limit={2 * self.memory_bytes >> 20}mb")

    def too_many_rows(self) -> BoundExceeded:
        return BoundExceeded(f"query stopped: it returned more than sql.max-rows ({self.max_rows}) rows; the first "
                             f"{self.max_rows} are above: --output FILE writes them all, --set "
                             f"sql.max-rows={2 * self.max_rows} raises the cap")

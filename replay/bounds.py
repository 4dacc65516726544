"""A DuckDB statement within the bounds of the ``rill sql`` query it serves
(:mod:`kernel.sqlbounds`): DuckDB's ``memory_limit``, ``interrupt()`` when the time is up."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from kernel.sqlbounds import QueryBounds


def limit_memory(con: Any, memory_bytes: int) -> None:
    """Bound what DuckDB may allocate for ``con`` (before it is sealed: the seal locks it)."""
    con.execute(f"SET memory_limit = '{int(memory_bytes)}B'")


@contextmanager
def bounded(con: Any, bounds: QueryBounds) -> Iterator[None]:
    """Run statements on ``con`` with the query's clock running: interrupted when the time is
    up; running out of its memory limit is the memory bound."""
    import duckdb

    with bounds.watch(con.interrupt):
        try:
            yield
        except duckdb.OutOfMemoryException:
            raise bounds.out_of_memory() from None

"""The event tables in DuckDB and in spool files: a table's spec (what the log records of it),
an event batch's values column by column, as Arrow.

The schema itself is derived from the Structs by the kernel (:mod:`kernel.eventtables`).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Iterable

import msgspec

from kernel.events import Event
from kernel.eventtables import SCHEMA, EventTable


class TableSpec(msgspec.Struct, frozen=True):
    """What the log knows of an event table: enough to create it and fill it without the
    event's Struct (spooled batches are ingested by processes that may not have it)."""

    tag: str
    name: str
    event_class: str
    columns: list[tuple[str, str]]  # (name, sql type), run_id excluded

    @classmethod
    def of(cls, table: EventTable) -> TableSpec:
        event_type = table.event_type
        return cls(table.tag, table.name, f"{event_type.__module__}.{event_type.__qualname__}",
                   [(c.name, c.sql_type) for c in table.columns])

    @property
    def qualified(self) -> str:
        return f"{SCHEMA}.{self.name}"

    def ddl(self) -> str:
        cols = ", ".join(f'"{name}" {sql_type}' for name, sql_type in self.columns)
        return f"CREATE TABLE IF NOT EXISTS {self.qualified} (run_id VARCHAR, {cols})"


_ARROW_TYPES: dict[str, Any] = {}


def _arrow_type(sql_type: str):
    import pyarrow as pa

    if not _ARROW_TYPES:
        _ARROW_TYPES.update(
            BIGINT=pa.int64(), DOUBLE=pa.float64(), VARCHAR=pa.string(), BOOLEAN=pa.bool_(), BLOB=pa.binary()
        )
    return _ARROW_TYPES[sql_type]


def column_values(table: EventTable, events: list[Event]) -> list[list[Any]]:
    """The values of events of one type, column by column (structured fields as JSON text)."""
    columns = []
    encode = msgspec.json.encode
    for column in table.columns:
        values = list(map(attrgetter(column.attribute), events))
        if column.json:
            values = [None if v is None else encode(v).decode() for v in values]
        columns.append(values)
    return columns


def to_arrow(spec: TableSpec, columns: list[list[Any]]):
    """An Arrow table of an event table's columns (as :func:`column_values` gives them)."""
    import pyarrow as pa

    arrays = [pa.array(values, type=_arrow_type(sql_type)) for (_, sql_type), values in zip(spec.columns, columns)]
    return pa.Table.from_arrays(arrays, names=[name for name, _ in spec.columns])


def group_by_type(events: Iterable[Event]) -> dict[type[Event], list[Event]]:
    groups: dict[type[Event], list[Event]] = {}
    for event in events:
        kind = type(event)
        group = groups.get(kind)
        if group is None:
            groups[kind] = [event]
        else:
            group.append(event)
    return groups

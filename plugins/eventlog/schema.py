"""Storage schema derived from the event Structs: one table per event tag.

Columns: ``run_id``, ``seq``, ``time``, then the event's own fields in declaration order.
Scalars map to DuckDB types; anything structured (lists, dicts, nested Structs) is stored
as JSON text. No DDL is written by hand: adding a field to a Struct adds a column.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Iterable

import msgspec
import msgspec.inspect as mi

from kernel.events import Event, tag_of

TABLE_PREFIX = "ev_"
SCHEMA = "rill"
COMMON = ("seq", "time")


@dataclass(frozen=True)
class Column:
    name: str
    attribute: str
    sql_type: str
    json: bool = False


class TableSpec(msgspec.Struct, frozen=True):
    """What the log knows of an event table: enough to create it and fill it without the
    event's Struct (spooled batches are ingested by processes that may not have it)."""

    tag: str
    name: str
    event_class: str
    columns: list[tuple[str, str]]  # (name, sql type), run_id excluded

    @property
    def qualified(self) -> str:
        return f"{SCHEMA}.{self.name}"

    def ddl(self) -> str:
        cols = ", ".join(f'"{name}" {sql_type}' for name, sql_type in self.columns)
        return f"CREATE TABLE IF NOT EXISTS {self.qualified} (run_id VARCHAR, {cols})"


@dataclass(frozen=True)
class EventTable:
    tag: str
    name: str
    event_type: type[Event]
    columns: tuple[Column, ...]  # run_id excluded (a constant per batch)
    spec: TableSpec

    @property
    def qualified(self) -> str:
        return f"{SCHEMA}.{self.name}"


def _sql_type(info: mi.Type) -> tuple[str, bool]:
    if isinstance(info, mi.UnionType):
        members = [t for t in info.types if not isinstance(t, mi.NoneType)]
        if len(members) == 1:
            return _sql_type(members[0])
        return "VARCHAR", True
    if isinstance(info, mi.BoolType):
        return "BOOLEAN", False
    if isinstance(info, mi.IntType):
        return "BIGINT", False
    if isinstance(info, mi.FloatType):
        return "DOUBLE", False
    if isinstance(info, (mi.StrType, mi.EnumType)):
        return "VARCHAR", False
    if isinstance(info, mi.LiteralType):
        if all(isinstance(v, str) for v in info.values):
            return "VARCHAR", False
        if all(isinstance(v, int) for v in info.values):
            return "BIGINT", False
    if isinstance(info, (mi.BytesType, mi.ByteArrayType)):
        return "BLOB", False
    return "VARCHAR", True


def table_for(event_type: type[Event]) -> EventTable:
    info = mi.type_info(event_type)
    fields = {f.name: f for f in info.fields}
    ordered = [fields[name] for name in COMMON] + [f for f in info.fields if f.name not in COMMON]
    columns = []
    for field in ordered:
        sql_type, as_json = _sql_type(field.type)
        columns.append(Column(field.encode_name, field.name, sql_type, as_json))
    tag = tag_of(event_type)
    name = TABLE_PREFIX + tag
    spec = TableSpec(
        tag, name, f"{event_type.__module__}.{event_type.__qualname__}", [(c.name, c.sql_type) for c in columns]
    )
    return EventTable(tag, name, event_type, tuple(columns), spec)


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

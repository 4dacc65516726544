"""The storage schema of events, derived from the Structs: one table per event tag.

Every reader and writer of recorded events shares it (the event log's writer, ``rill sql`` on
every engine, the views): table ``rill.ev_<tag>`` has the columns ``run_id``, ``seq``,
``time``, then the event's own fields in declaration order. Scalars map to SQL types;
anything structured (lists, dicts, nested Structs) is stored as JSON text. No DDL is written by
hand: adding a field to a Struct adds a column.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable

import msgspec.inspect as mi

from kernel.events import Event, tag_of

#: the schema (DuckDB) or database (Spark) holding the tables ``runs`` and ``ev_<tag>``
SCHEMA = "rill"
TABLE_PREFIX = "ev_"
COMMON = ("seq", "time")


@dataclass(frozen=True)
class Column:
    name: str
    attribute: str
    sql_type: str  # BIGINT, DOUBLE, VARCHAR, BOOLEAN or BLOB
    json: bool = False


@dataclass(frozen=True)
class EventTable:
    tag: str
    name: str
    event_type: type[Event]
    columns: tuple[Column, ...]  # run_id excluded (a constant per batch)

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


@functools.cache
def table_for(event_type: type[Event]) -> EventTable:
    """The table of an event type (derived once per type)."""
    info = mi.type_info(event_type)
    fields = {f.name: f for f in info.fields}
    ordered = [fields[name] for name in COMMON] + [f for f in info.fields if f.name not in COMMON]
    columns = []
    for field in ordered:
        sql_type, as_json = _sql_type(field.type)
        columns.append(Column(field.encode_name, field.name, sql_type, as_json))
    tag = tag_of(event_type)
    return EventTable(tag, TABLE_PREFIX + tag, event_type, tuple(columns))


def tables_by_kind(event_types: Iterable[type[Event]]) -> dict[str, EventTable]:
    """The table of each event type, by its tag (the ``<kind>`` of ``ev_<kind>``)."""
    return {table.tag: table for table in map(table_for, event_types)}

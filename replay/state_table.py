"""The keyed state of a checkpoint or savepoint as the table ``state`` (``rill sql
--checkpoint PATH``): Flink's State Processor API, as a query.

One row per entry of every keyed state of every operator: ``operator`` (its name),
``operator_id``, ``key_group``, ``key`` (a string key as it is, any other key in a readable
form), ``namespace`` (the window of window state and timers, NULL for none), ``state_name``
(the descriptor's name; an operator's own state: ``window-contents``, ``_op_state`` of a
reduce, ``_timer_state/event_timers`` and ``_timer_state/processing_timers``), ``kind``
(value, list, map, reducing, aggregating, timers, internal) and ``value`` (JSON: a timer's is
its timestamp, a TTL state's the user value). Values are decoded by
:mod:`replay.safe_pickle`, which runs no code of the checkpoint's. Operator state (source
splits, broadcast state) is not keyed and not in the table.

The checkpoint is opened as :mod:`kernel.runtime.checkpointing.pointers` says (nothing outside its
directory, sizes and frames checked); the table is built in an in-memory DuckDB that is then
sealed and bounded as every ``rill sql`` connection is (:mod:`replay.sandbox`,
:mod:`kernel.sqlbounds`).
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.runtime.checkpointing.format import CheckpointFormatError, StateHandle, decode_key_group
from kernel.runtime.checkpointing.pointers import CompletedCheckpointPointer, resolve
from kernel.runtime.checkpointing.snapshots import read_handle
from kernel.errors import UsageError
from replay.safe_pickle import json_value, readable, safe_loads

if TYPE_CHECKING:
    from kernel.sqlbounds import QueryBounds

COLUMNS = (("operator", "VARCHAR"), ("operator_id", "VARCHAR"), ("key_group", "INTEGER"), ("key", "VARCHAR"),
           ("namespace", "VARCHAR"), ("state_name", "VARCHAR"), ("kind", "VARCHAR"), ("value", "JSON"))


def _key(key: Any) -> str:
    return key if isinstance(key, str) else readable(key)


def _entries(data: bytes, where: str) -> list[tuple[Any, Any, Any]]:
    try:
        entries = safe_loads(data)
    except Exception as exc:  # whatever a damaged or crafted pickle makes the unpickler raise
        raise CheckpointFormatError(f"{where} cannot be decoded: {type(exc).__name__}: {exc}") from None
    if not isinstance(entries, list) or not all(isinstance(e, tuple) and len(e) == 3 for e in entries):
        raise CheckpointFormatError(f"{where} does not hold (key, namespace, value) entries")
    return entries


def state_rows(snapshot: CompletedCheckpointPointer, bounds: QueryBounds | None = None) -> list[tuple]:
    """The rows of the ``state`` table of a checkpoint (decoded within the query's time, when
    ``bounds`` are given)."""
    keyed = [(operator, subtask.state) for operator in snapshot.metadata.operators for subtask in operator.subtasks
             if subtask.state is not None and subtask.state.key_groups]
    if bounds is not None and sum(_bytes(handle, snapshot.directory) for _, handle in keyed) > bounds.memory_bytes:
        raise bounds.out_of_memory("its keyed state needs more memory than")
    rows = []
    for operator, handle in keyed:
        data = read_handle(handle, snapshot.directory)
        for group, offset, length in handle.key_groups:
            if bounds is not None:
                bounds.check()
            where = f"operator {operator.operator_id}, key group {group}"
            try:
                frame = decode_key_group(data[offset:offset + length])
            except msgspec.DecodeError as exc:
                raise CheckpointFormatError(f"{where} cannot be read: {exc}") from None
            if frame.key_group != group:
                raise CheckpointFormatError(f"{where} holds key group {frame.key_group}")
            for table in frame.tables:
                for key, namespace, value in _entries(table.entries, f"{where}, state {table.name!r}"):
                    if table.kind == "timers" and isinstance(value, tuple) and value:
                        value = value[0]
                    rows.append((operator.name, operator.operator_id, group, _key(key),
                                 None if namespace is None else readable(namespace), table.name, table.kind,
                                 json_value(value)))
    return rows


def _bytes(handle: StateHandle, directory: str) -> int:
    """The bytes of keyed state a handle holds: its inline data, or its file's (which must be the
    size the metadata gives, as reading it checks)."""
    if handle.data is not None:
        return len(handle.data)
    if not handle.file or "/" in handle.file:
        return 0
    try:
        return min(handle.size, os.lstat(os.path.join(directory, handle.file)).st_size)
    except OSError:
        return 0


def open_state(path: str, bounds: QueryBounds | None = None) -> Any:
    """An in-memory DuckDB with the table ``state`` (also ``rill.state``) of the checkpoint or
    savepoint at ``path``, to be sealed (:func:`replay.sql.answer`), built within ``bounds``."""
    import duckdb
    import pyarrow as pa

    try:
        rows = state_rows(resolve(path), bounds)
    except (CheckpointFormatError, pickle.UnpicklingError) as exc:
        raise UsageError(f"--checkpoint {path}: {exc}") from None
    columns = {name: pa.array([row[i] for row in rows], type=pa.int32() if kind == "INTEGER" else pa.string())
               for i, (name, kind) in enumerate(COLUMNS)}
    con = duckdb.connect(":memory:")
    con.register("state_rows", pa.table(columns))
    con.execute("CREATE SCHEMA rill")
    con.execute(f"CREATE TABLE rill.state AS SELECT {', '.join(f'CAST({name} AS {kind}) AS {name}' for name, kind in COLUMNS)} "
                "FROM state_rows")
    con.unregister("state_rows")
    con.execute("CREATE VIEW state AS SELECT * FROM rill.state")
    return con

"""Reading what ``rill export`` wrote (``rill sql --parquet DIR``, on every engine): which files,
and that they are what rill wrote, before any engine reads them.

The layout is :mod:`replay.export`'s: ``DIR/<run>/run.parquet`` and
``DIR/<run>/events/<kind>.parquet`` (``DIR/run.parquet`` and ``DIR/events/`` for one run). Only
regular files reached from DIR without a symbolic link are read: every run directory, ``events``
directory and file is checked with ``lstat`` (a link, a FIFO, a device or a directory where a
file belongs is refused, whatever it leads to), and a directory in DIR that holds no
``run.parquet`` is refused, so no glob over DIR can reach past what was checked. Each file's
Parquet footer must read, and its columns be those of its table: every column of ``runs``, and
``run_id``, ``seq``, ``time`` of an event table, with the types rill writes (an export written
before an event gained a column reads it as NULL). Anything else is one
:class:`~kernel.errors.UsageError` naming the file.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any, Mapping

from kernel.errors import UsageError

if TYPE_CHECKING:
    from kernel.eventtables import EventTable
    from kernel.sqlbounds import QueryBounds

KIND = re.compile(r"[a-z0-9_]+")
WRITE_ONE = "write one with `rill export RUN... --parquet DIR`"

#: the columns of ``rill.runs`` as the event log declares them
RUN_COLUMNS = {
    "run_id": "VARCHAR", "job_name": "VARCHAR", "status": "VARCHAR", "clock": "VARCHAR", "seed": "BIGINT",
    "config": "JSON", "plugins": "JSON", "rill_version": "VARCHAR", "started_at": "TIMESTAMP",
    "ended_at": "TIMESTAMP", "updated_at": "TIMESTAMP", "pid": "INTEGER", "pid_start": "BIGINT", "host": "VARCHAR",
    "events": "BIGINT", "clock_start": "BIGINT", "clock_end": "BIGINT", "metadata": "JSON",
}
#: the columns every event file has
EVENT_KEYS = {"run_id": "VARCHAR", "seq": "BIGINT", "time": "BIGINT"}


def _arrow_kind(sql_type: str) -> tuple[str, Any]:
    """(what a column of ``sql_type`` holds, the Arrow type rill writes it as)."""
    import pyarrow as pa

    return {
        "VARCHAR": ("text", pa.string()), "JSON": ("text", pa.string()), "BIGINT": ("integers", pa.int64()),
        "INTEGER": ("integers", pa.int32()), "DOUBLE": ("numbers", pa.float64()), "BOOLEAN": ("booleans", pa.bool_()),
        "BLOB": ("bytes", pa.binary()), "TIMESTAMP": ("timestamps", pa.timestamp("us")),
    }[sql_type]


def _holds(arrow_type: Any, kind: str) -> bool:
    import pyarrow as pa

    if isinstance(arrow_type, pa.BaseExtensionType):
        arrow_type = arrow_type.storage_type
    t = pa.types
    return {
        "text": t.is_string(arrow_type) or t.is_large_string(arrow_type) or t.is_string_view(arrow_type),
        "integers": t.is_integer(arrow_type),
        "numbers": t.is_floating(arrow_type) or t.is_integer(arrow_type),
        "booleans": t.is_boolean(arrow_type),
        "bytes": t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or t.is_binary_view(arrow_type),
        "timestamps": t.is_timestamp(arrow_type),
    }[kind]


def export_files(directory: str) -> dict[str, list[str]]:
    """Table name (``runs``, ``ev_<kind>``) -> its files in a local export, as paths inside
    ``realpath(directory)``, each a regular file reached without a symbolic link."""
    if not os.path.isdir(directory):
        raise UsageError(f"no directory {directory!r} ({WRITE_ONE})")
    root = os.path.realpath(directory)
    if os.path.lexists(os.path.join(root, "run.parquet")):
        runs = [root]
    else:
        runs = []
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            if entry.is_symlink():
                raise UsageError(f"{entry.path} is a symbolic link: only what lies inside {root} is read")
            if entry.is_dir(follow_symlinks=False):
                runs.append(entry.path)
        if not runs:
            raise UsageError(f"{directory!r} holds no exported run (no run.parquet; {WRITE_ONE})")
    tables: dict[str, list[str]] = {"runs": []}
    for run in runs:
        run_file = os.path.join(run, "run.parquet")
        if not os.path.lexists(run_file):
            raise UsageError(f"{run} holds no run.parquet: not a run `rill export` wrote (an export directory holds "
                             "only runs)")
        tables["runs"].append(_regular(run_file, root))
        events = os.path.join(run, "events")
        if not os.path.lexists(events):
            continue
        if not stat.S_ISDIR(os.lstat(events).st_mode):
            raise UsageError(f"{events} is not a directory (a symbolic link?): only what lies inside {root} is read")
        for entry in sorted(os.scandir(events), key=lambda e: e.name):
            if not entry.name.endswith(".parquet"):
                continue
            kind = entry.name[: -len(".parquet")]
            if not KIND.fullmatch(kind):
                raise UsageError(f"{entry.path}: not an event file of `rill export` (names are [a-z0-9_]+.parquet)")
            tables.setdefault(f"ev_{kind}", []).append(_regular(entry.path, root))
    return tables


def _regular(path: str, root: str) -> str:
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise UsageError(f"{path} is a symbolic link: only regular files inside {root} are read")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{path} is not a regular file: only regular files inside {root} are read")
    return path


def checked_export(directory: str, tables: Mapping[str, EventTable],
                   bounds: QueryBounds | None = None) -> dict[str, tuple[list[str], Any]]:
    """Table name -> (its files, the Arrow schema to read them with) of a local export, every
    file checked (:func:`export_files`, then its footer and columns). The schema has every
    column the files have and every declared column (missing ones read as NULL)."""
    checked = {}
    for table, files in export_files(directory).items():
        if table == "runs":
            required, declared = RUN_COLUMNS, RUN_COLUMNS
        else:
            event = tables.get(table[len("ev_"):])
            required = EVENT_KEYS
            declared = {**EVENT_KEYS, **{c.name: c.sql_type for c in event.columns}} if event else EVENT_KEYS
        checked[table] = (files, _schema(table, files, required, declared, bounds))
    return checked


def _schema(table: str, files: list[str], required: Mapping[str, str], declared: Mapping[str, str],
            bounds: QueryBounds | None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = None
    for path in files:
        if bounds is not None:
            bounds.check()
        try:
            found = pq.read_schema(path)
        except (pa.ArrowException, OSError) as exc:
            raise UsageError(f"{path}: not a Parquet file `rill export` wrote: {_line(exc)}") from None
        missing = [name for name in required if name not in found.names]
        if missing:
            raise UsageError(f"{path}: not a file `rill export` wrote for {table}: it has no column "
                             f"{', '.join(missing)}")
        for name, sql_type in declared.items():
            kind = _arrow_kind(sql_type)[0]
            if name in found.names and not _holds(found.field(name).type, kind):
                raise UsageError(f"{path}: not a file `rill export` wrote for {table}: its column {name} holds "
                                 f"{found.field(name).type}, not {kind}")
        try:
            schema = found if schema is None else pa.unify_schemas([schema, found])
        except pa.ArrowException as exc:
            raise UsageError(f"{path}: its columns differ from the other {table} files': {_line(exc)}") from None
    assert schema is not None
    absent = [pa.field(name, _arrow_kind(sql_type)[1]) for name, sql_type in declared.items()
              if name not in schema.names]
    return pa.schema([*schema, *absent])


def _line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)

"""Reading what ``rill export`` wrote (``rill sql --parquet DIR``, on every engine): which files,
and that they are what rill wrote, before any engine reads them.

The layout is :mod:`replay.export`'s: ``DIR/<run>/run.parquet`` and
``DIR/<run>/events/<kind>.parquet`` (``DIR/run.parquet`` and ``DIR/events/`` for one run). Only
regular files reached from DIR without a symbolic link are read: every run directory, ``events``
directory and file is opened relative to the directory it is in, without following a link (a
link, a FIFO, a device or a directory where a file belongs is refused, whatever it leads to),
and read later through what was opened (:class:`ExportFiles`); a directory in DIR that holds no
``run.parquet`` is refused, so no glob over DIR can reach past what was checked. Each file's
Parquet footer must read, and its columns be those of its table: every column of ``runs``, and
``run_id``, ``seq``, ``time`` of an event table, with the types rill writes (an export written
before an event gained a column reads it as NULL). Anything else is one
:class:`~kernel.errors.UsageError` naming the file.
"""

from __future__ import annotations

import errno
import os
import re
import resource
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


class ExportFiles:
    """A local export's files (table name -> the files), each opened once as it was checked:
    every directory below DIR and every file is opened relative to the directory it was found
    in, without following a symbolic link, and read afterwards through the open file itself
    (``source``), so renaming, replacing or linking a checked file or directory afterwards
    changes nothing that is read. Closed with :meth:`close` (or as a context manager)."""

    def __init__(self, directory: str) -> None:
        self.tables: dict[str, list[str]] = {"runs": []}
        self._sources: dict[str, str] = {}
        self._opened: list[int] = []
        _allow_more_files()
        try:
            self._walk(directory)
        except BaseException:
            self.close()
            raise

    def source(self, path: str) -> str:
        """Where a reader opens ``path`` (one of :attr:`tables`' files): the file opened when
        it was checked."""
        return self._sources[path]

    def close(self) -> None:
        opened, self._opened = self._opened, []
        for fd in opened:
            os.close(fd)

    def __enter__(self) -> ExportFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, name: str, flags: int, dir_fd: int | None = None) -> int:
        fd = os.open(name, flags | _NO_LINK, dir_fd=dir_fd)
        self._opened.append(fd)
        return fd

    def _walk(self, directory: str) -> None:
        if not os.path.isdir(directory):
            raise UsageError(f"no directory {directory!r} ({WRITE_ONE})")
        root = os.path.realpath(directory)
        root_fd = self._open(root, os.O_RDONLY | os.O_DIRECTORY)
        if _lexists("run.parquet", root_fd):
            runs = [(root, root_fd)]
        else:
            runs = []
            for entry in sorted(os.scandir(root_fd), key=lambda e: e.name):
                path = os.path.join(root, entry.name)
                if entry.is_symlink():
                    raise UsageError(f"{path} is a symbolic link: only what lies inside {root} is read")
                if entry.is_dir(follow_symlinks=False):
                    runs.append((path, self._directory(entry.name, root_fd, path, root)))
            if not runs:
                raise UsageError(f"{directory!r} holds no exported run (no run.parquet; {WRITE_ONE})")
        for run, run_fd in runs:
            if not _lexists("run.parquet", run_fd):
                raise UsageError(f"{run} holds no run.parquet: not a run `rill export` wrote (an export directory "
                                 "holds only runs)")
            self.tables["runs"].append(self._regular("run.parquet", run_fd, os.path.join(run, "run.parquet"), root))
            events = os.path.join(run, "events")
            if not _lexists("events", run_fd):
                continue
            events_fd = self._directory("events", run_fd, events, root)
            for entry in sorted(os.scandir(events_fd), key=lambda e: e.name):
                if not entry.name.endswith(".parquet"):
                    continue
                path = os.path.join(events, entry.name)
                kind = entry.name[: -len(".parquet")]
                if not KIND.fullmatch(kind):
                    raise UsageError(f"{path}: not an event file of `rill export` (names are [a-z0-9_]+.parquet)")
                self.tables.setdefault(f"ev_{kind}", []).append(self._regular(entry.name, events_fd, path, root))

    def _directory(self, name: str, dir_fd: int, path: str, root: str) -> int:
        try:
            return self._open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                raise UsageError(f"{path} is not a directory (a symbolic link?): only what lies inside {root} "
                                 "is read") from None
            raise _cannot_open(path, exc) from None

    def _regular(self, name: str, dir_fd: int, path: str, root: str) -> str:
        try:
            fd = self._open(name, _ONLY_FOUND, dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:  # ELOOP: a link, where O_PATH is not had
                raise _cannot_open(path, exc) from None
            mode = stat.S_IFLNK
        else:
            mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            raise UsageError(f"{path} is a symbolic link: only regular files inside {root} are read")
        if not stat.S_ISREG(mode):
            raise UsageError(f"{path} is not a regular file: only regular files inside {root} are read")
        self._sources[path] = f"{_OPEN_FILES}/{fd}"
        return path


#: a path that opens the file a descriptor of this process has open
_OPEN_FILES = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
_NO_LINK = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: how a file is opened before it is known to be a regular one: only found (Linux's O_PATH: a
#: device or a FIFO is not opened at all; reading it reopens it), else read without blocking
_ONLY_FOUND = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK)


def _cannot_open(path: str, exc: OSError) -> UsageError:
    if exc.errno == errno.EMFILE:
        return UsageError(f"{path}: cannot be opened: the export holds more files than this process may open at once "
                          f"(ulimit -n {resource.getrlimit(resource.RLIMIT_NOFILE)[1]})")
    return UsageError(f"{path}: cannot be opened: {exc.strerror}")


def _allow_more_files() -> None:
    """Raise this process's soft limit of open files to its hard limit, as the JVM does at its
    start: an export's files stay open while they are read."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _lexists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def checked_export(files: ExportFiles, tables: Mapping[str, EventTable],
                   bounds: QueryBounds | None = None) -> dict[str, tuple[list[str], Any]]:
    """Table name -> (where its files are read: :meth:`ExportFiles.source`, the Arrow schema to
    read them with) of an opened export, every file's footer and columns checked. The schema
    has every column the files have and every declared column (missing ones read as NULL)."""
    checked = {}
    for table, paths in files.tables.items():
        if table == "runs":
            required, declared = RUN_COLUMNS, RUN_COLUMNS
        else:
            event = tables.get(table[len("ev_"):])
            required = EVENT_KEYS
            declared = {**EVENT_KEYS, **{c.name: c.sql_type for c in event.columns}} if event else EVENT_KEYS
        sources = [files.source(path) for path in paths]
        checked[table] = (sources, _schema(table, dict(zip(paths, sources)), required, declared, bounds))
    return checked


def _schema(table: str, files: Mapping[str, str], required: Mapping[str, str], declared: Mapping[str, str],
            bounds: QueryBounds | None) -> Any:
    """The schema of ``table``'s files (path -> where it is read), each checked."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = None
    for path, source in files.items():
        if bounds is not None:
            bounds.check()
        try:
            found = pq.read_schema(source)
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

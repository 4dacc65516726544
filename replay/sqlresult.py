"""Where a ``rill sql`` query's rows go (:class:`~kernel.contracts.sql.ResultWriter`): to the
terminal, at most ``sql.max-rows`` of them, printed once the query has ended well; or all of
them to ``--output FILE``, as CSV or JSON, written as they come and renamed into place at the
end (:mod:`replay.output`). Either way nothing is printed or left behind as if complete when a
bound stops the query."""

from __future__ import annotations

import csv
import io
import json
import sys
from typing import IO, Any

from kernel.cli.common import format_table
from kernel.errors import RillError
from kernel.sqlbounds import QueryBounds
from replay.jsonout import dumps, finite


def render(columns: list[str], rows: list[tuple], fmt: str) -> str:
    if fmt == "json":
        return dumps([dict(zip(columns, row)) for row in rows])
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    return format_table(columns, rows)


def _size(value: Any) -> int:
    """Bytes a fetched value takes in this process (its containers' items included)."""
    if isinstance(value, (tuple, list)):
        return sys.getsizeof(value) + sum(_size(item) for item in value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(_size(k) + _size(v) for k, v in value.items())
    return sys.getsizeof(value)


class TerminalResult:
    """Holds at most ``sql.max-rows`` rows (and no more bytes than ``sql.memory-limit``) to print
    when the query has ended; ``more`` tells whether the query had more."""

    def __init__(self, bounds: QueryBounds) -> None:
        self.bounds = bounds
        self.wanted: int | None = bounds.max_rows
        self.names: list[str] = []
        self.held: list[tuple] = []
        self.more = False
        self._bytes = 0

    def columns(self, names: list[str]) -> None:
        self.names = list(names)

    def rows(self, rows: list[tuple]) -> bool:
        self.bounds.check()
        room = self.bounds.max_rows - len(self.held)
        if len(rows) > room:
            self.more = True
            rows = rows[:room]
        self._bytes += sum(_size(row) for row in rows)
        if self._bytes > self.bounds.memory_bytes:
            raise self.bounds.out_of_memory("its rows need more memory than")
        self.held.extend(rows)
        return not self.more


class FileResult:
    """Writes every row to an open file as CSV or JSON, the bytes ``--format`` prints."""

    wanted: int | None = None

    def __init__(self, handle: IO[str], path: str, fmt: str, bounds: QueryBounds) -> None:
        self.handle, self.path, self.fmt, self.bounds = handle, path, fmt, bounds
        self.names: list[str] = []
        self.count = 0
        self._csv = csv.writer(handle, lineterminator="\n")

    def columns(self, names: list[str]) -> None:
        self.names = list(names)
        if self.fmt == "csv":
            self._write(lambda: self._csv.writerow(self.names))
        else:
            self._write(lambda: self.handle.write("["))

    def rows(self, rows: list[tuple]) -> bool:
        self.bounds.check()
        if self.fmt == "csv":
            self._write(lambda: self._csv.writerows(rows))
        else:
            items = [self._json_item(row, self.count + index) for index, row in enumerate(rows)]
            self._write(lambda: self.handle.write("".join(items)))
        self.count += len(rows)
        return True

    def _json_item(self, row: tuple, index: int) -> str:
        """One row as ``json.dumps(rows, indent=2)`` writes an item of the list."""
        text = json.dumps(finite(dict(zip(self.names, row))), indent=2, default=str, allow_nan=False)
        return ("\n" if index == 0 else ",\n") + "\n".join("  " + line for line in text.splitlines())

    def finish(self) -> None:
        """End the file (a JSON list is closed)."""
        if self.fmt == "json":
            self._write(lambda: self.handle.write("\n]\n" if self.count else "]\n"))

    def _write(self, write: Any) -> None:
        try:
            write()
        except OSError as exc:
            raise RillError(f"cannot write {self.path}: {exc.strerror}") from None

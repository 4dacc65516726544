"""Which runs of an event log can be read in full: the scan behind ``rill log check`` and
``rill log salvage``.

Every table is read row group by row group (``rowid`` ranges of 122,880 rows), each row in
full (a hash of the whole row, so every column is decoded); a range DuckDB cannot read is
read again in vectors of 2,048 rows to narrow the damage down. A run is intact when its
``runs`` row is readable, none of its rows lies in an unreadable range and the readable rows
are all the events its ``runs`` row counts. Salvage copies the intact runs, reading only the
ranges the scan found readable.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from kernel.eventtables import SCHEMA, TABLE_PREFIX
from plugins.eventlog.damage import LogDamaged, check_complete, damage_in
from plugins.eventlog.migrations import migrate, refresh_events_view
from plugins.eventlog.rebuild import SegmentRun, write_runs

ROW_GROUP = 122_880
VECTOR = 2_048


@dataclass
class TableScan:
    name: str
    #: readable rowid ranges [start, stop)
    good: list[tuple[int, int]] = field(default_factory=list)
    #: unreadable rowid ranges [start, stop) and why
    bad: list[tuple[int, int, str]] = field(default_factory=list)
    #: readable rows per run
    rows: Counter = field(default_factory=Counter)
    #: runs with rows in an unreadable range (as far as their run_id could be read)
    damaged_runs: set[str] = field(default_factory=set)


@dataclass
class RunState:
    run_id: str
    job_name: str
    status: str
    events: int  # what its runs row counts
    readable: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems


@dataclass
class LogScan:
    path: Path
    tables: dict[str, TableScan]
    runs: list[RunState]
    #: damage found outside the rows of runs (truncation, the catalogue tables)
    notes: list[str] = field(default_factory=list)
    #: runs that have events but no readable runs row
    unlisted: list[str] = field(default_factory=list)

    @property
    def intact(self) -> list[RunState]:
        return [run for run in self.runs if run.intact]

    @property
    def damaged(self) -> bool:
        return bool(self.notes or self.unlisted or any(t.bad for t in self.tables.values())
                    or any(not run.intact for run in self.runs))


def _ranges(end: int, size: int, start: int = 0) -> Iterator[tuple[int, int]]:
    for first in range(start, end, size):
        yield first, min(first + size, end)


def _read(con: Any, qualified: str, start: int, stop: int, by_run: bool) -> list[tuple]:
    group = "run_id" if by_run else "NULL"
    return con.execute(
        f"SELECT {group}, count(*), bit_xor(hash(x)) FROM {qualified} x WHERE rowid >= ? AND rowid < ? GROUP BY ALL",
        [start, stop],
    ).fetchall()


def scan_table(con: Any, qualified: str, name: str, by_run: bool = True) -> TableScan:
    scan = TableScan(name)
    last = con.execute(f"SELECT max(rowid) FROM {qualified}").fetchone()[0]
    end = -1 if last is None else last
    for start, stop in _ranges(end + 1, ROW_GROUP):
        try:
            parts = [(start, stop, _read(con, qualified, start, stop, by_run))]
        except Exception as exc:
            if not damage_in(exc):
                raise
            parts = []
            for first, upto in _ranges(stop, VECTOR, start):
                try:
                    parts.append((first, upto, _read(con, qualified, first, upto, by_run)))
                except Exception as inner:
                    why = damage_in(inner)
                    if not why:
                        raise
                    scan.bad.append((first, upto, why))
                    if by_run:
                        scan.damaged_runs |= _runs_in(con, qualified, first, upto)
        for first, upto, rows in parts:
            scan.good.append((first, upto))
            for run_id, count, _ in rows:
                scan.rows[run_id] += count
    scan.good = _merge(scan.good)
    scan.bad = _merge_bad(scan.bad)
    return scan


def _runs_in(con: Any, qualified: str, start: int, stop: int) -> set[str]:
    """The runs with rows in an unreadable range, if at least their run_id can be read."""
    try:
        rows = con.execute(
            f"SELECT DISTINCT run_id FROM {qualified} WHERE rowid >= ? AND rowid < ?", [start, stop]
        ).fetchall()
    except Exception as exc:
        if not damage_in(exc):
            raise
        return set()
    return {run_id for (run_id,) in rows}


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(ranges):
        if merged and merged[-1][1] == start:
            merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((start, stop))
    return merged


def _merge_bad(ranges: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    merged: list[tuple[int, int, str]] = []
    for start, stop, why in ranges:
        if merged and merged[-1][1] == start and merged[-1][2] == why:
            merged[-1] = (merged[-1][0], stop, why)
        else:
            merged.append((start, stop, why))
    return merged


def _tables(con: Any, catalog: str) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = ? ORDER BY table_name",
        [catalog, SCHEMA],
    ).fetchall()
    return [name for (name,) in rows]


def scan_log(con: Any, catalog: str, path: Path) -> LogScan:
    """Read every row of the log attached as ``catalog``: which runs are intact."""
    notes = []
    try:
        check_complete(con, catalog, path)
    except LogDamaged as exc:
        notes.append(exc.detail)
    names = _tables(con, catalog)
    tables = {name: scan_table(con, f"{catalog}.{SCHEMA}.{name}", name) for name in names
              if name.startswith(TABLE_PREFIX)}
    for name in ("migrations", "event_tables"):
        if name in names:
            catalogue = scan_table(con, f"{catalog}.{SCHEMA}.{name}", name, by_run=False)
            notes.extend(f"{name} rows {a:,}-{b - 1:,} unreadable ({why})" for a, b, why in catalogue.bad)
    runs: list[RunState] = []
    listed: set[str] = set()
    if "runs" in names:
        runs_scan = scan_table(con, f"{catalog}.{SCHEMA}.runs", "runs")
        tables["runs"] = runs_scan
        for start, stop in runs_scan.good:
            for run_id, job, status, events in con.execute(
                f"""SELECT run_id, job_name, status, events FROM {catalog}.{SCHEMA}.runs
                    WHERE rowid >= ? AND rowid < ? ORDER BY started_at, run_id""",
                [start, stop],
            ).fetchall():
                runs.append(RunState(run_id, job, status, events or 0))
                listed.add(run_id)
    for run in runs:
        where = []
        for name, scan in tables.items():
            if name != "runs":
                run.readable += scan.rows.get(run.run_id, 0)
                if run.run_id in scan.damaged_runs:
                    where.append(name)
        missing = run.events - run.readable
        if missing > 0:
            tables_named = f" ({', '.join(where)})" if where else ""
            run.problems.append(f"{missing:,} of {run.events:,} events unreadable{tables_named}")
        elif where:
            run.problems.append(f"rows in {', '.join(where)} unreadable")
    seen = {run_id for name, scan in tables.items() if name != "runs" for run_id in [*scan.rows, *scan.damaged_runs]}
    unlisted = sorted(seen - listed - {None})
    return LogScan(path, tables, runs, notes, unlisted)


def salvage(con: Any, catalog: str, scan: LogScan | None, out: Path, keep: list[str],
            from_segments: list[SegmentRun]) -> None:
    """Write the new DuckDB file ``out``: the runs ``keep`` of the log attached as ``catalog``
    (``scan`` found them intact; their ``runs`` row and their rows of every event table, read
    from readable ranges only), then the runs ``from_segments`` as their segments hold them."""
    target = "rill_salvage"
    con.execute(f"ATTACH '{str(out).replace(chr(39), chr(39) * 2)}' AS {target}")
    try:
        con.execute(f"USE {target}")
        migrate(con, str(out))
        if scan is not None:
            _copy(con, catalog, scan, keep)
        write_runs(con, from_segments)
    finally:
        con.execute("USE memory")
        con.execute(f"DETACH {target}")


def _copy(con: Any, catalog: str, scan: LogScan, keep: list[str]) -> None:
    con.execute("CREATE TEMP TABLE rill_keep (run_id VARCHAR)")
    if keep:
        con.executemany("INSERT INTO rill_keep VALUES (?)", [[run_id] for run_id in keep])
    specs = _event_tables(con, catalog)
    stored: dict[str, dict[str, str]] = {}
    con.execute("BEGIN TRANSACTION")
    for name, table in scan.tables.items():
        if name != "runs":
            columns = _columns(con, catalog, name)
            ddl = ", ".join(f'"{column}" {sql_type}' for column, sql_type in columns)
            con.execute(f"CREATE TABLE {SCHEMA}.{name} ({ddl})")
            tag = name[len(TABLE_PREFIX):]
            wanted = {column: sql_type for column, sql_type in columns if column != "run_id"}
            con.execute(
                f"INSERT INTO {SCHEMA}.event_tables VALUES (?, ?, ?, ?)",
                [tag, name, specs.get(tag, ""), json.dumps(wanted)],
            )
            stored[tag] = wanted
        for start, stop in table.good:
            con.execute(
                f"""INSERT INTO {SCHEMA}.{name} BY NAME SELECT * FROM {catalog}.{SCHEMA}.{name}
                    WHERE rowid >= ? AND rowid < ? AND run_id IN (SELECT run_id FROM rill_keep)""",
                [start, stop],
            )
    if stored:
        refresh_events_view(con, stored)
    con.execute("COMMIT")


def _columns(con: Any, catalog: str, table: str) -> list[tuple[str, str]]:
    return con.execute(
        """SELECT column_name, data_type FROM duckdb_columns()
           WHERE database_name = ? AND schema_name = ? AND table_name = ? ORDER BY column_index""",
        [catalog, SCHEMA, table],
    ).fetchall()


def _event_tables(con: Any, catalog: str) -> dict[str, str]:
    """tag -> event class, as far as the log's catalogue can be read."""
    try:
        return dict(con.execute(f"SELECT tag, event_class FROM {catalog}.{SCHEMA}.event_tables").fetchall())
    except Exception as exc:
        if not damage_in(exc):
            raise
        return {}

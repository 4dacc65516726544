"""Damaged event logs: one error whatever the damage, for every command that reads the log;
``rill log check`` tells the intact runs from the damaged ones; ``rill log salvage`` copies
the intact ones into a new file. The damaged file itself is never changed.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import duckdb
import pytest

from kernel.events import MessageDelayed
from plugins.eventlog.damage import HEADER_BYTES

BLOCK = 262_144  # DuckDB's default block size
ROW_GROUP = 122_880
VECTOR = 2_048
RUN_EVENTS = 250_000
WAY_OUT = "rill leaves it as it is: `rill log check` lists the intact runs, `rill log salvage OUT.duckdb` copies " \
          "them into a new file"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(session_factory, log: Path, runs: dict[str, int]) -> list[str]:
    """Record one run per name with that many message_delayed events; returns the run ids."""
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated")
    ids = []
    for name, count in runs.items():
        run = session.new_run(name)
        run.start()
        emit = run.bus.emit
        for i in range(count):
            emit(MessageDelayed(time=i, sender=name, receiver="b", message=str(i), delay_ms=1.5))
        run.finish("finished")
        run.bus.join()
        ids.append(run.id)
    return ids


def blocks_of(log: Path) -> dict[int, set[tuple[str, int, str]]]:
    """block id -> the (table, row group, column) whose data it holds."""
    con = duckdb.connect(str(log), read_only=True)
    try:
        users: dict[int, set[tuple[str, int, str]]] = {}
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
            for row_group, column, block, extra in con.execute(
                "SELECT row_group_id, column_name, block_id, additional_block_ids "
                f"FROM pragma_storage_info('rill.{table}')"
            ).fetchall():
                for used in [block, *(extra or [])]:
                    if used >= 0:
                        users.setdefault(used, set()).add((table, row_group, column))
        return users
    finally:
        con.close()


def write_garbage(log: Path, block: int) -> int:
    """Garbage over the first data of a block (its checksum covers the data it holds);
    returns the block's location (its first byte)."""
    location = HEADER_BYTES + block * BLOCK
    with open(log, "r+b") as file:
        file.seek(location + 64)
        file.write(b"\xde\xad\xbe\xef" * 256)
    return location


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """A log of runs a, b, c with 250,000 message_delayed events each (rows 0-249,999 are a's,
    250,000-499,999 b's, 500,000-749,999 c's), and the per-table row counts of each run."""
    from kernel.lifecycle.session import Session

    log = tmp_path_factory.mktemp("three") / "log.duckdb"

    def factory(*sets):
        return Session.open(sets=sets, environ={})

    ids = record(factory, log, {"a": RUN_EVENTS, "b": RUN_EVENTS, "c": RUN_EVENTS})
    con = duckdb.connect(str(log), read_only=True)
    counts = {
        table: dict(con.execute(f"SELECT run_id, count(*) FROM rill.{table} GROUP BY ALL").fetchall())
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, 'ev_')")
        .fetchall()
    }
    con.close()
    return log, ids, counts


@pytest.fixture
def b_damaged(three_runs, tmp_path):
    """A copy of the log with garbage over a block that holds only rows of run b (a block of
    ev_message_delayed's row group 3, rows 368,640-491,519, all b's). Also returns the rows
    that block holds, in whole vectors (what DuckDB can no longer read)."""
    source, ids, counts = three_runs
    log = tmp_path / "log.duckdb"
    shutil.copy(source, log)
    block = min(b for b, users in blocks_of(log).items() if users == {("ev_message_delayed", 3, "message")})
    con = duckdb.connect(str(log), read_only=True)
    ((start, count),) = con.execute(
        """SELECT start, count FROM pragma_storage_info('rill.ev_message_delayed')
           WHERE row_group_id = 3 AND column_name = 'message' AND block_id = ?""", [block]).fetchall()
    con.close()
    first = 3 * ROW_GROUP + start // VECTOR * VECTOR
    stop = 3 * ROW_GROUP + -(-(start + count) // VECTOR) * VECTOR
    return log, ids, counts, write_garbage(log, block), (first, stop)


def test_check_lists_the_intact_runs_and_what_is_damaged(cli, b_damaged):
    log, (a, b, c), _, location, (first, stop) = b_damaged
    before = sha256(log)
    code, out, err = cli("log", "check", "--set", f"eventlog.path={log}")
    assert code == 1
    assert 368_640 <= first < stop <= 491_520  # b's rows only
    assert [line.split() for line in out.splitlines()] == [
        ["run_id", "job", "status", "events", "state"],
        [a, "a", "finished", "250,002", "intact"],
        [b, "b", "finished", "250,002", "damaged:", f"{stop - first:,}", "of", "250,002", "events", "unreadable",
         "(ev_message_delayed)"],
        [c, "c", "finished", "250,002", "intact"],
        f"damaged: ev_message_delayed rows {first:,}-{stop - 1:,} cannot be read (corrupt data at byte {location})"
        .split(),
    ]
    assert err == f"rill: error: event log {log} is damaged: 2 of 3 runs intact; `rill log salvage OUT.duckdb` " \
                  "copies them into a new file\n"
    assert sha256(log) == before


def test_salvage_copies_every_readable_run_into_a_new_file(cli, b_damaged, tmp_path):
    log, (a, b, c), counts, location, (first, stop) = b_damaged
    before = sha256(log)
    out_file = tmp_path / "saved.duckdb"
    code, out, err = cli("log", "salvage", str(out_file), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"copied 2 run(s), 500,004 events, into {out_file}",
        f"  {a}  a  finished  250,002 events",
        f"  {c}  c  finished  250,002 events",
        "could not copy 1 run(s):",
        f"  {b}  b  finished  {stop - first:,} of 250,002 events unreadable (ev_message_delayed)",
        f"damaged: ev_message_delayed rows {first:,}-{stop - 1:,} cannot be read (corrupt data at byte {location})",
        f"{log} is left as it is; to use the copy instead: mv {out_file} {log}",
    ]
    assert sha256(log) == before

    con = duckdb.connect(str(out_file), read_only=True)
    copied = {
        table: dict(con.execute(f"SELECT run_id, count(*) FROM rill.{table} GROUP BY ALL").fetchall())
        for table in counts
    }
    assert con.execute("SELECT job_name, status, events FROM rill.runs ORDER BY job_name").fetchall() == [
        ("a", "finished", 250_002), ("c", "finished", 250_002)]
    assert con.execute("SELECT kind, count(*) FROM rill.events GROUP BY kind ORDER BY kind").fetchall() == [
        ("message_delayed", 500_000), ("run_finished", 2), ("run_started", 2)]
    con.close()
    assert copied == {table: {run: n for run, n in per_run.items() if run != b} for table, per_run in counts.items()}
    code, out, _ = cli("log", "check", "--set", f"eventlog.path={out_file}")
    assert code == 0 and out.splitlines()[-1] == f"event log {out_file}: 2 runs, all intact"

    code, _, err = cli("log", "salvage", str(out_file), "--set", f"eventlog.path={log}")
    assert (code, err) == (2, f"rill: error: {out_file} exists: give salvage a new file (it never overwrites one)\n")


def test_check_of_a_healthy_log(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    (run,) = record(session_factory, log, {"ok": 10})
    code, out, err = cli("log", "check", "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert [line.split() for line in out.splitlines()] == [
        ["run_id", "job", "status", "events", "state"], [run, "ok", "finished", "12", "intact"],
        ["event", "log", f"{log}:", "1", "runs,", "all", "intact"],
    ]


def damage(log: Path, kind: str) -> str:
    """Damage the log one way; returns the damage as the error names it."""
    if kind == "directory":
        log.unlink()
        log.mkdir()
        return "a directory, not a DuckDB file"
    if kind == "zero bytes":
        log.write_bytes(b"")
        return "an empty file (0 bytes), not a DuckDB file"
    if kind == "bad header":
        with open(log, "r+b") as file:
            file.write(b"\0" * 100)
        return "not a DuckDB file"
    if kind == "truncated":  # cut off the last block a table's rows are in
        last = max(blocks_of(log))
        size = HEADER_BYTES + last * BLOCK
        with open(log, "r+b") as file:
            file.truncate(size)
        return f"truncated: {size:,} bytes, its blocks need {size + BLOCK:,}"
    assert kind == "garbage in the middle"
    (block,) = [b for b, users in blocks_of(log).items() if ("runs", 0, "run_id") in users]
    return f"corrupt data at byte {write_garbage(log, block)}"


COMMANDS = {
    "runs": ["runs"],
    "sql": ["sql", "SELECT job_name, status FROM runs"],
    "metrics": ["metrics", "last"],
    "replay --at": ["replay", "last", "--at", "0"],
    "replay --events": ["replay", "last", "--events"],
    "report": ["report", "last", "-o", "report.html"],
    "export": ["export", "last", "--parquet", "exported"],
}


@pytest.mark.parametrize("kind", ["truncated", "bad header", "garbage in the middle", "zero bytes", "directory"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reading_a_damaged_log_gives_the_same_one_line_error(cli, session_factory, tmp_path, monkeypatch,
                                                                            kind, command):
    log = tmp_path / "log.duckdb"
    record(session_factory, log, {"one": 100})
    detail = damage(log, kind)
    before = sha256(log) if log.is_file() else None
    monkeypatch.setenv("RILL_EVENTLOG_PATH", str(log))
    code, out, err = cli(*COMMANDS[command])
    assert (code, out) == (1, "")
    assert err == f"rill: error: event log {log} is damaged ({detail}); {WAY_OUT}\n"
    assert (sha256(log) if log.is_file() else None) == before


@pytest.mark.parametrize("kind", ["bad header", "zero bytes", "directory"])
def test_a_file_duckdb_cannot_open_is_salvaged_from_its_segments(cli, session_factory, tmp_path, kind):
    log = tmp_path / "log.duckdb"
    (run,) = record(session_factory, log, {"one": 10})
    with duckdb.connect(str(log), read_only=True) as con:
        recorded = con.execute("SELECT kind, seq, payload FROM rill.events ORDER BY seq").fetchall()
    detail = damage(log, kind)
    code, out, err = cli("log", "check", "--set", f"eventlog.path={log}")
    assert code == 1
    assert [line.split() for line in out.splitlines()] == [
        ["run_id", "job", "status", "events", "state"],
        [run, "one", "finished", "12", *"missing from the log: its segments hold all 12 events".split()],
    ]
    assert err == (f"rill: error: event log {log} is damaged ({detail}): DuckDB cannot read it; its segments hold 1 "
                   "complete run(s): `rill log rebuild OUT.duckdb` writes them into a new file\n")
    saved = tmp_path / "saved.duckdb"
    code, out, err = cli("log", "salvage", str(saved), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"copied 1 run(s), 12 events, into {saved}",
        f"  {run}  one  finished  12 events  (from its segments)",
        f"damaged: DuckDB cannot read the log ({detail}): every run comes from its segments",
        f"{log} is left as it is; to use the copy instead: mv {saved} {log}",
    ]
    with duckdb.connect(str(saved), read_only=True) as con:
        assert con.execute("SELECT kind, seq, payload FROM rill.events ORDER BY seq").fetchall() == recorded
        assert con.execute("SELECT run_id, job_name, status, events FROM rill.runs").fetchall() == [
            (run, "one", "finished", 12)]


@pytest.mark.parametrize("kind", ["bad header", "zero bytes", "directory"])
@pytest.mark.parametrize("command", [["log", "check"], ["log", "salvage", "saved.duckdb"]])
def test_check_and_salvage_of_a_file_duckdb_cannot_open_without_segments(cli, session_factory, tmp_path, kind,
                                                                          command):
    log = tmp_path / "log.duckdb"
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated", "eventlog.retention=0")
    record(lambda *sets: session, log, {"one": 10})
    assert not list(tmp_path.glob("log.duckdb.spool/**/*.rill*"))  # retention 0: no segment is kept
    detail = damage(log, kind)
    code, out, err = cli(*command, "--set", f"eventlog.path={log}")
    assert (code, out) == (1, "")
    assert err == (f"rill: error: event log {log} is damaged ({detail}): no run in it can be read, and no segment "
                   "holds one; move it aside and the next run (or `rill log recover`) starts a new log there\n")
    assert not (tmp_path / "saved.duckdb").exists() and not (tmp_path / "saved.duckdb.partial").exists()

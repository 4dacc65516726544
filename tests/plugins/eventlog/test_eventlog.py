from __future__ import annotations

import json
from typing import Literal, Optional

import pytest

from kernel.errors import EventLogError
from kernel.events import Event
from kernel.eventtables import table_for
from plugins.eventlog.migrations import LATEST
from plugins.eventlog.store import EventStore
from tests.emitters import kill_after_flushes, start_child


class Sampled(Event, tag="test_sampled"):
    vertex: str = ""
    busy: float = 0.0
    ok: bool = True
    level: Optional[str] = None  # noqa: UP007
    state: Literal["OK", "HIGH"] = "OK"
    tags: list[str] = []


def log_session(session_factory, tmp_path, *sets):
    session = session_factory(f"eventlog.path={tmp_path / 'log.duckdb'}", "rill.clock=simulated", *sets)
    session.events.register(Sampled)
    return session


def store_of(session) -> EventStore:
    return session.plugin_manager.hook.open_event_store(config=session.config)


def test_columns_are_derived_from_the_struct():
    table = table_for(Sampled)
    assert table.name == "ev_test_sampled"
    assert [(c.name, c.sql_type, c.json) for c in table.columns] == [
        ("seq", "BIGINT", False), ("time", "BIGINT", False), ("vertex", "VARCHAR", False),
        ("busy", "DOUBLE", False), ("ok", "BOOLEAN", False), ("level", "VARCHAR", False),
        ("state", "VARCHAR", False), ("tags", "VARCHAR", True),
    ]


def test_a_run_lands_in_runs_and_event_tables(session_factory, tmp_path):
    session = log_session(session_factory, tmp_path, "rill.seed=4")
    run = session.new_run("sampling")
    run.start()
    for i in range(3):
        run.bus.emit(Sampled(time=i * 1000, vertex="Map", busy=i / 2, tags=["x", str(i)], state="HIGH" if i else "OK"))
    run.finish("finished")
    with store_of(session).read() as con:
        rows = con.execute("SELECT run_id, seq, time, vertex, busy, ok, level, state, tags FROM ev_test_sampled ORDER BY seq").fetchall()
        assert rows == [
            (run.id, 1, 0, "Map", 0.0, True, None, "OK", '["x","0"]'),
            (run.id, 2, 1000, "Map", 0.5, True, None, "HIGH", '["x","1"]'),
            (run.id, 3, 2000, "Map", 1.0, True, None, "HIGH", '["x","2"]'),
        ]
        job, status, clock, seed, events, config, plugins = con.execute(
            "SELECT job_name, status, clock, seed, events, config, plugins FROM runs"
        ).fetchone()
        assert (job, status, clock, seed, events) == ("sampling", "finished", "simulated", 4, 5)
        assert json.loads(config)["rill.seed"] == 4
        assert json.loads(plugins)["eventlog"] == "duckdb"
        kinds = con.execute("SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind").fetchall()
        assert kinds == [("run_finished", 1), ("run_started", 1), ("test_sampled", 3)]
        payload = con.execute("SELECT payload FROM events WHERE kind = 'test_sampled' AND seq = 2").fetchone()[0]
        assert json.loads(payload)["vertex"] == "Map"


def test_migrations_are_numbered_and_recorded(session_factory, tmp_path):
    session = log_session(session_factory, tmp_path)
    run = session.new_run("m")
    run.start()
    run.finish("finished")
    with store_of(session).read() as con:
        versions = con.execute("SELECT version FROM migrations ORDER BY version").fetchall()
    assert [v for (v,) in versions] == list(range(1, LATEST + 1))


def test_a_new_field_adds_a_column_and_old_rows_keep_null(session_factory, tmp_path):
    class Evolving(Event, tag="test_evolving"):
        a: int = 0

    session = log_session(session_factory, tmp_path)
    session.events.register(Evolving)
    run = session.new_run("v1")
    run.start()
    run.bus.emit(Evolving(a=1))
    run.finish("finished")

    class EvolvingV2(Event, tag="test_evolving"):  # the same tag, one field more
        a: int = 0
        b: str = "new"

    session2 = log_session(session_factory, tmp_path)
    session2.events.register(EvolvingV2)
    run2 = session2.new_run("v2")
    run2.start()
    run2.bus.emit(EvolvingV2(a=2, b="x"))
    run2.finish("finished")
    with store_of(session2).read() as con:
        assert con.execute("SELECT a, b FROM ev_test_evolving ORDER BY a").fetchall() == [(1, None), (2, "x")]


def test_a_retyped_field_is_refused(session_factory, tmp_path):
    class Typed(Event, tag="test_typed"):
        a: int = 0

    session = log_session(session_factory, tmp_path)
    session.events.register(Typed)
    run = session.new_run("t1")
    run.start()
    run.bus.emit(Typed(a=1))
    run.finish("finished")

    class Retyped(Event, tag="test_typed"):
        a: str = ""

    session2 = log_session(session_factory, tmp_path)
    session2.events.register(Retyped)
    run2 = session2.new_run("t2")
    run2.start()
    run2.bus.emit(Retyped(a="x"))
    run2.finish("finished")
    run2.bus.join()
    assert [str(e) for _, e in run2.bus.errors] == [
        "event test_typed.a changed type from BIGINT to VARCHAR; a field is never retyped: add a new field instead"
    ]


def test_a_log_from_a_newer_rill_is_refused(session_factory, tmp_path):
    session = log_session(session_factory, tmp_path)
    run = session.new_run("x")
    run.start()
    run.finish("finished")
    run.bus.join()
    import duckdb

    con = duckdb.connect(str(tmp_path / "log.duckdb"))
    con.execute(f"INSERT INTO rill.migrations VALUES ({LATEST + 1}, 'future', now()::TIMESTAMP)")
    con.close()
    with pytest.raises(EventLogError, match=f"schema version {LATEST + 1}, newer than this rill"):
        with store_of(session).read():
            pass


def test_a_corrupt_log_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.duckdb"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(EventLogError, match=r"event log .*broken.duckdb is damaged \(not a DuckDB file\); "):
        with EventStore(path).read():
            pass


@pytest.mark.parametrize("target", ["log", "spool"])
def test_sigkill_loses_at_most_one_flush_and_marks_the_run_crashed(tmp_path, target):
    """What a kill -9 loses is counted in flushes, not seconds (a loaded machine stretches
    both alike): every batch the writer finished — into the log or into the spool — is kept,
    whole; lost are at most the batch being written and the events no flush took yet."""
    path = tmp_path / "log.duckdb"
    if target == "spool":
        path.mkdir()  # the log cannot be written: the batches are only in the run's segment
    child = start_child(path, "doomed", -1, "200 ms", "200 ms", "eventlog.defer=0")
    taken, flushed = kill_after_flushes(child, 5)
    assert len(list((tmp_path / "log.duckdb.spool").glob("*.rill*"))) == 1
    if target == "spool":
        path.rmdir()  # the way out: now the next reader can write a healthy log there
    with EventStore(path).read() as con:  # ingests the spool, then finds the run's process gone
        status, events, ended = con.execute("SELECT status, events, ended_at IS NOT NULL FROM runs").fetchone()
        stored, first, last = con.execute("SELECT count(*), min(seq), max(seq) FROM ev_message_delayed").fetchone()
    assert status == "crashed"
    assert ended
    assert (first, events) == (1, stored + 1)  # + run_started (seq 0); run_finished never came
    assert last == stored  # no gap: whole batches
    assert len(flushed) >= 5 and last >= flushed[-1]  # every batch the writer finished survived
    assert last in [batch_last for _, batch_last in taken]  # the log ends where a batch ends
    assert len([batch for batch in taken if batch[1] > last]) <= 1  # at most the batch in flight is lost
    assert not list(tmp_path.glob("log.duckdb.spool/*.rill*"))  # ingested: kept for eventlog.retention
    assert len(list(tmp_path.glob("log.duckdb.spool/kept/*.rill*"))) == 1


def test_two_runs_at_the_same_time_neither_block_nor_corrupt_each_other(tmp_path):
    path = tmp_path / "log.duckdb"
    count = 20_000
    children = [start_child(path, name, count, "100 ms") for name in ("left", "right")]
    reads = 0
    while any(c.poll() is None for c in children):
        with EventStore(path).read() as con:  # a reader in between does not break them either
            con.execute("SELECT count(*) FROM runs").fetchone()
        reads += 1
    for child in children:
        assert child.wait() == 0, child.stderr.read()
    with EventStore(path).read() as con:
        runs = con.execute("SELECT job_name, status, events FROM runs ORDER BY job_name").fetchall()
        assert runs == [("left", "finished", count + 2), ("right", "finished", count + 2)]
        per_run = con.execute(
            """SELECT r.job_name, count(*), min(e.seq), max(e.seq), count(DISTINCT e.seq)
               FROM ev_message_delayed e JOIN runs r USING (run_id) GROUP BY r.job_name ORDER BY 1"""
        ).fetchall()
    assert per_run == [("left", count, 1, count, count), ("right", count, 1, count, count)]
    assert reads > 0


def test_runs_and_sql_commands(session_factory, tmp_path, cli):
    log = f"eventlog.path={tmp_path / 'log.duckdb'}"
    session = log_session(session_factory, tmp_path)
    run = session.new_run("wordcount")
    run.start()
    run.bus.emit(Sampled(time=5, vertex="Sink"))
    run.finish("finished")
    code, out, err = cli("runs", "--set", log)
    assert code == 0, err
    header, row = out.splitlines()
    assert header.split() == ["run_id", "job", "status", "clock", "seed", "started", "wall_s", "clock_s", "events"]
    assert row.split()[:5] == [run.id, "wordcount", "finished", "simulated", "0"]
    code, out, _ = cli("sql", "SELECT vertex, time FROM ev_test_sampled", "--format", "csv", "--set", log)
    assert (code, out) == (0, "vertex,time\nSink,5\n")
    code, out, _ = cli("sql", "SELECT vertex, time FROM rill.ev_test_sampled", "--format", "json", "--set", log)
    assert json.loads(out) == [{"vertex": "Sink", "time": 5}]
    code, out, err = cli("sql", "DELETE FROM runs", "--set", log)
    assert (code, out) == (2, "")
    assert err == "rill: error: rill sql is read-only: DELETE statements are refused (use SELECT)\n"
    code, _, err = cli("sql", "SELECT nope FROM runs", "--set", log)
    assert code == 2 and err.startswith("rill: error: SQL error: Binder Error")
    code, _, err = cli("sql", "SELECT 1; SELECT 2", "--set", log)
    assert (code, err) == (2, "rill: error: give one SQL statement at a time\n")

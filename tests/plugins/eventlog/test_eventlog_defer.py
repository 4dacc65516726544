"""A short run defers its event log: its events wait in a deferred spool and reach the log
after the run — written as the run's writer would have written them — from whoever waits for
them, or from a background process when the run's process exits."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from kernel.events import MessageDelayed
from plugins.eventlog.spool import spool_dirs
from plugins.eventlog.store import EventStore

ROOT = Path(__file__).resolve().parents[3]


def spools(log: Path) -> list[str]:
    return sorted(p.name for d in spool_dirs(log) if d.exists() for p in d.iterdir())


def short_run(session_factory, log: Path, *sets: str, events: int = 3):
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated", *sets)
    run = session.new_run("short")
    run.start()
    for i in range(events):
        run.bus.emit(MessageDelayed(time=i, sender="a", receiver="b", message=str(i), delay_ms=1.0))
    run.finish("finished")
    return run


def stored(log: Path) -> list:
    """Every stored row of every run, but what differs between runs (ids, wall-clock times)."""
    with EventStore(log).read() as con:
        return [
            con.execute("SELECT job_name, status, clock, seed, events, clock_start, clock_end FROM runs").fetchall(),
            con.execute("SELECT seq, time, kind FROM events ORDER BY seq").fetchall(),
            con.execute("SELECT seq, sender, receiver, message, delay_ms FROM ev_message_delayed ORDER BY seq")
            .fetchall(),
        ]


def test_a_short_run_waits_in_a_deferred_spool_until_its_events_are_waited_for(session_factory, tmp_path):
    log = tmp_path / "deferred.duckdb"
    run = short_run(session_factory, log)
    run.bus.join(settle=False)  # delivered: everything is in the spool, nothing in the log yet
    assert not log.exists() and spools(log) == [f"{run.id}-000000000000.deferred.rillspool"]
    run.bus.join()
    assert spools(log) == []
    eager = tmp_path / "eager.duckdb"
    other = short_run(session_factory, eager, "eventlog.defer=0")
    other.bus.join(settle=False)
    assert eager.exists() and spools(eager) == []  # no deferral: the writer wrote the log itself
    assert stored(log) == stored(eager) == [
        [("short", "finished", "simulated", 0, 5, 0, 0)],  # clock range: of the batches' last events
        [(0, 0, "run_started"), (1, 0, "message_delayed"), (2, 1, "message_delayed"), (3, 2, "message_delayed"),
         (4, 0, "run_finished")],
        [(1, "a", "b", "0", 1.0), (2, "a", "b", "1", 1.0), (3, "a", "b", "2", 1.0)],
    ]


def test_an_explicit_flush_writes_the_log_at_once(session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated")
    run = session.new_run("flushed")
    run.start()
    run.bus.flush()
    with EventStore(log).read() as con:
        assert con.execute("SELECT job_name, status FROM runs").fetchall() == [("flushed", "running")]
    run.finish("finished")
    run.bus.join(settle=False)
    assert spools(log) == []


def test_a_reader_sees_a_deferred_run_of_its_own_process(session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    run = short_run(session_factory, log)
    with EventStore(log).read() as con:
        assert con.execute("SELECT run_id, status, events FROM runs").fetchall() == [(run.id, "finished", 5)]
    assert spools(log) == []


def test_a_deferred_run_whose_log_cannot_be_written_is_announced(session_factory, tmp_path, capsys):
    log = tmp_path / "log.duckdb"
    log.mkdir()  # the log cannot be written
    run = short_run(session_factory, log)
    run.bus.join()
    spool = spool_dirs(log)[0] / f"{run.id}-000000000000.rillspool"
    assert spools(log) == [spool.name]  # announced: the plain name of a spool waiting for its log
    assert capsys.readouterr().err == (
        f"rill: warning: run {run.id}: event log {log} cannot be written (it is damaged: a directory, not a DuckDB "
        f"file); its 5 events since seq 0 are spooled in {spool}, and the next command that can write the log "
        "ingests them (`rill log recover`)\n")
    log.rmdir()
    with EventStore(log).read() as con:
        assert con.execute("SELECT run_id, status, events FROM runs").fetchall() == [(run.id, "finished", 5)]
    assert capsys.readouterr().err == f"rill: ingested 1 spooled run(s), 5 events, into {log}\n"


CHILD = textwrap.dedent(
    """
    import atexit, sys
    # registered first, so it runs last: after rill handed its run over at exit
    atexit.register(lambda: print("duckdb" in sys.modules, "pyarrow" in sys.modules, file=sys.stderr))
    from kernel.common import Types
    from kernel.datastream import StreamExecutionEnvironment
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3], Types.INT()).map(lambda x: x * 2).print()
    env.execute("exiting")
    """
)


def test_a_process_exiting_after_its_run_leaves_the_log_to_a_background_process(tmp_path):
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", CHILD, "--set"], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "2\n4\n6\n"
    assert result.stderr.splitlines()[-1] == "False False"  # the job's process never loaded DuckDB or Arrow
    log = tmp_path / ".rill" / "rill.duckdb"
    assert spools(log) == []  # reading the stderr to its end waited for the background process
    runs, events, _ = stored(log)
    assert [run[:2] for run in runs] == [("exiting", "finished")]
    assert [kind for _, _, kind in events][:1] == ["run_started"] and events[-1][2] == "run_finished"


def test_a_reader_never_misses_a_deferred_run_while_another_stores_it(session_factory, tmp_path):
    """Whoever stores a deferred spool holds the log before it takes the spool: while it waits
    for a reader holding the log, the spool stays free, so the reader stores it itself and
    shows the run (a spool taken first looks like one its run still writes, and the reader
    would read the log without the run); the storer then finds it gone."""
    import threading

    from plugins.eventlog.handover import replay_spool
    from plugins.eventlog.ingest import ingest_pending
    from plugins.eventlog.spool import lock_spool
    from plugins.eventlog.store import COMMAND_WAIT

    log = tmp_path / "log.duckdb"
    run = short_run(session_factory, log)
    run.bus.join(settle=False)
    [path] = [d / name for d in spool_dirs(log) if d.exists() for name in os.listdir(d)]
    results: list[bool] = []
    with EventStore(log).write(COMMAND_WAIT) as con:  # a command holds the log
        storing = threading.Thread(target=lambda: results.append(replay_spool(EventStore(log), path, 30.0)))
        storing.start()
        for _ in range(50):  # the storer waits for the log all along without taking the spool
            fd = lock_spool(path)
            assert fd is not None, "the spool was taken by a storer that does not hold the log"
            os.close(fd)
            storing.join(0.01)
        ingest_pending(con, log)
    storing.join()
    assert results == [False] and spools(log) == []
    with EventStore(log).read() as con:
        assert con.execute("SELECT run_id, status, events FROM runs").fetchall() == [(run.id, "finished", 5)]

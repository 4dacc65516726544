"""A short run defers its event log: its events wait in its segment and reach the log after the
run — as the run's writer would have written them — from whoever waits for them, or from the
next command that reads the log when the run's process exits (nothing outlives it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from kernel.events import MessageDelayed
from plugins.eventlog.spool import kept_segments, pending_spools, spool_dirs
from plugins.eventlog.store import EventStore

ROOT = Path(__file__).resolve().parents[3]


def spools(log: Path) -> list[str]:
    """The segments of ``log`` waiting to be ingested."""
    return sorted(p.name for p in pending_spools(log))


def kept(log: Path) -> list[str]:
    return sorted(p.name for p in kept_segments(log))


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


def test_a_short_run_waits_in_its_segment_until_its_events_are_waited_for(session_factory, tmp_path):
    log = tmp_path / "deferred.duckdb"
    run = short_run(session_factory, log)
    run.bus.join(settle=False)  # delivered: everything is in the segment, nothing in the log yet
    assert not log.exists() and spools(log) == [f"{run.id}-000000000000.rillseg"]
    run.bus.join()
    assert spools(log) == [] and kept(log) == [f"{run.id}-000000000000.rillseg"]  # kept after its ingest
    eager = tmp_path / "eager.duckdb"
    other = short_run(session_factory, eager, "eventlog.defer=0")
    other.bus.join(settle=False)
    assert eager.exists() and spools(eager) == []  # no deferral: the writer wrote the log itself
    assert kept(eager) == [f"{other.id}-000000000000.rillseg"]
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
    assert spools(log) == [spool.name]  # announced: the name of a segment waiting for a log it cannot write
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


def test_a_process_exiting_after_its_run_leaves_its_segment_to_the_next_reader(tmp_path):
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", CHILD, "--set"], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "2\n4\n6\n"
    assert result.stderr.splitlines()[-1] == "False False"  # the job's process never loaded DuckDB or Arrow
    log = tmp_path / ".rill" / "rill.duckdb"
    (segment,) = spools(log)  # nothing stored it after the process exited: nothing outlived it
    assert not log.exists()
    runs, events, _ = stored(log)  # the reader stores it first
    assert spools(log) == [] and kept(log) == [segment]
    assert [run[:2] for run in runs] == [("exiting", "finished")]
    assert [kind for _, _, kind in events][:1] == ["run_started"] and events[-1][2] == "run_finished"


def test_a_reader_never_misses_a_deferred_run_while_another_stores_it(session_factory, tmp_path):
    """Whoever stores a segment holds the log before it takes the segment: while a run's writer
    waits for a command holding the log, the segment stays free, so the command ingests it
    itself and shows the run (a segment taken first looks like one its run still writes, and
    the command would read the log without the run); the writer then finds it stored."""
    import threading

    from plugins.eventlog.ingest import ingest_pending
    from plugins.eventlog.spool import lock_spool
    from plugins.eventlog.store import COMMAND_WAIT

    log = tmp_path / "log.duckdb"
    run = short_run(session_factory, log)
    run.bus.join(settle=False)
    [path] = pending_spools(log)
    with EventStore(log).write(COMMAND_WAIT) as con:  # a command holds the log
        storing = threading.Thread(target=run.bus.settle)
        storing.start()
        for _ in range(50):  # the writer waits for the log all along without taking the segment
            fd = lock_spool(path)
            assert fd is not None, "the segment was taken by a storer that does not hold the log"
            os.close(fd)
            storing.join(0.01)
        ingest_pending(con, log, 3600)
    storing.join()
    assert spools(log) == [] and kept(log) == [path.name]
    assert run.bus.errors == []
    with EventStore(log).read() as con:
        assert con.execute("SELECT run_id, status, events FROM runs").fetchall() == [(run.id, "finished", 5)]

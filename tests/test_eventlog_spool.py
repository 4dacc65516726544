"""Nothing lost: a run's events wait in its segment while its event log cannot be written (or
is busy), and the next command that can write a healthy log at that path ingests them — in
order, exactly once.

Real rill processes writing real DuckDB files; the event sequences after recovery are compared
with the same simulated run recorded in a healthy log.
"""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from kernel.events import MessageDelayed
from plugins.eventlog.damage import HEADER_BYTES
from plugins.eventlog.spool import kept_segments, pending_spools, spool_dirs
from plugins.eventlog.store import EventStore
from tests.emitters import start_child
from tests.permissions import unwritable_directory

ROOT = Path(__file__).resolve().parent.parent
WORDCOUNT = str(ROOT / "examples" / "wordcount.py")
BLOCK = 262_144  # DuckDB's default block size
NOTICE = "rill: warning: run {run}: event log {log} cannot be written ({why}); its {n:,} events since seq 0 are " \
         "spooled in {spool}, and the next command that can write the log ingests them (`rill log recover`)\n"


def rill(tmp_path, *args, preexec_fn=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}  # as the isolated fixture sets it
    return subprocess.run([sys.executable, "-m", "kernel.cli.main", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, preexec_fn=preexec_fn, timeout=300)


def run_wordcount(tmp_path, log: Path, preexec_fn=None) -> subprocess.CompletedProcess:
    return rill(tmp_path, "run", "--clock", "simulated", "--quiet", "--set", f"eventlog.path={log}", WORDCOUNT,
                preexec_fn=preexec_fn)


def events_of(log: Path) -> dict[str, list[tuple[int, str]]]:
    """Every run's events as (seq, kind), by job status and run."""
    con = duckdb.connect(str(log), read_only=True)
    try:
        runs = con.execute("SELECT run_id, status, events FROM rill.runs ORDER BY started_at").fetchall()
        return {
            run_id: (status, events, con.execute(
                "SELECT seq, kind FROM rill.events WHERE run_id = ? ORDER BY seq", [run_id]).fetchall())
            for run_id, status, events in runs
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[tuple[int, str]]:
    """The wordcount job's simulated event sequence, recorded in a healthy log."""
    tmp_path = tmp_path_factory.mktemp("reference")
    log = tmp_path / "healthy.duckdb"
    result = run_wordcount(tmp_path, log)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert rill(tmp_path, "runs", "--set", f"eventlog.path={log}").returncode == 0  # stores the run
    ((status, events, sequence),) = events_of(log).values()
    assert status == "finished" and events == len(sequence) > 100
    return sequence


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def only_spool(log: Path) -> Path:
    spools = pending_spools(log)
    assert len(spools) == 1, spools
    return spools[0]


def damage(tmp_path, kind: str) -> tuple[Path, object, str]:
    """A log path rill cannot write, what keeps the child from writing it, and why (as the
    run's notice says it; for a truncated file, how it starts)."""
    if kind == "unwritable directory":
        directory, preexec = unwritable_directory(tmp_path)
        log = directory / "log.duckdb"
        return log, preexec, f"cannot create {log}.queue (Permission denied)"
    log = tmp_path / "log.duckdb"
    if kind == "directory as path":
        log.mkdir()
        return log, None, "it is damaged: a directory, not a DuckDB file"
    if kind == "zero-byte file":
        log.write_bytes(b"")
        return log, None, "it is damaged: an empty file (0 bytes), not a DuckDB file"
    assert kind == "truncated file"
    assert run_wordcount(tmp_path, log).returncode == 0
    assert rill(tmp_path, "runs", "--set", f"eventlog.path={log}").returncode == 0  # stores it: the log exists
    blocks = (log.stat().st_size - HEADER_BYTES) // BLOCK
    with open(log, "r+b") as file:
        file.truncate(HEADER_BYTES + blocks // 2 * BLOCK)  # half of it
    return log, None, f"it is damaged: truncated: {log.stat().st_size:,} bytes, its blocks need "


def repair(tmp_path, kind: str, log: Path, reference: list) -> None:
    """What the user does so a healthy log can be written at the path again."""
    if kind == "unwritable directory":
        log.parent.chmod(0o755)
    elif kind == "directory as path":
        log.rmdir()
    elif kind == "zero-byte file":
        log.unlink()
    else:  # the damaged log moves aside, and its kept segments rebuild it with the runs it had
        os.replace(log, tmp_path / "damaged.duckdb")
        rebuilt = rill(tmp_path, "log", "rebuild", "--set", f"eventlog.path={log}")
        assert (rebuilt.returncode, rebuilt.stderr) == (0, "")
        assert rebuilt.stdout.startswith(f"rebuilt 2 run(s), {2 * len(reference):,} events, into {log}\n")


@pytest.mark.parametrize("kind", ["unwritable directory", "directory as path", "zero-byte file", "truncated file"])
def test_a_run_that_cannot_write_its_log_keeps_its_segment_and_the_log_gets_every_event_later(tmp_path, reference,
                                                                                               kind):
    log, preexec, why = damage(tmp_path, kind)
    before = sha256(log) if log.is_file() else None
    # a short run tells what it can without DuckDB (a truncation needs it: a run writing its log sees it)
    defer = ["--set", "eventlog.defer=0"] if kind == "truncated file" else []
    result = rill(tmp_path, "run", "--clock", "simulated", "--quiet", "--set", f"eventlog.path={log}", *defer,
                  WORDCOUNT, preexec_fn=preexec)
    assert result.returncode == 0, result.stderr
    spool = only_spool(log)
    run_id = spool.name.split("-")[0]
    where = 1 if kind == "unwritable directory" else 0  # next to the log, else under RILL_HOME
    assert spool.parent == spool_dirs(log)[where] and spool.name.endswith(".rillspool")  # announced
    notice = NOTICE.format(run=run_id, log=log, why=why, n=len(reference), spool=spool)
    if kind == "truncated file":
        head, tail = notice.split(why)
        assert result.stderr.startswith(head + why) and result.stderr.endswith(tail)
    else:
        assert result.stderr == notice
    if kind == "unwritable directory":  # readers say what waits, and why
        listed = rill(tmp_path, "runs", "--set", f"eventlog.path={log}", preexec_fn=preexec)
        assert (listed.returncode, listed.stdout) == (0, f"no runs recorded yet ({log})\n")
        assert listed.stderr == f"rill: warning: 1 spooled run(s) wait to be ingested: {why}\n"
    if before is not None:
        assert sha256(log) == before  # a damaged log is never written
        refused = rill(tmp_path, "log", "recover", "--set", f"eventlog.path={log}")
        assert refused.returncode == 1 and refused.stderr.startswith(f"rill: error: event log {log} is damaged (")
        assert sha256(log) == before and spool.exists()  # recovery waits for a healthy log

    repair(tmp_path, kind, log, reference)
    recovered = rill(tmp_path, "log", "recover", "--set", f"eventlog.path={log}")
    if kind == "truncated file":  # rebuilt with every run its segments hold, this one included
        assert (recovered.returncode, recovered.stderr) == (0, "")
        assert recovered.stdout == f"nothing to recover: no spooled runs wait for {log}\n"
    else:
        assert (recovered.returncode, recovered.stderr) == (0, "")
        assert recovered.stdout == (
            f"ingested run {run_id} (WordCount, finished): {len(reference):,} events from {spool}\n"
            f"recovered 1 run(s), {len(reference):,} events, into {log}\n"
        )
    assert not spool.exists()
    assert events_of(log)[run_id] == ("finished", len(reference), reference)
    again = rill(tmp_path, "log", "recover", "--set", f"eventlog.path={log}")
    assert again.stdout == f"nothing to recover: no spooled runs wait for {log}\n"


def test_any_command_that_can_write_the_log_ingests_the_spool_first(tmp_path, reference):
    log = tmp_path / "log.duckdb"
    log.mkdir()
    first = run_wordcount(tmp_path, log)
    spool = only_spool(log)
    log.rmdir()
    listed = rill(tmp_path, "runs", "--format", "csv", "--set", f"eventlog.path={log}")
    assert first.returncode == listed.returncode == 0
    assert listed.stderr == f"rill: ingested 1 spooled run(s), {len(reference):,} events, into {log}\n"
    run_id = spool.name.split("-")[0]
    assert [line.split(",")[:3] for line in listed.stdout.splitlines()] == [
        ["run_id", "job", "status"], [run_id, "WordCount", "finished"]]
    assert events_of(log)[run_id] == ("finished", len(reference), reference)


def test_a_spool_ingested_again_after_a_crash_before_its_removal_changes_nothing(tmp_path, reference):
    log = tmp_path / "log.duckdb"
    log.write_bytes(b"")
    assert run_wordcount(tmp_path, log).returncode == 0
    spool = only_spool(log)
    saved = spool.read_bytes()
    log.unlink()
    assert rill(tmp_path, "log", "recover", "--set", f"eventlog.path={log}").returncode == 0
    assert [path.name for path in kept_segments(log)] == [spool.name]  # kept for eventlog.retention
    spool.write_bytes(saved)  # as if the recovery had died between its commit and the move
    again = rill(tmp_path, "log", "recover", "--set", f"eventlog.path={log}")
    run_id = spool.name.split("-")[0]
    assert again.stdout.splitlines() == [
        f"ingested run {run_id} (WordCount, finished): 0 events from {spool}",
        f"recovered 1 run(s), 0 events, into {log}",
    ]
    assert events_of(log) == {run_id: ("finished", len(reference), reference)}


class LongWriter:
    """Another process that holds the log's write lock (and DuckDB's own lock of the file)
    from ``hold()`` to ``release()``."""

    def __init__(self, log: Path) -> None:
        code = ("import sys\nfrom plugins.eventlog.store import EventStore\nprint('ready', flush=True)\n"
                "sys.stdin.readline()\n"
                f"with EventStore({str(log)!r}).write():\n    print('holding', flush=True)\n    sys.stdin.readline()\n")
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, cwd=ROOT)
        assert self.process.stdout.readline() == "ready\n"

    def hold(self) -> LongWriter:
        self.process.stdin.write("hold\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "holding\n"
        return self

    def release(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.close()
        assert self.process.wait() == 0


def log_counts(log: Path, run_id: str) -> tuple[str, int, int, int, int]:
    with EventStore(log).read() as con:
        status, events = con.execute("SELECT status, events FROM runs WHERE run_id = ?", [run_id]).fetchone()
        count, low, high = con.execute(
            "SELECT count(*), min(seq), max(seq) FROM events WHERE run_id = ?", [run_id]).fetchone()
    return status, events, count, low, high


def run_id_of(log: Path, name: str) -> str:
    with EventStore(log).read() as con:
        return con.execute("SELECT run_id FROM runs WHERE job_name = ?", [name]).fetchone()[0]


def test_a_run_never_waits_for_a_log_another_process_holds_its_segment_keeps_the_events(tmp_path):
    log = tmp_path / "log.duckdb"
    holder = LongWriter(log).hold()
    child = start_child(log, "blocked", 5_000, "100 ms", "200 ms")
    _, err = child.communicate(timeout=120)
    assert (child.returncode, err) == (0, "")  # a busy log is no news: the run's segment keeps its events
    spool = only_spool(log)
    run_id = spool.name.split("-")[0]
    assert spool.name.endswith(".rillseg")
    holder.release()
    recovered = rill(tmp_path, "log", "recover", "--set", f"eventlog.path={log}")
    assert recovered.stdout.splitlines() == [
        f"ingested run {run_id} (blocked, finished): 5,002 events from {spool}",
        f"recovered 1 run(s), 5,002 events, into {log}",
    ]
    assert log_counts(log, run_id) == ("finished", 5_002, 5_002, 0, 5_001)


def test_a_run_whose_log_becomes_busy_mid_run_loses_nothing(tmp_path):
    log = tmp_path / "log.duckdb"
    holder = LongWriter(log)
    child = start_child(log, "switched", 100_000, "100 ms", "200 ms")  # its first batch is in the log
    holder.hold()
    _, err = child.communicate(timeout=120)
    assert (child.returncode, err) == (0, "")
    spool = only_spool(log)
    run_id = spool.name.split("-")[0]
    holder.release()
    assert log_counts(log, run_id) == ("finished", 100_002, 100_002, 0, 100_001)  # the reader ingested the rest
    assert not spool.exists()


def test_a_run_goes_on_storing_its_log_once_it_can_write_it_again(tmp_path):
    log = tmp_path / "log.duckdb"
    holder = LongWriter(log)
    child = start_child(log, "back", 200_000, "100 ms", "200 ms")
    holder.hold()
    flushed = 0
    for line in child.stdout:  # a few flushes while the log is held: their batches stay in the segment
        flushed += line.startswith("flushed")
        if flushed == 3:
            break
    holder.release()  # while the run still goes
    _, err = child.communicate(timeout=120)
    assert (child.returncode, err) == (0, "")
    assert pending_spools(log) == [] and len(kept_segments(log)) == 1  # it stored its own segment
    run_id = run_id_of(log, "back")
    assert log_counts(log, run_id) == ("finished", 200_002, 200_002, 0, 200_001)


def spool_in_frames(session_factory, log: Path, batches: int) -> tuple[str, Path, list[int]]:
    """A run (in this process) that could not write ``log``: run_started, then ten events per
    flush, so its segment has one frame per batch. Returns the run id, the segment and where
    each frame starts."""
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated")
    run = session.new_run("frames")
    run.start()
    for batch in range(batches):
        for i in range(10):
            run.bus.emit(MessageDelayed(time=batch, sender="a", receiver="b", message=f"{batch}-{i}"))
        run.bus.flush()
    run.finish("finished")
    run.bus.join()
    spool = only_spool(log)
    data, starts, offset = spool.read_bytes(), [], 0
    while offset < len(data):
        starts.append(offset)
        offset += 8 + struct.unpack_from("<I", data, offset)[0]
    assert offset == len(data)
    return run.id, spool, starts


def test_a_torn_last_frame_is_left_out_of_the_ingest(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    log.mkdir()
    run_id, spool, starts = spool_in_frames(session_factory, log, 3)
    assert len(starts) == 7  # opened, run_started, three batches, run_finished's batch, closed
    with open(spool, "r+b") as file:
        file.truncate(starts[-1] + 5)  # a crash while the last frame was written
    log.rmdir()
    code, out, err = cli("log", "recover", "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"ingested run {run_id} (frames, running): 32 events from {spool}",
        f"recovered 1 run(s), 32 events, into {log}",
    ]
    assert not spool.exists()
    assert log_counts(log, run_id) == ("running", 32, 32, 0, 31)  # its end was in the torn frame


def test_a_corrupt_frame_stops_the_ingest_there_and_the_spool_is_kept(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    log.mkdir()
    run_id, spool, starts = spool_in_frames(session_factory, log, 3)
    with open(spool, "r+b") as file:
        file.seek(starts[4] + 20)
        file.write(b"\xff\xfe")  # damage inside the third batch
    log.rmdir()
    code, out, err = cli("log", "recover", "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    kept = spool.with_name(spool.name + ".unreadable")
    assert out.splitlines() == [
        f"ingested run {run_id} (frames, running): 21 events from {spool}",
        f"left {spool}: ingested up to where the frame at byte {starts[4]} fails its checksum (kept as {kept.name})",
        f"recovered 1 run(s), 21 events, into {log}",
    ]
    assert kept.exists() and not spool.exists()
    assert log_counts(log, run_id) == ("running", 21, 21, 0, 20)

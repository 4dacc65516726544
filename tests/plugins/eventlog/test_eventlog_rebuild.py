"""A log that survives its disk: every run's segments are kept for ``eventlog.retention`` after
they were ingested, `rill log rebuild` writes every run they hold into a new log, and `rill log
salvage` takes from them the runs DuckDB can no longer read — never a run with wrong or
missing events."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from kernel.events import MessageDelayed
from plugins.eventlog.damage import HEADER_BYTES
from plugins.eventlog.spool import kept_segments, pending_spools
from plugins.eventlog.store import EventStore

ROOT = Path(__file__).resolve().parents[3]
BLOCK = 262_144


def record(session_factory, log: Path, counts: dict[str, int], *sets: str) -> list[str]:
    """One run per name with that many message_delayed events, a flush every 1,000 (so its
    segment has many frames); returns the run ids."""
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated", *sets)
    ids = []
    for name, count in counts.items():
        run = session.new_run(name)
        run.start()
        for i in range(count):
            run.bus.emit(MessageDelayed(time=i, sender=name, receiver="b", message=str(i), delay_ms=0.5))
            if i % 1_000 == 999:
                run.bus.flush(deferrable=True)
        run.finish("finished")
        run.bus.join()
        ids.append(run.id)
    return ids


def contents(path: Path) -> dict[str, tuple]:
    """Every run of a log file: its runs row and all its events."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{path}' AS log (READ_ONLY)")
    try:
        return {
            run_id: (row, con.execute("SELECT seq, time, kind, payload FROM log.rill.events WHERE run_id = ? "
                                      "ORDER BY seq", [run_id]).fetchall())
            for run_id, *row in con.execute(
                "SELECT run_id, job_name, status, clock, seed, events, clock_start, clock_end, config, metadata, "
                "started_at, ended_at FROM log.rill.runs").fetchall()
        }
    finally:
        con.close()


def test_rebuild_writes_every_run_its_segments_hold_into_the_logs_place(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    ids = record(session_factory, log, {"a": 3_000, "b": 10})
    recorded = contents(log)
    assert sorted(recorded) == sorted(ids) and len(kept_segments(log)) == 2
    log.write_bytes(b"\0" * 100)  # DuckDB can no longer open it
    code, out, err = cli("log", "rebuild", "--set", f"eventlog.path={log}")
    assert (code, out) == (2, "")
    assert err == (f"rill: error: event log {log} exists: give rebuild a new file (`rill log rebuild OUT.duckdb`, "
                   f"then `mv OUT.duckdb {log}`), or move the log aside first\n")
    os.replace(log, tmp_path / "damaged.duckdb")
    code, out, err = cli("log", "rebuild", "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"rebuilt 2 run(s), 3,014 events, into {log}",
                                f"  {ids[0]}  a  finished  3,002 events", f"  {ids[1]}  b  finished  12 events"]
    assert contents(log) == recorded
    code, out, _ = cli("log", "check", "--set", f"eventlog.path={log}")
    assert code == 0 and out.splitlines()[-1] == f"event log {log}: 2 runs, all intact"


def test_rebuild_into_a_new_file_leaves_the_log_and_its_waiting_runs_alone(cli, session_factory, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr("kernel.eventbus.SETTLE_GRACE", 3600.0)  # nobody stores the waiting run meanwhile
    log = tmp_path / "log.duckdb"
    (stored,) = record(session_factory, log, {"stored": 10})
    session = session_factory(f"eventlog.path={log}", "rill.clock=simulated")
    waiting = session.new_run("waiting")
    waiting.start()
    waiting.finish("finished")
    waiting.bus.join(settle=False)  # its segment waits for the log
    out_file = tmp_path / "rebuilt.duckdb"
    code, out, err = cli("log", "rebuild", str(out_file), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"rebuilt 2 run(s), 14 events, into {out_file}",
                                f"  {stored}  stored  finished  12 events",
                                f"  {waiting.id}  waiting  finished  2 events",
                                f"to use it as the event log: mv {out_file} {log}"]
    assert len(pending_spools(log)) == 1
    code, _, err = cli("log", "rebuild", str(out_file), "--set", f"eventlog.path={log}")
    assert (code, err) == (2, f"rill: error: {out_file} exists: give rebuild a new file (it never overwrites one)\n")
    waiting.bus.join()
    assert pending_spools(log) == []


def test_a_run_whose_first_segment_is_gone_is_named_not_rebuilt(cli, session_factory, tmp_path, monkeypatch):
    monkeypatch.setattr("plugins.eventlog.writer.SEGMENT_BYTES", 16_384)  # a segment every few batches
    log = tmp_path / "log.duckdb"
    long, short = record(session_factory, log, {"long": 5_000, "short": 10})
    with EventStore(log).read() as con:  # the rotated segments were ingested in order, each once
        assert con.execute("SELECT job_name, events FROM runs ORDER BY job_name").fetchall() == [
            ("long", 5_002), ("short", 12)]
        assert con.execute("SELECT count(*), count(DISTINCT seq) FROM events WHERE run_id = ?", [long]).fetchone() \
            == (5_002, 5_002)
    segments = sorted(path for path in kept_segments(log) if path.name.startswith(long))
    assert len(segments) > 2
    second = int(segments[1].name.split("-")[1].split(".")[0])
    segments[0].unlink()  # as if it had expired before the others
    out_file = tmp_path / "rebuilt.duckdb"
    code, out, err = cli("log", "rebuild", str(out_file), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"rebuilt 1 run(s), 12 events, into {out_file}", f"  {short}  short  finished  12 events",
        "could not rebuild 1 run(s):",
        f"  {long}  long  finished  events from seq 0 to {second - 1} are in no segment left",
        f"to use it as the event log: mv {out_file} {log}",
    ]


def test_kept_segments_expire_after_the_retention(session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    record(session_factory, log, {"old": 10, "new": 10}, "eventlog.retention=7 d")
    old, new = sorted(kept_segments(log), key=lambda path: path.stat().st_mtime)
    eight_days_ago = time.time() - 8 * 86_400
    os.utime(old, (eight_days_ago, eight_days_ago))
    record(session_factory, log, {"next": 10}, "eventlog.retention=7 d")  # its ingest expires what is too old
    assert not old.exists() and new.exists() and len(kept_segments(log)) == 2


def test_a_log_truncated_to_half_is_checked_and_salvaged_from_its_segments(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    ids = record(session_factory, log, {name: 500 for name in "abcdef"})
    recorded = contents(log)
    blocks = (log.stat().st_size - HEADER_BYTES) // BLOCK
    os.truncate(log, HEADER_BYTES + blocks // 2 * BLOCK)
    code, out, err = cli("log", "check", "--set", f"eventlog.path={log}")
    assert code == 1  # DuckDB opens what is left, or not (the half may hold its catalog): the runs are named
    assert re.fullmatch(rf"rill: error: event log {re.escape(str(log))} is damaged(: 0 of 6 runs intact; its segments "
                        r"hold 6 of the others; `rill log salvage OUT.duckdb`| \(truncated: [\d,]+ bytes, its blocks "
                        r"need [\d,]+\): DuckDB cannot read it; its segments hold 6 complete run\(s\): `rill log "
                        r"rebuild OUT.duckdb` writes them into a new file\n)", err) or err.endswith(
        "copies them into a new file\n"), err
    saved = tmp_path / "saved.duckdb"
    code, out, err = cli("log", "salvage", str(saved), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"copied 6 run(s), 3,012 events, into {saved}"
    assert sorted(contents(saved)) == sorted(ids) and contents(saved) == recorded


def test_the_corruption_sweep_recovers_every_run_and_none_wrong():
    """``scripts/log_corruption_sweep.py`` over 8 of the blocks of a 6-run log, as a user runs it
    (``--without-segments``: what DuckDB alone still gives back — never a wrong run)."""
    for options, least in (([], 0.9), (["--without-segments"], 0.0)):
        done = subprocess.run([sys.executable, "scripts/log_corruption_sweep.py", "--blocks", "8", *options],
                              cwd=ROOT, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stdout + done.stderr
        totals = re.search(r"^blocks: 8, damage detected: (\d+); runs recovered: (\d+) of 48 \([\d.]+ %\); "
                           r"runs wrong: (\d+)$", done.stdout, re.M)
        assert totals is not None, done.stdout
        detected, recovered, wrong = map(int, totals.groups())
        assert wrong == 0, done.stdout
        assert recovered >= least * 48, done.stdout
        assert detected >= 1, done.stdout


@pytest.mark.parametrize("name", ["rebuild", "salvage"])
def test_a_segment_that_fails_its_checksum_keeps_its_run_out(cli, session_factory, tmp_path, name):
    log = tmp_path / "log.duckdb"
    first, second = record(session_factory, log, {"first": 3_000, "second": 10})
    segment = next(path for path in kept_segments(log) if path.name.startswith(first))
    with open(segment, "r+b") as file:
        file.seek(segment.stat().st_size // 2)
        file.write(b"\xff" * 8)
    log.write_bytes(b"\0" * 100)
    out_file = tmp_path / "new.duckdb"
    code, out, err = cli("log", name, str(out_file), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"{'rebuilt' if name == 'rebuild' else 'copied'} 1 run(s), 12 events, into {out_file}"
    assert re.search(rf"^  {first}  first  running  (missing from the log; its segments: )?"
                     rf"segment {re.escape(str(segment))}: the frame at byte \d+ "
                     "fails its checksum", out, re.M), out
    assert sorted(contents(out_file)) == [second]


def test_salvage_takes_no_run_from_segments_that_lost_their_tail(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    long, short = record(session_factory, log, {"long": 3_000, "short": 10})
    recorded = contents(log)
    segment = next(path for path in kept_segments(log) if path.name.startswith(long))
    os.truncate(segment, segment.stat().st_size * 2 // 3)  # whole from seq 0, but short of the run's end
    saved = tmp_path / "saved.duckdb"
    code, out, err = cli("log", "salvage", str(saved), "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    assert out.splitlines()[:3] == [f"copied 2 run(s), 3,014 events, into {saved}",
                                    f"  {long}  long  finished  3,002 events",  # the log has more of it
                                    f"  {short}  short  finished  12 events  (from its segments)"]
    assert contents(saved) == recorded


def test_a_reader_of_a_log_that_is_gone_names_the_runs_its_segments_keep(cli, session_factory, tmp_path):
    log = tmp_path / "log.duckdb"
    (run,) = record(session_factory, log, {"kept": 10})
    log.unlink()
    code, out, err = cli("runs", "--set", f"eventlog.path={log}")
    assert (code, out) == (0, f"no runs recorded yet ({log})\n")
    assert err == (f"rill: warning: no event log at {log}, but 1 run(s) recorded there are in its kept segments: "
                   "`rill log rebuild` writes them into it\n")
    code, out, err = cli("log", "rebuild", "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "")
    code, out, err = cli("runs", "--format", "csv", "--set", f"eventlog.path={log}")
    assert (code, err) == (0, "") and out.splitlines()[1].split(",")[:3] == [run, "kept", "finished"]


def test_a_log_truncated_to_half_without_segments_is_not_salvaged_into_an_empty_file(shell, isolated):
    """No kept segment (``eventlog.retention=0``) and half of the log gone with its runs rows:
    check names the runs and says none can be salvaged, salvage names them, writes nothing and
    fails — it never offers an empty file to put in the log's place."""
    example = str(ROOT / "examples" / "window_wordcount.py")
    for _ in range(3):
        code, _, err = shell("run", "--quiet", "--clock", "simulated", "--set", "eventlog.retention=0", example)
        assert (code, err) == (0, "")
    code, out, err = shell("runs", "--format", "csv", "--set", "eventlog.retention=0")
    ids = sorted(line.split(",")[0] for line in out.splitlines()[1:])
    assert (code, err, len(ids)) == (0, "", 3)
    log = isolated / ".rill" / "rill.duckdb"
    assert kept_segments(log) == [] and pending_spools(log) == []
    os.truncate(log, log.stat().st_size // 2)
    code, out, err = shell("log", "check")
    assert code == 1, err
    assert sorted(re.findall(r"^([0-9a-f]{12}) +\? +\? +\? +damaged: its runs row cannot be read", out, re.M)) == ids, out
    assert err == (f"rill: error: event log {log} is damaged: 0 of 3 runs intact, and no segment holds "
                   "one of the others: no run can be salvaged\n")
    saved = isolated / "saved.duckdb"
    code, out, err = shell("log", "salvage", str(saved))
    assert code == 1 and not saved.exists() and not saved.with_name("saved.duckdb.partial").exists()
    assert err == f"rill: error: no run of event log {log} can be copied: nothing written\n"
    assert out.splitlines()[0] == "could not copy 3 run(s):"
    assert sorted(re.findall(r"^  ([0-9a-f]{12})  \?  \?  its runs row cannot be read", out, re.M)) == ids
    assert "mv" not in out

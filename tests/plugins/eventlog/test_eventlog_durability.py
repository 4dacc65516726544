"""Runs that neither vanish nor are misreported: a run is durable from its first event; when its
events can be kept nowhere it says why and fails; a log that cannot be written is told apart
from a damaged one and can still be read; a reader never makes a run wait.

Real `rill` commands on real file systems: a small tmpfs the test mounts (full, or remounted
read-only), a file made read-only or immutable. Tests that need a mount or chattr are skipped,
with the reason, where they are not permitted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from plugins.eventlog.spool import kept_segments, pending_spools, spool_dirs
from plugins.eventlog.store import EventStore
from tests.conftest import rill_command
from tests.permissions import obeying_permissions

ROOT = Path(__file__).resolve().parents[3]
WORDCOUNT = str(ROOT / "examples" / "wordcount.py")
FULL = "No space left on device"
READ_ONLY = "Read-only file system"


def rill(cwd: Path, *args: str, home: Path | None = None, preexec_fn=None, timeout: float = 300):
    """The real ``rill`` command, as a user's shell runs it: (exit code, stdout, stderr)."""
    env = {**os.environ, "RILL_HOME": str(home if home is not None else cwd / ".rill")}
    done = subprocess.run([*rill_command(), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          preexec_fn=preexec_fn, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def wordcount(cwd: Path, *options: str, home: Path | None = None, preexec_fn=None):
    return rill(cwd, "run", "--clock", "simulated", "--quiet", *options, WORDCOUNT, home=home, preexec_fn=preexec_fn)


def runs(cwd: Path, *options: str, home: Path | None = None, preexec_fn=None):
    """``rill runs --format csv``: (exit code, [(run id, job, status, events)], stderr)."""
    code, out, err = rill(cwd, "runs", "--format", "csv", *options, home=home, preexec_fn=preexec_fn)
    rows = [line.split(",") for line in out.splitlines()[1:]]
    return code, [(row[0], row[1], row[2], int(row[-1])) for row in rows], err


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> str:
    """What wordcount prints (its output, whatever happens to its events)."""
    cwd = tmp_path_factory.mktemp("printed")
    code, out, err = wordcount(cwd)
    assert (code, err) == (0, ""), err
    return out


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the test (skipped where mounting is not
    permitted)."""
    path.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                              capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("no mount command: the full and read-only file system tests mount a small tmpfs")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): the full and "
                    "read-only file system tests need one")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path: Path, mode: str) -> None:
    done = subprocess.run(["mount", "-o", f"remount,{mode}", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot remount the tmpfs {mode} ({done.stderr.strip()})")


def fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` to its last byte; returns the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for chunk in (1 << 20, 4096, 1):
            data = b"\xa5" * chunk
            try:
                while True:
                    os.write(fd, data)
            except OSError as exc:
                assert exc.strerror == FULL, exc
    finally:
        os.close(fd)
    return filler


# -- a run is durable from its first event ------------------------------------------------------

EXITING = """
import os
from kernel.common import Types
from kernel.datastream import StreamExecutionEnvironment


def leave(value):
    os._exit(7)


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3], Types.INT()).map(leave).print()
env.execute("exiting")
"""


def test_a_job_that_exits_at_once_leaves_its_run_recorded_crashed(tmp_path):
    job = tmp_path / "exiting.py"
    job.write_text(EXITING)
    code, out, err = rill(tmp_path, "run", "--quiet", str(job))
    assert (code, out, err) == (7, "", "")  # its process ended in the job's first record
    code, listed, err = runs(tmp_path)
    assert (code, err) == (0, "")
    [(run_id, job_name, status, events)] = listed
    assert (job_name, status) == ("exiting", "crashed") and events >= 1
    code, out, err = rill(tmp_path, "replay", run_id, "--events", "--kind", "run_started")
    assert (code, err) == (0, "")
    assert [line.split()[:3] for line in out.splitlines()] == [["0.000000", "0", "run_started"]]


# -- when a run's events can be kept nowhere ----------------------------------------------------

LOST = re.compile(r"rill: error: run (?P<run>[0-9a-f]{12}): event log (?P<log>\S+) cannot be written "
                  r"\((?P<log_why>.+)\) "
                  r"and its events cannot be spooled \((?P<spool_why>.+)\): events from seq 0 on are lost\n")


def test_a_run_on_a_full_file_system_prints_its_output_says_why_its_events_are_lost_and_fails(tmp_path, printed,
                                                                                             monkeypatch):
    with tmpfs(tmp_path / "disk", "32m") as disk:
        home = disk / ".rill"
        monkeypatch.setenv("RILL_HOME", str(home))
        log = home / "rill.duckdb"
        assert wordcount(tmp_path, home=home)[0] == 0 and runs(tmp_path, home=home)[0] == 0  # a healthy log
        fill(disk)
        code, out, err = wordcount(tmp_path, home=home)
        assert (code, out) == (1, printed)
        lost = LOST.fullmatch(err)
        assert lost is not None, err
        assert lost["log"] == str(log) and FULL in lost["log_why"]
        assert lost["spool_why"] == f"{spool_dirs(log)[0]}: {FULL}; {spool_dirs(log)[1]}: {FULL}"
        assert pending_spools(log) == []


def test_recover_on_a_full_file_system_names_the_cause_and_fails_then_recovers_once_there_is_room(tmp_path,
                                                                                                monkeypatch):
    with tmpfs(tmp_path / "disk", "32m") as disk:
        home = disk / ".rill"
        monkeypatch.setenv("RILL_HOME", str(home))
        log = home / "rill.duckdb"
        assert wordcount(tmp_path, home=home)[0] == 0 and runs(tmp_path, home=home)[0] == 0
        code, _, err = wordcount(tmp_path, home=home)  # its segment waits for the next command
        assert (code, err) == (0, "")
        [segment] = pending_spools(log)
        filler = fill(disk)
        code, out, err = rill(tmp_path, "log", "recover", home=home)
        assert (code, out) == (1, f"recovered 0 run(s), 0 events, into {log}\n")
        assert err.startswith(f"rill: error: event log {log} cannot take the spooled runs (") and FULL in err
        assert err.endswith("); 1 wait to be ingested\n") and len(err.splitlines()) == 1
        assert segment.exists()
        filler.unlink()
        code, out, err = rill(tmp_path, "log", "recover", home=home)
        assert (code, err) == (0, "")
        run_id = segment.name.split("-")[0]
        assert out.splitlines() == [f"ingested run {run_id} (WordCount, finished): 167 events from {segment}",
                                    f"recovered 1 run(s), 167 events, into {log}"]
        code, listed, _ = runs(tmp_path, home=home)
        assert [(status, events) for _, _, status, events in listed] == [("finished", 167)] * 2


def test_a_run_on_a_read_only_file_system_prints_its_output_says_why_and_fails_and_the_log_is_read(tmp_path, printed,
                                                                                                  monkeypatch):
    with tmpfs(tmp_path / "disk", "32m") as disk:
        home = disk / ".rill"
        monkeypatch.setenv("RILL_HOME", str(home))
        log = home / "rill.duckdb"
        assert wordcount(tmp_path, home=home)[0] == 0
        code, before, _ = runs(tmp_path, home=home)
        remount(disk, "ro")
        try:
            assert runs(tmp_path, home=home) == (0, before, "")  # an unwritable log is read as it is
            code, out, err = wordcount(tmp_path, home=home)
            assert (code, out) == (1, printed)
            lost = LOST.fullmatch(err)
            assert lost is not None, err
            assert lost["log_why"] == f"cannot create {log}.queue ({READ_ONLY})"
            assert lost["spool_why"] == f"{spool_dirs(log)[0]}: {READ_ONLY}; {spool_dirs(log)[1]}: {READ_ONLY}"
        finally:
            remount(disk, "rw")


def test_a_log_on_a_read_only_file_system_keeps_runs_waiting_elsewhere_and_is_read(tmp_path):
    with tmpfs(tmp_path / "disk", "32m") as disk:
        log = disk / "log.duckdb"
        where = ("--set", f"eventlog.path={log}")
        assert wordcount(tmp_path, *where)[0] == 0
        code, before, _ = runs(tmp_path, *where)
        remount(disk, "ro")
        try:
            code, out, err = wordcount(tmp_path, *where)
            assert code == 0
            [segment] = pending_spools(log)
            assert segment.parent == spool_dirs(log)[1]  # under RILL_HOME: nothing can be written next to the log
            why = f"cannot create {log}.queue ({READ_ONLY})"
            assert err == (f"rill: warning: run {segment.name.split('-')[0]}: event log {log} cannot be written "
                           f"({why}); its 167 events since seq 0 are spooled in {segment}, and the next command "
                           "that can write the log ingests them (`rill log recover`)\n")
            waiting = f"rill: warning: 1 spooled run(s) wait to be ingested: {why}\n"
            assert runs(tmp_path, *where) == (0, before, waiting)
        finally:
            remount(disk, "rw")
        code, after, err = runs(tmp_path, *where)
        assert (code, err) == (0, f"rill: ingested 1 spooled run(s), 167 events, into {log}\n")
        assert len(after) == 2 and after[1:] == before


# -- unwritable is not damaged --------------------------------------------------------------------

def read_only(log: Path, how: str):
    """Make the log unwritable ``how``; returns what a child needs to obey it, and why it cannot
    write it (as rill says it)."""
    if how == "chmod":
        log.chmod(0o444)
        return obeying_permissions(f"open({str(log)!r}, 'r+b')"), "cannot open it for writing: Permission denied"
    if shutil.which("chattr") is None:
        pytest.skip("no chattr here: the immutable log test needs it")
    done = subprocess.run(["chattr", "+i", str(log)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make a file immutable here ({done.stderr.strip()})")
    return None, "cannot open it for writing: Operation not permitted"


def writable_again(log: Path, how: str) -> None:
    if how == "chmod":
        log.chmod(0o644)
    else:
        subprocess.run(["chattr", "-i", str(log)], check=True)


@pytest.mark.parametrize("how", ["chmod", "chattr +i"])
def test_an_intact_log_that_cannot_be_written_is_read_and_called_unwritable_not_damaged(tmp_path, how):
    log = tmp_path / ".rill" / "rill.duckdb"
    assert wordcount(tmp_path)[0] == 0
    code, before, _ = runs(tmp_path)
    preexec, why = read_only(log, how)
    try:
        assert runs(tmp_path, preexec_fn=preexec) == (0, before, "")
        code, _, err = wordcount(tmp_path, "--set", "eventlog.defer=0", preexec_fn=preexec)  # it writes its log
        assert code == 0
        [segment] = pending_spools(log)
        assert err == (f"rill: warning: run {segment.name.split('-')[0]}: event log {log} cannot be "
                       f"written ({why}); its 167 events since seq 0 are spooled in {segment}, and the next command "
                       "that can write the log ingests them (`rill log recover`)\n")
        assert runs(tmp_path, preexec_fn=preexec) == (0, before, f"rill: warning: 1 spooled run(s) wait to be "
                                                                  f"ingested: {why}\n")
        code, out, err = rill(tmp_path, "log", "recover", preexec_fn=preexec)
        assert (code, out, err) == (1, "", f"rill: error: event log {log} cannot be written ({why})\n")
        code, out, err = rill(tmp_path, "log", "check", preexec_fn=preexec)
        assert (code, err) == (0, "")
        assert out.splitlines()[-2:] == ["1 spooled run(s) wait to be ingested (`rill log recover`)",
                                         f"event log {log}: 1 runs, all intact"]
    finally:
        writable_again(log, how)
    code, after, err = runs(tmp_path)
    assert (code, err) == (0, f"rill: ingested 1 spooled run(s), 167 events, into {log}\n")
    assert len(after) == 2


# -- bad places ---------------------------------------------------------------------------------

def test_rill_home_or_the_log_directory_being_a_file_is_one_clear_error(tmp_path):
    home = tmp_path / "home-file"
    home.write_text("not a directory\n")
    for command in (["run", "--quiet", WORDCOUNT], ["runs"], ["log", "recover"]):
        assert rill(tmp_path, *command, home=home) == (2, "", f"rill: error: RILL_HOME {home} is not a directory\n")
    log = home / "sub" / "log.duckdb"
    code, out, err = rill(tmp_path, "run", "--quiet", "--set", f"eventlog.path={log}", WORDCOUNT)
    assert (code, out) == (2, "")
    assert err == f"rill: error: eventlog.path {log}: {home} is not a directory\n"


# -- readers and the run's writer ---------------------------------------------------------------

def test_a_reader_holding_the_log_neither_makes_a_run_wait_nor_is_an_error(tmp_path):
    log = tmp_path / ".rill" / "rill.duckdb"
    assert wordcount(tmp_path)[0] == 0 and runs(tmp_path)[0] == 0
    with EventStore(log).read() as con:  # a long reader: it holds the log while the run goes
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
        # the run writes its log from its first flush, and would wait up to a minute for a busy one
        code, out, err = wordcount(tmp_path, "--set", "eventlog.defer=0", "--set", "eventlog.lock-timeout=60 s")
        assert (code, err) == (0, "")
        [segment] = pending_spools(log)
        assert segment.name.endswith(".rillseg")  # not announced: a busy log is no news
    code, listed, err = runs(tmp_path)
    assert (code, err) == (0, "")
    # the same simulated run twice: every event of the one written beside the reader is there
    assert [(status, events) for _, _, status, events in listed] == [("finished", listed[1][3])] * 2
    assert pending_spools(log) == [] and len(kept_segments(log)) == 2

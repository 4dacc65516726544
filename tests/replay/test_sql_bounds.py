"""The bounds of a ``rill sql`` query (:mod:`kernel.sqlbounds`) on every engine: runaway queries
run by the real ``rill`` command are stopped within ``sql.timeout``, ``sql.memory-limit`` and
``sql.max-rows`` with one ``rill: error:`` line and exit 1 — nothing printed as if complete —
while a ``rill run`` started beside them records normally; ``--output FILE`` writes every row,
whole or not at all, and never over the event log or into what is read."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import rill_command

WORDCOUNT = Path(__file__).resolve().parents[2] / "examples" / "wordcount.py"

#: a realtime job of about three seconds, named by its argument
BESIDE_JOB = """
import sys
from kernel.common import WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.from_source(DataGeneratorSource(lambda i: i, count=30, records_per_second=10),
                WatermarkStrategy.no_watermarks(), "Ticks").print()
env.execute(sys.argv[1])
"""

TIMEOUT = "query stopped: it ran longer than sql.timeout (3 s); raise it with --set sql.timeout=6s"
ROWS = ("query stopped: it returned more than sql.max-rows (10000) rows; the first 10000 are above: --output FILE "
        "writes them all, --set sql.max-rows=20000 raises the cap")


def out_of_memory(mib: int) -> str:
    return (f"query stopped: it needs more memory than sql.memory-limit ({mib} MiB); raise it with --set "
            f"sql.memory-limit={2 * mib}mb")


#: name -> (DuckDB's query, Spark's query, settings, the line that stops it)
RUNAWAY = {
    "recursive": ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
                  "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
                  ("sql.timeout=3s",), TIMEOUT),
    "huge result": ("SELECT * FROM range(200000000)", "SELECT * FROM range(200000000)", (), ROWS),
    "counting": ("SELECT count(*) FROM range(10000000000000) a WHERE a.range % 7 = 3",
                 "SELECT count(*) FROM range(10000000000000) a WHERE id % 7 = 3", ("sql.timeout=3s",), TIMEOUT),
    "cross join": ("SELECT count(*) FROM range(10000000) a, range(10000000) b",
                   "SELECT count(*) FROM range(10000000) a CROSS JOIN range(10000000) b", ("sql.timeout=3s",), TIMEOUT),
    "string aggregation": ("SELECT length(string_agg(repeat('x', 1000), '')) FROM range(10000000)",
                           "SELECT length(concat_ws('', collect_list(repeat('x', 1000)))) FROM range(10000000)",
                           ("sql.timeout=300s",), "memory"),
}
#: the memory limit of the runaway queries per engine (Spark's driver needs 512 MiB)
MEMORY = {"duckdb": 256, "spark": 640}


def rill_env(home: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("RILL_")}
    return {**env, "RILL_HOME": str(home)}


def measured(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str, float, int]:
    """Run the real ``rill``: (exit code, stdout, stderr, seconds, peak RSS in MiB of its process).

    A small launcher starts it: Linux carries a parent's peak RSS into a child it forks (through
    ``exec``), so ``rill`` forked by this test process would report at least pytest's own."""
    out, err, peak = cwd / "measured.out", cwd / "measured.err", cwd / "measured.peak"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(peak), *rill_command(), *args], stdout=stdout,
                                   stderr=stderr, cwd=cwd, env=env)
        process.wait()
        seconds = time.monotonic() - started
    return process.returncode, out.read_text(), err.read_text(), seconds, int(peak.read_text())


LAUNCHER = """
import os, resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as peak:
    peak.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024))
sys.exit(code)
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    """A directory with an event log (``.rill``) holding one run, its export (``export``) and the
    job run beside the queries (``beside.py``)."""
    base = tmp_path_factory.mktemp("bounds")
    env = rill_env(base / ".rill")
    for args in (("run", "--clock", "simulated", "--quiet", str(WORDCOUNT)), ("export", "last", "--parquet", "export")):
        done = subprocess.run([*rill_command(), *args], capture_output=True, text=True, cwd=base, env=env)
        assert done.returncode == 0, done.stderr
    (base / "beside.py").write_text(BESIDE_JOB)
    return base


class Beside:
    """A realtime ``rill run`` started beside a query, on the same event log."""

    def __init__(self, base: Path, name: str) -> None:
        self.base, self.name = base, name
        self.process = subprocess.Popen([*rill_command(), "run", "--quiet", "beside.py", name], cwd=base,
                                        env=rill_env(base / ".rill"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)

    def check_recorded(self) -> None:
        out, err = self.process.communicate(timeout=300)
        assert self.process.returncode == 0, err
        assert out.splitlines() == [str(i) for i in range(30)]
        done = subprocess.run([*rill_command(), "sql", "--format", "json",
                               f"SELECT status, events FROM runs WHERE job_name = '{self.name}'"],
                              capture_output=True, text=True, cwd=self.base, env=rill_env(self.base / ".rill"))
        assert done.returncode == 0, done.stderr
        [run] = json.loads(done.stdout)
        assert run["status"] == "finished" and run["events"] > 30, run


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                if entry.isdigit() and int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _running_spark_task(pid: int) -> bool:
    """Whether the JVM ``pid`` runs a Spark task (a thread named Executor task launch worker)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/comm") as comm:
                if comm.read().startswith("Executor task"):
                    return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="finds Spark's JVM and its task threads in /proc")
def test_spark_s_jvm_ending_under_a_query_is_said_in_one_line(history):
    """The JVM rill started for ``rill sql --engine spark`` ends while a task of the query runs
    (SIGTERM: its shutdown hook stops the SparkContext, which cancels the job before the gateway
    goes): one line says how it ended, whichever of the two the query met first (the cancelled
    job was an "SQL error", exit 2)."""
    process = subprocess.Popen([*rill_command(), "sql", "--engine", "spark", "--format", "csv", "--set=sql.timeout=300s",
                                "--set=spark.master=local[1]", RUNAWAY["counting"][1]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=history,
                               env=rill_env(history / ".rill"))
    try:
        deadline = time.monotonic() + 240
        jvm = None
        while jvm is None and time.monotonic() < deadline:
            jvm = next((child for child in _children(process.pid) if _running_spark_task(child)), None)
            time.sleep(0.2)
        assert jvm is not None, "the query's Spark task never ran"
        os.kill(jvm, signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert (process.returncode, out) == (1, ""), err
    assert re.fullmatch(r"rill: error: Spark's JVM ended \(exit code \d+\) while answering the query\n", err), err


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
@pytest.mark.parametrize("name", RUNAWAY)
def test_a_runaway_query_is_stopped_within_its_bound_while_a_run_records(history, engine, name):
    duckdb_query, spark_query, settings, stops = RUNAWAY[name]
    query = duckdb_query if engine == "duckdb" else spark_query
    memory = MEMORY[engine]
    sets = [f"--set={setting}" for setting in (*settings, f"sql.memory-limit={memory}mb", "spark.master=local[1]")]
    beside = Beside(history, f"beside {engine} {name}")
    code, out, err, seconds, peak = measured(["sql", "--engine", engine, "--format", "csv", *sets, query],
                                             rill_env(history / ".rill"), history)
    line = out_of_memory(memory) if stops == "memory" else stops
    assert (code, err) == (1, f"rill: error: {line}\n"), err
    if stops == ROWS:  # the rows it may print, then the line
        assert out.splitlines() == ["range" if engine == "duckdb" else "id", *map(str, range(10000))]
    else:
        assert out == ""
    assert seconds < 330, seconds  # a runaway: hours without its bound (Spark's JVM starts slowly on a loaded machine)
    if engine == "duckdb":  # DuckDB's buffers and the process's own rows, within the limit and Python's own
        assert peak < memory + 300, peak
    beside.check_recorded()


def test_the_rill_command_writes_every_row_to_output(history, tmp_path):
    target = tmp_path / "rows.json"
    done = subprocess.run([*rill_command(), "sql", "--format", "json", "-o", str(target), "--set", "sql.max-rows=2",
                           "SELECT range AS n FROM range(5)"], capture_output=True, text=True, cwd=history,
                          env=rill_env(history / ".rill"))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{target}: 5 rows (json)\n", "")
    assert json.loads(target.read_text()) == [{"n": n} for n in range(5)]


def test_output_writes_every_row_or_nothing(cli, history, tmp_path):
    log = ("--set", f"eventlog.path={history / '.rill' / 'rill.duckdb'}")
    query = "SELECT range AS n, 'row ' || range AS label FROM range(25)"
    for fmt, suffix in (("csv", "csv"), ("json", "json")):
        printed = cli("sql", *log, "--format", fmt, query)
        assert printed[0] == 0, printed[2]
        target = tmp_path / f"all.{suffix}"
        assert cli("sql", *log, "--format", fmt, "--set", "sql.max-rows=10", "-o", str(target), query) == (
            0, f"{target}: 25 rows ({fmt})\n", "")
        assert target.read_text() == printed[1]  # the bytes it prints, every row
    assert json.loads((tmp_path / "all.json").read_text())[24] == {"n": 24, "label": "row 24"}
    # without --format, --output writes CSV; a table is for the terminal
    assert cli("sql", *log, "-o", str(tmp_path / "plain"), query)[0] == 0
    assert (tmp_path / "plain").read_text() == (tmp_path / "all.csv").read_text()
    assert cli("sql", *log, "--format", "table", "-o", str(tmp_path / "t"), query) == (
        2, "", "rill: error: --output writes --format csv or json (a table is for reading on the terminal)\n")
    # a bound hit while writing leaves nothing behind, and a file that was there as it was
    (tmp_path / "kept.csv").write_text("before\n")
    code, out, err = cli("sql", *log, "--set", "sql.timeout=1s", "-o", str(tmp_path / "kept.csv"),
                         "SELECT * FROM range(1000000000000)")
    assert (code, out, err) == (1, "", "rill: error: query stopped: it ran longer than sql.timeout (1 s); raise it "
                                       "with --set sql.timeout=2s\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["all.csv", "all.json", "kept.csv", "plain"]
    assert (tmp_path / "kept.csv").read_text() == "before\n"


def test_the_rows_printed_are_capped(cli, history):
    log = ("--set", f"eventlog.path={history / '.rill' / 'rill.duckdb'}")
    code, out, err = cli("sql", *log, "--set", "sql.max-rows=3", "--format", "csv", "SELECT * FROM range(4)")
    assert (code, out, err) == (1, "range\n0\n1\n2\n", "rill: error: query stopped: it returned more than sql.max-rows "
                                "(3) rows; the first 3 are above: --output FILE writes them all, --set sql.max-rows=6 "
                                "raises the cap\n")
    assert cli("sql", *log, "--set", "sql.max-rows=3", "--format", "csv", "SELECT * FROM range(3)") == (
        0, "range\n0\n1\n2\n", "")
    # rows bigger than the memory limit are not held for the terminal
    code, out, err = cli("sql", *log, "--set", "sql.memory-limit=16mb", "--format", "csv",
                         "SELECT repeat('x', 100000) AS x FROM range(9000)")
    assert (code, out) == (1, "") and err.startswith("rill: error: query stopped: it") and (
        "more memory than sql.memory-limit (16 MiB); raise it with --set sql.memory-limit=32mb\n") in err, err


def test_a_checkpoint_query_is_bounded(cli, tmp_path):
    from tests.savepoint_jobs import COUNT_JOB, savepoint_path, write

    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, _, err = cli("run", "--clock", "simulated", "--quiet", "--duration", "2500ms", "--stop-with-savepoint",
                       str(tmp_path / "savepoints"), job, "uid")
    assert code == 0, err
    savepoint = Path(savepoint_path(err))
    code, out, err = cli("sql", "--checkpoint", str(savepoint), "--set", "sql.timeout=2s",
                         "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
                         "SELECT count(*) FROM state, r")
    assert (code, out, err) == (1, "", "rill: error: query stopped: it ran longer than sql.timeout (2 s); raise it "
                                       "with --set sql.timeout=4s\n")
    assert cli("sql", "--checkpoint", str(savepoint), "-o", str(savepoint / "rows.csv"), "SELECT * FROM state") == (
        2, "", f"rill: error: --output {savepoint}/rows.csv lies inside {savepoint}, which is being read: give a "
               "file elsewhere\n")


@pytest.mark.parametrize("where, why", [
    ("{log}", "would overwrite the event log {log}: give another file"),
    ("{log}.wal", "would overwrite the event log {log}: give another file"),
    ("{link}", "would overwrite the event log {log}: give another file"),
    ("{export}/rows.csv", "lies inside {export}, which is being read: give a file elsewhere"),
    ("{tmp}", "is a directory: give a file name"),
    ("{tmp}/fifo", "is not a regular file (a FIFO, a device, a socket?)"),
    ("{tmp}/missing/rows.csv", "no directory {tmp}/missing"),
])
def test_output_is_refused_where_it_would_overwrite_or_cannot_be(cli, history, tmp_path, where, why):
    log = history / ".rill" / "rill.duckdb"
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(log)
    paths = {"log": log, "export": history / "export", "tmp": tmp_path, "link": tmp_path / "link"}
    before = log.read_bytes()
    target = where.format(**paths)
    code, out, err = cli("sql", "--set", f"eventlog.path={log}", "--parquet", str(history / "export"), "-o", target,
                         "SELECT * FROM runs")
    assert (code, out, err) == (2, "", f"rill: error: --output {target} {why.format(**paths)}\n".replace(
        f"--output {target} no directory", f"--output {target}: no directory"))
    assert log.read_bytes() == before


def test_report_output_never_overwrites_the_event_log(cli, history):
    log = history / ".rill" / "rill.duckdb"
    before = log.read_bytes()
    code, out, err = cli("report", "last", "--set", f"eventlog.path={log}", "-o", str(log))
    assert (code, out, err) == (2, "", f"rill: error: --output {log} would overwrite the event log {log}: give "
                                       "another file\n")
    assert log.read_bytes() == before


# -- the pieces ---------------------------------------------------------------------------------------


def test_the_memory_limit_defaults_to_a_quarter_of_the_machine(cli):
    from kernel.sqlbounds import SqlOptions, machine_memory, size

    assert SqlOptions().memory_bytes() == machine_memory() // 4
    assert machine_memory() <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    code, out, _ = cli("config", "--json")
    quarter = machine_memory() // 4
    assert code == 0 and json.loads(out)["sql.memory-limit"] == {
        "value": quarter, "source": f"default: a quarter of this machine's memory ({size(quarter)})"}
    assert SqlOptions(memory_limit=1 << 30).memory_bytes() == 1 << 30


def test_the_watchdog_stops_again_until_the_step_ends_then_takes_its_last_resort(monkeypatch):
    from kernel.errors import BoundExceeded
    from kernel.sqlbounds import QueryBounds

    monkeypatch.setattr("kernel.sqlbounds.GRACE_S", 0.5)
    stops, resorts, released = [], [], threading.Event()
    bounds = QueryBounds(0.2, 1 << 30, 10)
    with pytest.raises(BoundExceeded, match=r"ran longer than sql.timeout \(0.2 s\); raise it with --set "
                                            r"sql.timeout=0.4s"):
        with bounds.watch(lambda: stops.append(time.monotonic()), last_resort=lambda: (resorts.append(1),
                                                                                       released.set())):
            assert released.wait(30)  # a step that only the last resort ends
            raise RuntimeError("the step's own error, after the time was up")
    assert len(stops) >= 3 and resorts == [1] and bounds.expired
    quick = QueryBounds(30, 1 << 30, 10)
    with quick.watch(lambda: pytest.fail("stopped a step that ended in time")):
        pass
    assert not quick.expired


def test_a_step_that_ends_in_time_keeps_its_own_error():
    from kernel.sqlbounds import QueryBounds

    with pytest.raises(ValueError, match="own"):
        with QueryBounds(30, 1 << 30, 10).watch(lambda: None):
            raise ValueError("own")


def test_the_terminal_holds_at_most_its_rows_and_bytes():
    from kernel.errors import BoundExceeded
    from kernel.sqlbounds import QueryBounds
    from replay.sqlresult import TerminalResult

    result = TerminalResult(QueryBounds(30, 1 << 30, 5))
    result.columns(["n"])
    assert result.rows([(1,), (2,), (3,)]) and not result.more
    assert not result.rows([(4,), (5,), (6,)]) and result.more
    assert result.held == [(1,), (2,), (3,), (4,), (5,)]
    small = TerminalResult(QueryBounds(30, 1 << 20, 5))
    with pytest.raises(BoundExceeded, match=r"its rows need more memory than sql.memory-limit \(1 MiB\)"):
        small.rows([("x" * 600_000,), ("y" * 600_000,)])


def test_the_bounds_are_python_s_too(tmp_path):
    """Python-side work of a query (checking an export's files, writing rows) watches the clock."""
    from kernel.errors import BoundExceeded
    from kernel.sqlbounds import QueryBounds

    bounds = QueryBounds(0.05, 1 << 30, 10)
    bounds.check()  # before the clock starts: nothing
    bounds.start()
    time.sleep(0.1)
    with pytest.raises(BoundExceeded, match="sql.timeout"):
        bounds.check()


def test_a_jvm_whose_gateway_went_away_is_waited_for_to_tell_why():
    """Py4J loses its connection to a JVM dying of lack of memory before the process has exited:
    its exit code (Spark's 52) is waited for, so the query's error is the memory bound."""
    import sys

    from py4j.protocol import Py4JNetworkError

    from plugins.spark.sql import OOM_EXIT, _exit_code, _gateway_lost

    dying = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(1); raise SystemExit({OOM_EXIT})"])
    try:
        try:
            raise RuntimeError("java.lang.OutOfMemoryError: Java heap space")
        except RuntimeError:
            raise Py4JNetworkError("Error while sending or receiving")
    except Py4JNetworkError as lost:
        assert _gateway_lost(lost) and dying.poll() is None
        assert _exit_code(dying) == OOM_EXIT
    assert not _gateway_lost(ValueError("[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'"))

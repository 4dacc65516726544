"""``rill sql`` on DuckDB attacked through the real CLI (:mod:`replay.sandbox`): every attempt is
refused with exit 2 and one ``rill: error:`` line naming why, and nothing on disk changes — not
the event log, not an export, no new file. Queries keep working, with the same names, on the
log and on ``--parquet DIR``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import rill_command

from replay.views import VIEWS

WORDCOUNT = Path(__file__).resolve().parents[2] / "examples" / "wordcount.py"

class DuckDBError:
    """An error line DuckDB words after rill's own part: rill's part exactly, DuckDB's by its
    error class and the names it must mention (DuckDB's wording changes between releases)."""

    def __init__(self, rill_part: str, error_class: str, *mentions: str) -> None:
        self.rill_part, self.error_class, self.mentions = rill_part, error_class, mentions

    def format(self, **paths: Path) -> DuckDBError:
        return DuckDBError(self.rill_part.format(**paths), self.error_class, *(m.format(**paths) for m in self.mentions))

    def matches(self, line: str) -> bool:
        head = f"{self.rill_part}{self.error_class}: "
        return line.startswith(head) and "\n" not in line and all(m in line[len(head):] for m in self.mentions)

    def __repr__(self) -> str:
        return f"{self.rill_part}{self.error_class}: ...{' ...'.join(self.mentions)}"


def sql_error(error_class: str, *mentions: str) -> DuckDBError:
    return DuckDBError("SQL error: ", error_class, *mentions)


NO_FILE = DuckDBError("rill sql is sandboxed: it reads the tables and views of the event log (or of --parquet DIR), "
                      "no file: ", "Permission Error", "LocalFileSystem")


def refused(kind: str) -> str:
    return f"rill sql is read-only: {kind} statements are refused (use SELECT)"


def explained(kind: str) -> str:
    return f"rill sql is read-only: EXPLAIN of {kind} is refused (EXPLAIN a SELECT)"


ONE = "give one SQL statement at a time"

#: (query, what the error line says); {log}, {export} and {base} are the recorded files' paths
ATTACKS = [
    # writes: COPY, EXPORT, DML and DDL, and EXPLAIN ANALYZE (which executes) of each
    ("COPY (SELECT 'x' AS x) TO '{log}' (FORMAT csv)", refused("COPY")),
    ("COPY (SELECT 'x' AS x) TO '{log}' (FORMAT csv, USE_TMP_FILE false)", refused("COPY")),
    ("EXPLAIN ANALYZE COPY (SELECT 'x' AS x) TO '{log}' (FORMAT csv)", explained("COPY")),
    ("EXPLAIN ANALYZE COPY runs TO '{base}/stolen.csv'", explained("COPY")),
    ("EXPLAIN (ANALYZE, FORMAT json) COPY (SELECT 1) TO '{base}/stolen.csv'", explained("COPY")),
    ("EXPLAIN COPY (SELECT 1) TO '{base}/stolen.csv'", explained("COPY")),
    ("COPY runs FROM '{base}/secret.csv'", refused("COPY")),
    ("EXPORT DATABASE '{base}/dump'", refused("EXPORT")),
    ("EXPLAIN ANALYZE EXPORT DATABASE '{base}/dump'", sql_error("Parser Error", "EXPORT")),
    ("IMPORT DATABASE '{base}/dump'", refused("PRAGMA")),
    ("INSERT INTO runs SELECT * FROM runs", refused("INSERT")),
    ("EXPLAIN ANALYZE INSERT INTO runs SELECT * FROM runs", explained("INSERT")),
    ("UPDATE runs SET status = 'finished'", refused("UPDATE")),
    ("EXPLAIN ANALYZE UPDATE runs SET status = 'finished'", explained("UPDATE")),
    ("DELETE FROM runs", refused("DELETE")),
    ("EXPLAIN ANALYZE DELETE FROM runs", explained("DELETE")),
    ("DROP TABLE runs", refused("DROP")),
    ("ALTER TABLE runs ADD COLUMN x INTEGER", refused("ALTER")),
    ("CREATE TABLE stolen AS SELECT * FROM runs", refused("CREATE")),
    ("EXPLAIN ANALYZE CREATE TABLE stolen AS SELECT * FROM runs", explained("CREATE")),
    ("CREATE OR REPLACE TEMP VIEW runs AS SELECT 1", refused("CREATE")),
    ("CREATE MACRO m(x) AS x", refused("CREATE")),
    ("CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')", refused("CREATE")),
    ("CHECKPOINT", refused("CALL")),
    ("VACUUM", refused("VACUUM")),
    # other databases, extensions, settings
    ("ATTACH '{base}/other.duckdb' AS other", refused("ATTACH")),
    ("ATTACH '{log}' AS again", refused("ATTACH")),
    ("DETACH rill_log", refused("DETACH")),
    ("USE memory", refused("SET")),
    ("INSTALL httpfs", refused("LOAD")),
    ("LOAD httpfs", refused("LOAD")),
    ("FORCE INSTALL httpfs", refused("LOAD")),
    ("EXPLAIN ANALYZE LOAD httpfs", explained("LOAD")),
    ("UPDATE EXTENSIONS", refused("unrecognised")),
    ("SET enable_external_access = true", refused("SET")),
    ("RESET disabled_filesystems", refused("SET")),
    ("EXPLAIN ANALYZE SET lock_configuration = false", explained("SET")),
    ("PRAGMA enable_profiling", refused("PRAGMA")),
    ("CALL pragma_version()", refused("CALL")),
    ("PREPARE p AS SELECT 1", refused("PREPARE")),
    ("BEGIN TRANSACTION", refused("TRANSACTION")),
    ("SELECT * FROM enable_logging(storage = 'file', storage_path = '{base}/logs')",
     sql_error("Invalid Input Error", "enable_logging", "locked")),
    ("SELECT * FROM read_xlsx('{base}/secret.xlsx')", sql_error("Catalog Error", "read_xlsx", "excel")),
    # files: every reader, replacement scans, the log's and the export's own files, the network
    ("SELECT * FROM read_csv('/etc/passwd')", NO_FILE),
    ("SELECT * FROM read_csv_auto('{base}/secret.csv')", NO_FILE),
    ("SELECT * FROM read_text('/etc/hostname')", NO_FILE),
    ("SELECT * FROM read_blob('{log}')", NO_FILE),
    ("SELECT * FROM read_json('{base}/secret.csv')", NO_FILE),
    ("SELECT * FROM read_parquet('{export}/*/run.parquet')", NO_FILE),
    ("SELECT * FROM parquet_scan('{export}/../export/*/run.parquet')", NO_FILE),
    ("SELECT * FROM parquet_metadata('{export}/*/run.parquet')", NO_FILE),
    ("SELECT * FROM glob('{base}/*')", NO_FILE),
    ("SELECT * FROM sniff_csv('{base}/secret.csv')", NO_FILE),
    ("SELECT * FROM '{base}/secret.csv'", NO_FILE),
    ("FROM '{export}/*/run.parquet'", NO_FILE),
    ("SELECT * FROM '/etc/passwd'", sql_error("Catalog Error", "/etc/passwd")),
    ("SELECT * FROM read_csv('https://example.com/x.csv')", NO_FILE),
    ("WITH x AS (SELECT 1) SELECT * FROM read_csv('/etc/passwd')", NO_FILE),
    ("SELECT (SELECT count(*) FROM read_text('/etc/hostname')) AS n", NO_FILE),
    ("SELECT * FROM query('COPY (SELECT 1) TO ''{base}/stolen.csv''')",
     sql_error("Parser Error", "SELECT")),
    ("SELECT getenv('HOME')", sql_error("Catalog Error", "getenv")),
    # several statements, and keywords hidden by comments, casing and quoting
    ("SELECT 1; COPY (SELECT 1) TO '{base}/stolen.csv'", ONE),
    ("SELECT 1; SELECT 2", ONE),
    ("SeLeCt 1 ;CoPy (SeLeCt 1) To '{base}/stolen.csv'", ONE),
    ("/* SELECT */ COPY (SELECT 1) TO '{base}/stolen.csv'", refused("COPY")),
    ("-- SELECT\nCOPY (SELECT 1) TO '{base}/stolen.csv'", refused("COPY")),
    ("ExPlAiN /* SELECT */ AnAlYzE -- SELECT\n CoPy (SeLeCt 1) To '{base}/stolen.csv'", explained("COPY")),
    ("EXPLAIN ANALYZE \"COPY\" (SELECT 1) TO '{base}/stolen.csv'", sql_error("Parser Error", "COPY")),
    ("COPY (SELECT 'SELECT') TO '{base}/stolen.csv';", refused("COPY")),
]


def files_under(base: Path) -> dict[str, str]:
    """Every file under ``base`` (relative path -> SHA-256)."""
    found = {}
    for root, _, names in os.walk(base):
        for name in names:
            path = Path(root) / name
            found[str(path.relative_to(base))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def rill(*args: str, cwd: Path) -> str:
    env = {name: value for name, value in os.environ.items() if not name.startswith("RILL_")}
    done = subprocess.run([*rill_command(), *args], capture_output=True, text=True, cwd=cwd, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A real run recorded in ``BASE/log/rill.duckdb`` (by a real ``rill run``), exported to
    ``BASE/export``, next to files a query must not read (``secret.csv``)."""
    base = tmp_path_factory.mktemp("sandbox")
    log = f"eventlog.path={base / 'log' / 'rill.duckdb'}"
    rill("run", "--clock", "simulated", "--quiet", "--set", log, str(WORDCOUNT), cwd=base)
    rill("export", "last", "--parquet", str(base / "export"), "--set", log, cwd=base)
    (base / "secret.csv").write_text("secret\n42\n")
    rill("runs", "--set", log, cwd=base)  # the reader's lock file exists before the attacks
    return base


def sql(cli, base: Path, target: str, query: str, *options: str) -> tuple[int, str, str]:
    where = ("--set", f"eventlog.path={base / 'log' / 'rill.duckdb'}") if target == "log" else \
        ("--parquet", str(base / "export"))
    return cli("sql", *where, *options, "--", query)


@pytest.mark.parametrize("target", ["log", "parquet"])
@pytest.mark.parametrize("attack, problem", ATTACKS, ids=[f"attack{i}" for i in range(len(ATTACKS))])
def test_an_attack_is_refused_and_changes_nothing(cli, recorded, tmp_path, target, attack, problem):
    base = recorded
    paths = {"log": base / "log" / "rill.duckdb", "export": base / "export", "base": base}
    query, problem = attack.format(**paths), problem.format(**paths)
    before, log_sha = files_under(base), hashlib.sha256(paths["log"].read_bytes()).hexdigest()
    code, out, err = sql(cli, base, target, query)
    if isinstance(problem, DuckDBError):
        assert (code, out) == (2, "") and err.startswith("rill: error: ") and err.endswith("\n")
        assert problem.matches(err[len("rill: error: "):-1]), (err, problem)
    else:
        assert (code, out, err) == (2, "", f"rill: error: {problem}\n")
    assert hashlib.sha256(paths["log"].read_bytes()).hexdigest() == log_sha
    assert files_under(base) == before
    assert list(tmp_path.iterdir()) == []


#: statements the statement check would refuse, run straight on a sealed connection: DuckDB's
#: guards alone stop each (COPY with USE_TMP_FILE false writes a file DuckDB allows in place)
DIRECT = [
    "COPY (SELECT 'x' AS x) TO '{log}' (FORMAT csv, USE_TMP_FILE false)",
    "COPY (SELECT 'x' AS x) TO '{log}.wal' (FORMAT csv, USE_TMP_FILE false)",
    "EXPLAIN ANALYZE COPY (SELECT 'x' AS x) TO '{log}' (FORMAT csv, USE_TMP_FILE false)",
    "COPY (SELECT 1) TO '{base}/stolen.csv'",
    "EXPORT DATABASE '{base}/dump'",
    "IMPORT DATABASE '{base}/dump'",
    "ATTACH '{base}/other.duckdb' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "RESET disabled_filesystems",
    "SET lock_configuration = false",
    "PRAGMA enable_profiling",
    "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "SELECT * FROM read_text('{base}/secret.csv')",
    "SELECT * FROM read_blob('{log}')",
]


@pytest.mark.parametrize("target", ["log", "parquet"])
def test_the_seal_holds_without_the_statement_check(recorded, target):
    import duckdb

    from kernel.lifecycle.session import Session
    from replay.sandbox import seal
    from replay.sql import open_export
    from replay.store import event_store

    paths = {"log": recorded / "log" / "rill.duckdb", "export": recorded / "export", "base": recorded}
    before = files_under(recorded)
    session = Session.open(sets=(f"eventlog.path={paths['log']}",))
    with event_store(session).read() as logged, contextlib.ExitStack() as stack:
        con = logged if target == "log" else stack.enter_context(open_export(str(paths["export"]), {}))
        seal(con)
        for statement in DIRECT:
            with pytest.raises(duckdb.Error):
                con.execute(statement.format(**paths))
        if target == "log":  # letting go of the read-only log does not open a way back to it read-write
            con.execute("USE memory")
            con.execute("DETACH rill_log")
        with pytest.raises(duckdb.Error):
            con.execute(f"ATTACH '{paths['log']}' AS again")
        if target == "parquet":
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert files_under(recorded) == before


def test_what_was_checked_is_what_is_read_whatever_changes_after_the_check(recorded, tmp_path):
    """Between the check of an export's files and the query reading them, another process
    swaps a checked file for a link to a file outside, replaces another with a different
    Parquet file and renames the run's events directory to put a link in its place: the query
    reads the files as they were checked, and nothing else."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kernel.eventtables import tables_by_kind
    from kernel.lifecycle.session import Session
    from replay.sandbox import seal
    from replay.sql import open_export

    export = tmp_path / "export"
    shutil.copytree(recorded / "export", export)
    [run] = list(export.iterdir())
    outside = tmp_path / "outside"
    outside.mkdir()
    events = sorted((run / "events").iterdir())
    counts = {path.name: pq.read_metadata(path).num_rows for path in events}
    first, second = events[0], events[1]
    pq.write_table(pa.table({"secret": ["outside"]}), outside / "secret.parquet")
    tables = tables_by_kind(Session.open(sets=(f"eventlog.path={tmp_path / 'log.duckdb'}",)).events.types())
    with open_export(str(export), tables) as con:
        seal(con)
        first.unlink()
        first.symlink_to(outside / "secret.parquet")
        pq.write_table(pa.table({"run_id": ["x"] * 7, "seq": list(range(7)), "time": list(range(7))}),
                       outside / "other.parquet")
        os.replace(outside / "other.parquet", second)
        (run / "events").rename(run / "moved")
        (run / "events").symlink_to(outside)
        (run / "run.parquet").unlink()
        for path in (first, second):
            kind = path.name[: -len(".parquet")]
            assert con.execute(f"SELECT count(*) FROM ev_{kind}").fetchone() == (counts[path.name],)
        assert con.execute("SELECT count(*), min(job_name) FROM runs").fetchone() == (1, "WordCount")
        assert con.execute("SELECT count(*) FROM events").fetchone() == (sum(counts.values()),)


def test_there_are_at_least_forty_attacks():
    assert len(ATTACKS) >= 40


@pytest.mark.parametrize("target", ["log", "parquet"])
def test_queries_still_work_in_the_sandbox(cli, recorded, target):
    base = recorded
    code, out, err = sql(cli, base, target, "SELECT job_name, status, events FROM runs", "--format", "csv")
    assert (code, err) == (0, "")
    job, status, events = out.splitlines()[1].split(",")
    assert (job, status) == ("WordCount", "finished")
    cases = {
        "SELECT count(*) AS n FROM events": f"n\n{events}\n",
        "SELECT count(*) AS n FROM rill.events": f"n\n{events}\n",
        "WITH kinds AS (SELECT kind, count(*) AS n FROM events GROUP BY kind) SELECT sum(n) AS n FROM kinds":
            f"n\n{events}\n",
        "SELECT r.job_name, count(*) AS started FROM runs r JOIN ev_run_started s USING (run_id) GROUP BY 1":
            "job_name,started\nWordCount,1\n",
        "SELECT count(*) AS n FROM ev_fault_injected": "n\n0\n",
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', 'lock_configuration', "
        "'autoload_known_extensions') ORDER BY name":
            "name,value\nautoload_known_extensions,false\nenable_external_access,false\nlock_configuration,true\n",
        "SELECT now() > TIMESTAMPTZ '2024-01-01 00:00:00+00' AS later": "later\nTrue\n",
    }
    for query, expected in cases.items():
        assert sql(cli, base, target, query, "--format", "csv") == (0, expected, ""), query
    code, out, err = sql(cli, base, target, "SELECT now() AS t", "--format", "csv")  # TIMESTAMP WITH TIME ZONE
    assert code == 0 and re.fullmatch(r"t\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+[+-]\d\d:\d\d\n", out), err
    code, out, err = sql(cli, base, target, "SELECT vertex_name, count(*) FROM task_metrics GROUP BY ALL")
    assert code == 0 and "Sink: Print to Std. Out" in out, err
    code, out, err = sql(cli, base, target, "EXPLAIN SELECT count(*) FROM events", "--format", "csv")
    assert code == 0 and out.startswith("explain_key,explain_value\nphysical_plan,"), err
    code, out, err = sql(cli, base, target, "EXPLAIN ANALYZE SELECT count(*) FROM task_metrics", "--format", "csv")
    assert code == 0 and out.startswith("explain_key,explain_value\nanalyzed_plan,"), err


def test_the_log_and_its_export_expose_the_same_names_and_rows(cli, recorded):
    """``runs``, ``events``, every ``ev_*`` table and every view, unqualified, on both paths."""
    code, out, err = sql(cli, recorded, "log", "SELECT table_name FROM information_schema.tables "
                         "WHERE table_schema = 'rill' AND starts_with(table_name, 'ev_') ORDER BY 1", "--format", "csv")
    assert code == 0, err
    tables = out.splitlines()[1:]
    assert "ev_run_started" in tables and "ev_fault_injected" in tables
    for name in ["runs", "events", *tables, *VIEWS]:
        answers = [sql(cli, recorded, target, f"SELECT * FROM {name}", "--format", "json") for target in ("log", "parquet")]
        assert answers[0][0] == answers[1][0] == 0, (name, answers[0][2], answers[1][2])
        rows = [sorted(json.dumps(row, sort_keys=True) for row in json.loads(out)) for _, out, _ in answers]
        assert rows[0] == rows[1], name
    readme = "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind"
    log, parquet = (sql(cli, recorded, target, readme) for target in ("log", "parquet"))
    assert log == parquet and log[0] == 0 and "run_started " in log[1]


def test_a_symbolic_link_out_of_an_export_is_refused(cli, recorded, tmp_path):
    export = tmp_path / "export"
    shutil.copytree(recorded / "export", export)
    [run] = [path for path in export.iterdir()]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "runs.parquet").write_bytes((run / "run.parquet").read_bytes())
    (export / "elsewhere").mkdir()
    (export / "elsewhere" / "run.parquet").symlink_to(outside / "runs.parquet")
    code, out, err = cli("sql", "--parquet", str(export), "SELECT count(*) FROM runs")
    assert (code, out) == (2, "")
    assert err == (f"rill: error: {export}/elsewhere/run.parquet is a symbolic link: only regular files inside "
                   f"{export} are read\n")
    (export / "elsewhere" / "run.parquet").unlink()
    (export / "elsewhere").rmdir()
    (run / "events" / "passwd.parquet").symlink_to("/etc/passwd")
    code, out, err = cli("sql", "--parquet", str(export), "SELECT count(*) FROM runs")
    assert (code, out) == (2, "") and err.startswith(f"rill: error: {run}/events/passwd.parquet is a symbolic link")


def test_an_export_of_more_files_than_the_soft_limit_is_read_and_beyond_the_hard_one_refused(recorded, tmp_path):
    """Each file of an export stays open while the query runs: ``rill sql`` raises its soft
    limit of open files to the hard one when it needs to, and past the hard one says so in a
    line."""
    import resource

    export = tmp_path / "export"
    [run] = list((recorded / "export").iterdir())
    for copy in range(4):  # 4 runs of 39 files each: 156 files
        shutil.copytree(run, export / f"{run.name}{copy}")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    command = [*rill_command(), "sql", "--parquet", str(export), "--format", "csv", "SELECT count(*) AS n FROM runs"]
    for limits, expected in (((100, hard), (0, "n\n4\n", "")),
                             ((100, 100), (2, "", "the export holds more files than this process may open at once "
                                                  "(ulimit -n 100)"))):
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120,
                              preexec_fn=lambda limits=limits: resource.setrlimit(resource.RLIMIT_NOFILE, limits))
        if expected[0] == 0:
            assert (done.returncode, done.stdout, done.stderr) == expected
        else:
            assert (done.returncode, done.stdout) == expected[:2]
            [line] = done.stderr.splitlines()
            assert line.startswith(f"rill: error: {export}/") and line.endswith(expected[2]), line


def test_an_export_directory_reached_through_a_link_or_dots_is_read(cli, recorded, tmp_path):
    (tmp_path / "link").symlink_to(recorded / "export")
    for directory in (tmp_path / "link", recorded / "export" / ".." / "export"):
        code, out, err = cli("sql", "--parquet", str(directory), "--format", "csv", "SELECT job_name FROM runs")
        assert (code, out, err) == (0, "job_name\nWordCount\n", "")


@pytest.mark.parametrize("target", ["log", "parquet"])
def test_json_output_has_no_nan(cli, recorded, target):
    code, out, err = sql(cli, recorded, target, "SELECT 'nan'::DOUBLE AS a, 'inf'::DOUBLE AS b, -'inf'::DOUBLE AS c, "
                         "[1.5, 'nan'::DOUBLE] AS l, {'x': 'nan'::DOUBLE} AS s, 2.5 AS d", "--format", "json")
    assert code == 0, err
    assert json.loads(out, parse_constant=reject) == [{"a": None, "b": None, "c": None, "l": [1.5, None],
                                                       "s": {"x": None}, "d": "2.5"}]
    code, out, err = sql(cli, recorded, target, "SELECT latency_ms FROM task_metrics", "--format", "json")
    latencies = [row["latency_ms"] for row in json.loads(out, parse_constant=reject)]
    assert code == 0 and None in latencies


def reject(constant: str) -> float:
    raise AssertionError(f"{constant} is not JSON")


def test_every_json_output_is_valid_json(cli, recorded, monkeypatch):
    monkeypatch.setenv("RILL_HOME", str(recorded / "log"))
    for args in (("runs", "--format", "json"), ("metrics", "last", "--json"), ("replay", "last", "--at", "0.05", "--json")):
        code, out, err = cli(*args)
        assert code == 0, err
        assert json.loads(out, parse_constant=reject), args


def test_dumps_replaces_every_non_finite_float():
    from replay.jsonout import dumps

    value = {"a": math.nan, "b": [math.inf, (-math.inf, 1.0)], "c": {"d": math.nan}, "e": 3}
    assert json.loads(dumps(value)) == {"a": None, "b": [None, [None, 1.0]], "c": {"d": None}, "e": 3}

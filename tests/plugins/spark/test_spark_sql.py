"""``rill sql --engine spark``: one query over the runs' tables and views, in a sandbox.

Every attempt goes through the CLI (in-process, one SparkSession for the module) against one
recorded event log: an attack is refused with exit 2 and one line naming why, and leaves the log's
bytes and the files around it as they were; a query gets the rows DuckDB gets."""

from __future__ import annotations

from pathlib import Path

import hashlib
import json
import math
import os
import re
import subprocess
import sys

import pytest

from tests.replay.test_replay import FAULT_JOB


@pytest.fixture(scope="module", autouse=True)
def spark():
    from plugins.spark.options import SparkOptions
    from plugins.spark.session import spark_session

    session, _ = spark_session(SparkOptions())
    yield session
    session.stop()


def _rill(*args: str) -> None:
    from kernel.cli.main import RillGroup, main

    RillGroup._plugin_commands = None
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    assert exit_info.value.code == 0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(event log, export directory) of one run with a killed TaskExecutor (every view has rows)."""
    base = tmp_path_factory.mktemp("recorded")
    log, job = base / "rill.duckdb", base / "fault.py"
    job.write_text(FAULT_JOB)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RILL_HOME", str(base / ".rill"))
        _rill("run", "--clock", "simulated", "--set", "restart-strategy.type=fixed-delay",
              "--inject", "kill:target=taskexecutor-2,at=30s", "--quiet", "--set", f"eventlog.path={log}",
              "--set", "plugins.backpressure=sampling", str(job))
        _rill("export", "last", "--parquet", str(base / "export"), "--set", f"eventlog.path={log}")
    return log, base / "export"


def sql(cli, log, *args: str) -> tuple[int, str, str]:
    return cli("sql", "--set", f"eventlog.path={log}", *args)


def _files(*roots) -> set[str]:
    """Every file, directory and symlink under ``roots``."""
    return {os.path.join(folder, name) for root in roots for folder, dirs, files in os.walk(root)
            for name in dirs + files}


# -- attacks: each refused, nothing written ---------------------------------------------------------------

HOME = "'java.lang.System', 'getenv', 'HOME'"
PATHS = "is refused (no path-based relations, no other databases)"

WRITES_AND_COMMANDS = [
    ("INSERT INTO runs SELECT * FROM runs", "InsertIntoStatement"),
    ("INSERT OVERWRITE TABLE rill.runs SELECT * FROM rill.runs", "InsertIntoStatement"),
    ("INSERT OVERWRITE DIRECTORY '{tmp}/out' USING parquet SELECT * FROM runs", "InsertIntoDir"),
    ("INSERT OVERWRITE LOCAL DIRECTORY '{tmp}/out' SELECT 1", "InsertIntoDir"),
    ("WITH r AS (SELECT * FROM runs) INSERT INTO runs SELECT * FROM r", "InsertIntoStatement"),
    ("FROM runs INSERT INTO runs SELECT *", "InsertIntoStatement"),
    ("CREATE TABLE stolen AS SELECT * FROM runs", "CreateTableAsSelect"),
    ("CREATE TABLE stolen USING csv LOCATION '{tmp}/out' AS SELECT * FROM runs", "CreateTableAsSelect"),
    ("CREATE VIEW v AS SELECT 1", "CreateView"),
    ("CREATE TEMPORARY VIEW v USING text OPTIONS (path '/etc/hostname')", "CreateTempViewUsing"),
    ("DROP TABLE runs", "DropTable"),
    ("DROP DATABASE rill CASCADE", "DropNamespace"),
    ("ALTER TABLE runs RENAME TO gone", "RenameTable"),
    ("TRUNCATE TABLE runs", "TruncateTable"),
    ("DELETE FROM runs", "DeleteFromTable"),
    ("UPDATE runs SET status = 'forged'", "UpdateTable"),
    ("MERGE INTO runs USING runs r ON true WHEN MATCHED THEN DELETE", "MergeIntoTable"),
    ("LOAD DATA LOCAL INPATH '/etc/hostname' INTO TABLE runs", "LoadData"),
    ("SET spark.sql.runSQLOnFiles=true", "SetCommand"),
    ("RESET", "ResetCommand"),
    ("ADD JAR '{tmp}/evil.jar'", "AddJarsCommand"),
    ("ADD FILE '/etc/hostname'", "AddFilesCommand"),
    ("CREATE FUNCTION evil AS 'org.apache.hadoop.fs.FileUtil' USING JAR '{tmp}/evil.jar'", "CreateFunction"),
    ("CREATE TEMPORARY FUNCTION evil AS 'org.apache.hadoop.fs.FileUtil'", "CreateFunctionCommand"),
    ("CACHE TABLE runs", "CacheTable"),
    ("CACHE TABLE c AS SELECT * FROM runs", "CacheTableAsSelect"),
    ("CLEAR CACHE", "ClearCacheCommand"),
    ("REFRESH TABLE runs", "RefreshTable"),
    ("MSCK REPAIR TABLE runs", "RepairTable"),
    ("ANALYZE TABLE runs COMPUTE STATISTICS", "AnalyzeTable"),
    ("USE default", "SetCatalogAndNamespace"),
    ("EXECUTE IMMEDIATE 'DROP TABLE runs'", "UnresolvedExecuteImmediate"),
    ("DECLARE v INT", "CreateVariable"),
    ("SHOW TABLES", "ShowTables"),
    ("DESCRIBE runs", "DescribeRelation"),
    ("CALL system.evil()", "Call"),
    ("/* SELECT */ DROP TABLE runs", "DropTable"),
    ("-- SELECT 1\nDROP TABLE runs", "DropTable"),
    ("InSeRt InTo runs SeLeCt * FrOm runs", "InsertIntoStatement"),
]

QUERY_ATTACKS = [
    ("SELECT java_method('org.apache.hadoop.fs.FileUtil', 'symLink', '/etc/hostname', '{tmp}/link')",
     "rill sql refuses java_method(): it calls Java methods by reflection"),
    (f"SELECT reflect({HOME})", "refuses reflect(): it calls Java methods by reflection"),
    ("SELECT try_reflect('java.lang.System', 'exit', 1)", "refuses try_reflect(): it calls Java methods by reflection"),
    (f"select JAVA_METHOD({HOME})", "refuses java_method()"),
    (f"SELECT system.builtin.reflect({HOME})", "refuses reflect()"),
    (f"SELECT `reflect`({HOME})", "refuses reflect()"),
    (f"SELECT IDENTIFIER('java_method')({HOME})", "ExpressionWithUnresolvedIdentifier is refused"),
    (f"SELECT IDENTIFIER('java_' || 'method')({HOME})", "ExpressionWithUnresolvedIdentifier is refused"),
    (f"SELECT * FROM runs WHERE EXISTS (SELECT reflect({HOME}))", "refuses reflect()"),
    (f"WITH c AS (SELECT java_method({HOME}) AS x) SELECT * FROM c", "refuses java_method()"),
    (f"SELECT transform(array(1), x -> reflect({HOME}))", "refuses reflect()"),
    (f"SELECT row_number() OVER w FROM runs WINDOW w AS (ORDER BY reflect({HOME}))", "refuses reflect()"),
    ("SELECT * FROM text.`/etc/hostname`", f"`text`.`/etc/hostname` {PATHS}"),
    ("SELECT * FROM csv.`/etc/passwd`", f"`csv`.`/etc/passwd` {PATHS}"),
    ("SELECT * FROM json.`/etc/hostname`", f"`json`.`/etc/hostname` {PATHS}"),
    ("SELECT * FROM binaryFile.`/etc/hostname`", f"`binaryFile`.`/etc/hostname` {PATHS}"),
    ("SELECT * FROM parquet.`{export}`", PATHS),
    ("SELECT * FROM TEXT.`/etc/hostname`", f"`TEXT`.`/etc/hostname` {PATHS}"),
    ("SELECT * FROM IDENTIFIER('text.`/etc/hostname`')", f"`text`.`/etc/hostname` {PATHS}"),
    ("SELECT * FROM IDENTIFIER('te' || 'xt.`/etc/hostname`')", "PlanWithUnresolvedIdentifier is refused"),
    ("SELECT * FROM runs JOIN text.`/etc/hostname` ON true", f"`text`.`/etc/hostname` {PATHS}"),
    ("SELECT (SELECT max(value) FROM text.`/etc/hostname`)", f"`text`.`/etc/hostname` {PATHS}"),
    ("SELECT * FROM spark_catalog.default.secrets", f"`spark_catalog`.`default`.`secrets` {PATHS}"),
    ("SELECT * FROM global_temp.secrets", f"`global_temp`.`secrets` {PATHS}"),
    ("SELECT * FROM python_worker_logs()", "refuses python_worker_logs(): it reads the Python workers' log files"),
    ("SELECT TRANSFORM(run_id) USING 'touch {tmp}/pwned' AS (x) FROM runs",
     "ScriptTransformation is refused (TRANSFORM ... USING runs a program)"),
    ("SELECT * FROM runs VERSION AS OF 1", "RelationTimeTravel is refused"),
    ("SELECT * FROM runs WITH ('path' = '/etc')", "rill sql reads rill's tables as they are: options on `runs` are refused"),
    ("SELECT 1; DROP TABLE runs", "give one SQL statement at a time"),
    ("SELECT ';' AS x; DROP TABLE runs", "give one SQL statement at a time"),
    ("sElEcT 1 /* ; */ ;\n dRoP tAbLe runs;", "give one SQL statement at a time"),
]

ATTACKS = (
    [(query, f"rill sql is read-only: {name} statements are refused (use SELECT)")
     for query, name in WRITES_AND_COMMANDS]
    + [("BEGIN DROP TABLE runs; END", "rill sql is read-only: CompoundBody statements are refused")]
    + [(f"EXPLAIN {query}", f"rill sql is read-only: EXPLAIN of {name} is refused (EXPLAIN a query)")
       for query, name in WRITES_AND_COMMANDS if not query.startswith(("/*", "--"))]
    + [("EXPLAIN EXTENDED /* SELECT */ DROP TABLE runs", "EXPLAIN of DropTable is refused"),
       ("EXPLAIN CODEGEN INSERT OVERWRITE DIRECTORY '{tmp}/out' USING csv SELECT 1", "EXPLAIN of InsertIntoDir"),
       ("EXPLAIN FORMATTED CACHE TABLE runs", "EXPLAIN of CacheTable is refused"),
       ("EXPLAIN COST SET spark.sql.runSQLOnFiles=true", "EXPLAIN of SetCommand is refused")]
    + QUERY_ATTACKS
    + [(f"EXPLAIN {query}", why) for query, why in QUERY_ATTACKS]
)


@pytest.mark.parametrize("attack, why", ATTACKS)
def test_an_attack_is_refused_in_one_line_and_changes_nothing(cli, recorded, tmp_path, attack, why):
    log, export = recorded
    query = attack.replace("{tmp}", str(tmp_path)).replace("{export}", str(export))
    digest = hashlib.sha256(log.read_bytes()).hexdigest()
    before = _files(tmp_path, log.parent)
    code, out, err = sql(cli, log, "--engine", "spark", "--", query)
    assert (code, out) == (2, "")
    assert err.startswith("rill: error: ") and err.count("\n") == 1 and why in err, err
    assert hashlib.sha256(log.read_bytes()).hexdigest() == digest
    assert _files(tmp_path, log.parent) == before




def test_a_failed_query_s_error_is_not_hidden_by_the_database_it_cannot_drop(spark, tmp_path):
    """A query stopped at its memory bound may leave Spark's JVM unable to drop the database
    rill registered the runs in: the query's error is what the user is told, not the drop's
    (which ended ``rill sql`` in a traceback). A drop that fails after a query that succeeded
    still fails."""
    from plugins.spark.sql import DATABASE, _database

    class Stopped(Exception):
        pass

    with pytest.raises(Stopped):
        with _database(spark, str(tmp_path / "catalog")):
            spark.sql(f"DROP DATABASE {DATABASE} CASCADE")  # what the worn-out JVM's drop will not find
            raise Stopped("the query's own error")
    with pytest.raises(Exception, match=DATABASE):
        with _database(spark, str(tmp_path / "again")):
            spark.sql(f"DROP DATABASE {DATABASE} CASCADE")
    assert not spark.catalog.databaseExists(DATABASE)


@pytest.mark.parametrize("query, why", [
    ("SELECT nothing FROM task_metrics",
     "SQL error: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `nothing` "
     "cannot be resolved."),
    ("SELEC 1", "SQL error: [PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'."),
    ("SELECT 1 / 0", "SQL error: [DIVIDE_BY_ZERO] Division by zero."),
    (" ; ", "no SQL statement given"),
])
def test_a_bad_query_is_one_clear_line(cli, recorded, query, why):
    log, _ = recorded
    code, out, err = sql(cli, log, "--engine", "spark", query)
    assert (code, out) == (2, "") and err.startswith(f"rill: error: {why}") and err.count("\n") == 1, err


def test_a_directory_without_runs_is_refused(cli, recorded, tmp_path):
    log, _ = recorded
    code, _, err = sql(cli, log, "--engine", "spark", "--parquet", str(tmp_path), "SELECT 1")
    assert code == 2 and f"rill: error: {str(tmp_path)!r} holds no exported run (no run.parquet" in err

# -- queries: the rows DuckDB gives ------------------------------------------------------------------------


def _normalised(rows: list[dict]) -> list[str]:
    def value(v):
        if isinstance(v, float):
            return None if math.isnan(v) else round(v, 6)
        return v

    return sorted(json.dumps([value(v) for v in row.values()], default=str) for row in rows)


QUERIES = [
    "SELECT vertex_name, subtask, count(*) AS samples, sum(records_in) AS records FROM task_metrics "
    "GROUP BY vertex_name, subtask",
    "SELECT r.job_name, count(*) AS n FROM runs r JOIN ev_execution_state_changed e ON e.run_id = r.run_id "
    "WHERE e.new_state = 'RUNNING' GROUP BY r.job_name",
    "WITH restarts AS (SELECT run_id, count(*) AS n FROM rill.ev_tasks_restarted GROUP BY run_id) "
    "SELECT r.status, coalesce(x.n, 0) AS restarts FROM rill.runs r LEFT JOIN restarts x ON x.run_id = r.run_id",
    "SELECT vertex_name, subtask, attempt, state, row_number() OVER (PARTITION BY vertex_name, subtask "
    "ORDER BY start_s, attempt) AS step FROM task_timeline",
    "SELECT fault_kind, vertex_name, restart, restart_number FROM failures",
    "SELECT sender, target, requests, sender_timeouts FROM heartbeats",
    "SELECT level, count(*) AS n FROM backpressure GROUP BY level",
    "SELECT vertex_name, request_id, subtask, attempt, started_s, t_s, samples, back_pressured_samples, ratio, level, "
    "vertex_ratio, vertex_level FROM backpressure_sampling",
    "SELECT count(*) AS n, max(watermark) AS wm FROM watermarks WHERE direction = 'output'",
    "SELECT allocation_id IS NOT NULL AS allocated, release_reason FROM slots",
    "SELECT kind, count(*) AS n FROM events WHERE kind LIKE 'job%' GROUP BY kind",
    "select COUNT(*) AS n from RUNS -- ; DROP TABLE runs",
    "SELECT 'DROP TABLE runs; INSERT INTO runs' AS text, count(*) AS n FROM ev_run_started /* ; DELETE */",
]


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_gives_the_rows_duckdb_gives(cli, recorded, query):
    log, _ = recorded
    answers = []
    for engine in ("duckdb", "spark"):
        code, out, err = sql(cli, log, "--engine", engine, "--format", "json", query)
        assert code == 0, err
        answers.append(_normalised(json.loads(out)))
    assert answers[0] and answers[0] == answers[1]


def test_explain_of_a_query_shows_the_plan_over_the_runs_files(cli, recorded):
    log, export = recorded
    code, out, err = sql(cli, log, "--engine", "spark", "--parquet", os.path.relpath(export),
                         "EXPLAIN EXTENDED SELECT count(*) FROM ev_run_started")
    assert code == 0, err
    assert "== Analyzed Logical Plan ==" in out and "== Physical Plan ==" in out
    assert re.search(rf"FileScan parquet spark_catalog.rill.ev_run_started.*{re.escape(str(export))}", out)


# -- the same tables and views on every path ------------------------------------------------------------

VIEW_NAMES = ["task_metrics", "backpressure", "watermarks", "heartbeats", "task_timeline", "slots", "failures",
              "backpressure_sampling"]


def test_every_table_and_view_reads_unqualified_on_every_path(cli, recorded):
    import duckdb

    log, export = recorded
    with duckdb.connect(str(log), read_only=True) as con:
        tables = [name for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'rill' "
            "AND (starts_with(table_name, 'ev_') OR table_name IN ('runs', 'events')) ORDER BY 1").fetchall()]
    assert len(tables) > 40 and {"runs", "events", "ev_fault_injected"} <= set(tables)
    query = " UNION ALL ".join(f"SELECT '{name}' AS name, count(*) AS n FROM {name}" for name in tables + VIEW_NAMES)
    answers = []
    for path in (("--engine", "duckdb"), ("--engine", "duckdb", "--parquet", str(export)),
                 ("--engine", "spark"), ("--engine", "spark", "--parquet", str(export))):
        code, out, err = sql(cli, log, *path, "--format", "json", query)
        assert code == 0, (path, err)
        answers.append(dict((row["name"], row["n"]) for row in json.loads(out)))
    counts = answers[0]
    assert all(answer == counts for answer in answers[1:])
    assert counts["runs"] == 1 and counts["ev_run_started"] == 1 and counts["ev_fault_injected"] == 1
    assert counts["events"] == sum(n for name, n in counts.items() if name.startswith("ev_"))
    assert all(counts[view] > 0 for view in VIEW_NAMES)


def test_the_documented_example_gives_the_same_rows_on_all_three_paths(cli, recorded):
    log, export = recorded
    example = "SELECT kind, count(*) FROM events GROUP BY kind"
    page = Path(__file__).resolve().parents[3] / "docs" / "eventlog-and-sql.md"
    assert f'rill sql "{example}"' in page.read_text()
    answers = []
    for path in (("--engine", "duckdb"), ("--engine", "duckdb", "--parquet", str(export)), ("--engine", "spark")):
        code, out, err = sql(cli, log, *path, "--format", "json", example)
        assert code == 0, (path, err)
        answers.append(sorted(tuple(row.values()) for row in json.loads(out)))
    assert answers[0] == answers[1] == answers[2]
    assert ("run_started", 1) in answers[0] and ("fault_injected", 1) in answers[0] and len(answers[0]) > 20


# -- the sandbox's own lines ------------------------------------------------------------------------------


def test_the_sandbox_narrows_its_own_session_and_leaves_the_shared_one_alone(spark, cli, recorded):
    from plugins.spark.sandbox import SqlSandbox

    sandbox = SqlSandbox(spark)
    assert set(sandbox.refused) == {"java_method", "reflect", "try_reflect", "from_protobuf", "to_protobuf",
                                    "from_avro", "to_avro", "schema_of_avro", "python_worker_logs"}
    assert sandbox.session.conf.get("spark.sql.runSQLOnFiles") == "false"
    with pytest.raises(Exception, match="UNRESOLVED_ROUTINE"):
        sandbox.session.sql("SELECT reflect('java.lang.String', 'valueOf', 7)")
    log, _ = recorded
    code, out, err = sql(cli, log, "--engine", "spark", "SELECT count(*) AS n FROM runs")
    assert code == 0 and out.split() == ["n", "1"], err
    # the session the spark backend runs jobs in is as it was: settings, functions, no database rill
    assert spark.conf.get("spark.sql.runSQLOnFiles") == "true"
    assert spark.sql("SELECT reflect('java.lang.String', 'valueOf', 7)").collect()[0][0] == "7"
    assert not spark.catalog.databaseExists("rill")



def test_a_database_rill_already_in_the_catalog_is_refused_not_overwritten(spark, cli, recorded, tmp_path):
    log, _ = recorded
    spark.sql(f"CREATE DATABASE rill LOCATION '{tmp_path / 'theirs'}'")
    try:
        spark.sql("CREATE TABLE rill.runs (mine STRING) USING parquet")
        code, _, err = sql(cli, log, "--engine", "spark", "SELECT count(*) FROM runs")
        assert code == 2 and "rill: error: Spark's catalog already has a database 'rill'" in err
        assert spark.table("rill.runs").columns == ["mine"]
    finally:
        spark.sql("DROP DATABASE rill CASCADE")

def test_the_analysed_plan_reads_only_the_runs_files_and_calls_no_user_code(spark, tmp_path):
    from kernel.errors import UsageError
    from kernel.sqlbounds import QueryBounds
    from plugins.spark.sandbox import SqlSandbox
    from replay.sqlresult import TerminalResult

    (tmp_path / "runs").mkdir()
    spark.range(3).write.parquet(str(tmp_path / "runs" / "numbers.parquet"))
    spark.range(3).write.parquet(str(tmp_path / "elsewhere.parquet"))
    sandbox, root = SqlSandbox(spark), f"file:{tmp_path}/runs"
    sandbox.session.read.parquet(str(tmp_path / "runs" / "numbers.parquet")).createOrReplaceTempView("numbers")
    bounds = QueryBounds(60, 1 << 30, 10)
    result = TerminalResult(bounds)
    sandbox.run(sandbox.analyse(sandbox.parse("SELECT sum(id) AS s FROM numbers"), root), result, bounds)
    assert (result.names, result.held, result.more) == (["s"], [(3,)], False)
    sandbox.session.read.parquet(str(tmp_path / "elsewhere.parquet")).createOrReplaceTempView("elsewhere")
    sandbox.session.read.text("/etc/hostname").createOrReplaceTempView("hostname")
    sandbox.session.udf.register("shout", lambda text: text.upper())
    for query, why in [
        ("SELECT * FROM numbers JOIN elsewhere USING (id)", f"file:{tmp_path}/elsewhere.parquet is refused"),
        ("SELECT * FROM hostname", "file:/etc/hostname is refused (not the runs' files)"),
        ("SELECT shout(CAST(id AS STRING)) FROM numbers", "rill sql refuses user-defined functions: shout() is one"),
        ("SELECT id FROM numbers WHERE id IN (SELECT shout('1'))", "shout() is one"),
    ]:
        with pytest.raises(UsageError) as refused:
            sandbox.analyse(sandbox.parse(query), root)
        assert why in str(refused.value)
    # reflection however it got into a plan (here: analysed by a session that still has it)
    state = spark._jsparkSession.sessionState()
    skip = spark._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
    plan = state.executePlan(state.sqlParser().parsePlan("SELECT try_reflect('java.lang.System', 'exit', 1)"),
                             skip).analyzed()
    with pytest.raises(UsageError, match=r"refuses try_reflect\(\): it calls Java methods by reflection"):
        sandbox.check(plan, root)


def test_spark_says_one_line_without_debug(recorded, tmp_path):
    log, _ = recorded
    result = subprocess.run(
        [sys.executable, "-m", "kernel.cli.main", "sql", "--engine", "spark", "--set", "spark.master=local[1]",
         "--set", f"eventlog.path={log}", "SELECT CAST(job_name AS INT) FROM runs"],
        capture_output=True, text=True, env={**os.environ, "RILL_HOME": str(tmp_path / ".rill")}, cwd=tmp_path,
        timeout=300)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("rill: error: SQL error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "CAST_INVALID_INPUT" in result.stderr and "'counting'" in result.stderr


def test_a_plugins_view_reads_on_spark_as_on_duckdb(cli, tmp_path, monkeypatch):
    from tests.kernel.test_views import Demo, record_without_plugin

    demo = Demo(tmp_path, monkeypatch)
    record_without_plugin("before the plugin")
    demo.install()
    for engine in ("duckdb", "spark"):  # no run recorded its events: read as empty, with its columns
        assert cli("sql", "--engine", engine, "--format", "csv", "SELECT count(*) AS n FROM demo_ticks") == \
            (0, "n\n0\n", "")
    demo.record("ticking", [2, 3, 4])
    for engine in ("duckdb", "spark"):
        assert cli("sql", "--engine", engine, "--format", "csv", "SELECT job_name, ticks, total FROM demo_ticks") == \
            (0, "job_name,ticks,total\nticking,3,9\n", "")
    code, out, err = cli("sql", "--engine", "spark", "SELECT * FROM demo_lost_too")  # reads a kind nobody registers
    assert (code, out, err) == (2, "", "rill: error: SQL error: [TABLE_OR_VIEW_NOT_FOUND] The table or view "
                                "`demo_lost_too` cannot be found. Verify the spelling and correctness of the schema "
                                "and catalog.\n")

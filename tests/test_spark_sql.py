"""``rill sql --engine spark``: one query over the runs' tables and views, in a sandbox.

Every attempt goes through the CLI (in-process, one SparkSession for the module) against one
recorded event log: an attack is refused with exit 2 and one line naming why, and leaves the log's
bytes and the files around it as they were; a query gets the rows DuckDB gets."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys

import pytest

from tests.test_replay import FAULT_JOB


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
        _rill("run", str(job), "--clock", "simulated", "--set", "restart-strategy.type=fixed-delay",
              "--inject", "kill:target=taskexecutor-2,at=30s", "--quiet", "--set", f"eventlog.path={log}")
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
    (f"SELECT java_method('org.apache.hadoop.fs.FileUtil', 'symLink', '/etc/hostname', '{{tmp}}/link')",
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
    ("SELECT 1; DROP TABLE runs", "give one SQL statement at a time"),
    ("SELECT ';' AS x; DROP TABLE runs", "give one SQL statement at a time"),
    ("sElEcT 1 /* ; */ ;\n dRoP tAbLe runs;", "give one SQL statement at a time"),
]

ATTACKS = (
    [(query, f"rill sql is read-only: {name} statements are refused (use SELECT)") for query, name in WRITES_AND_COMMANDS]
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
    code, out, err = sql(cli, log, "--engine", "spark", "--parquet", str(export),
                         "EXPLAIN EXTENDED SELECT count(*) FROM ev_run_started")
    assert code == 0, err
    assert "== Analyzed Logical Plan ==" in out and "== Physical Plan ==" in out
    assert re.search(rf"FileScan parquet spark_catalog.rill.ev_run_started.*{re.escape(str(export))}", out)

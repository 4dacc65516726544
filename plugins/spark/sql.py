"""``rill sql --engine spark``: the same tables and views, in Spark SQL over Parquet.

The event log (or a directory ``rill export`` wrote, on any file system Spark reads) is
registered in a database ``rill`` of the session catalog: a view ``rill.ev_<kind>`` over the
Parquet files of each event kind the query reads (directly or through a view; an empty one,
with the event's columns, for kinds never recorded) and ``rill.runs``; the views of
:mod:`replay.views` it reads are temporary views over them. Only one read statement runs; the
database is dropped afterwards.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

from kernel.errors import UsageError
from kernel.session import Session

DATABASE = "rill"
SPARK_TYPES = {"BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "VARCHAR": "STRING", "BOOLEAN": "BOOLEAN", "BLOB": "BINARY"}


class SparkSqlEngine:
    def query(self, session: Session, query: str, parquet: str | None) -> tuple[list[str], list[tuple]]:
        from plugins.spark.options import SparkOptions
        from plugins.spark.session import spark_session

        with tempfile.TemporaryDirectory(prefix="rill-spark-sql-") as scratch:
            if parquet is None:
                parquet = _export_log(session, os.path.join(scratch, "log"))
            spark, created = spark_session(session.config.section(SparkOptions))
            try:
                created_db = _register(spark, parquet, scratch, session, query)
                try:
                    return _run(spark, query)
                finally:
                    if created_db:
                        spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")
            finally:
                if created:
                    spark.stop()


def _export_log(session: Session, directory: str) -> str:
    """Every recorded run of the event log as one exported directory."""
    from replay.export import write_parquet
    from replay.store import read_log

    with read_log(session) as con:
        write_parquet(con, directory, None, views=False)
    return directory


def _glob(spark: Any, pattern: str) -> list[str]:
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(pattern)
    statuses = path.getFileSystem(spark._jsc.hadoopConfiguration()).globStatus(path)
    return sorted(str(status.getPath().toString()) for status in (statuses or []))


def _register(spark: Any, directory: str, scratch: str, session: Session, query: str) -> bool:
    """The tables and views ``query`` reads; True when the ``rill`` database was created here."""
    from kernel.events import tag_of
    from plugins.eventlog.schema import table_for
    from replay.views import view_statements

    single = _glob(spark, f"{directory.rstrip('/')}/run.parquet")
    prefix = directory.rstrip("/") if single else f"{directory.rstrip('/')}/*"
    if not _glob(spark, f"{prefix}/run.parquet"):
        raise UsageError(f"{directory!r} holds no exported run (no run.parquet; write one with "
                         "`rill export RUN... --parquet DIR`)")
    recorded = {path.rsplit("/", 1)[1][: -len(".parquet")] for path in _glob(spark, f"{prefix}/events/*.parquet")}
    types = {tag_of(event_type): event_type for event_type in session.events.types()}
    views = dict(view_statements(set(types)))
    view_names, kinds = _needed(query, views, set(types) | recorded)
    existed = spark.catalog.databaseExists(DATABASE)
    location = os.path.join(scratch, "catalog").replace("'", "\\'")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE} LOCATION '{location}'")
    spark.conf.set("spark.sql.parquet.mergeSchema", "true")
    spark.sql(f"CREATE OR REPLACE VIEW {DATABASE}.runs AS SELECT * FROM parquet.`{prefix}/run.parquet`")
    for kind in sorted(kinds):
        if kind in recorded:
            select = f"SELECT * FROM parquet.`{prefix}/events/{kind}.parquet`"
        else:  # never recorded: no rows, the event's columns
            select = "SELECT CAST(NULL AS STRING) AS run_id, " + ", ".join(
                f"CAST(NULL AS {SPARK_TYPES[c.sql_type]}) AS `{c.name}`" for c in table_for(types[kind]).columns
            ) + " WHERE false"
        spark.sql(f"CREATE OR REPLACE VIEW {DATABASE}.ev_{kind} AS {select}")
    for name, select in views.items():
        if name in view_names:
            spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS {select}")
    return not existed


def _needed(query: str, views: dict[str, str], kinds: set[str]) -> tuple[set[str], set[str]]:
    """The views and event kinds a query names, directly or through the views it reads
    (registering only those keeps Spark from reading every table's Parquet footers)."""
    view_names: set[str] = set()
    needed: set[str] = set()
    texts = [query]
    while texts:
        text = texts.pop()
        needed |= {kind for kind in re.findall(r"\bev_(\w+)", text) if kind in kinds}
        for name in views:
            if name not in view_names and re.search(rf"\b{name}\b", text):
                view_names.add(name)
                texts.append(views[name])
    return view_names, needed


def _check_read_only(spark: Any, query: str) -> None:
    """One read statement (a query, or EXPLAIN of one), judged by Spark's own parser."""
    jvm = spark._jvm
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query)
    except Exception as exc:
        raise UsageError(f"SQL error: {_first_line(exc)}") from None
    while plan.getClass().getSimpleName() == "UnresolvedWith":
        plan = plan.child()
    name = plan.getClass().getSimpleName()
    command = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command")
    if (command.isInstance(plan) and name != "ExplainCommand") or name.startswith("Insert"):
        raise UsageError(f"rill sql is read-only: {name} statements are refused (use SELECT)")


def _run(spark: Any, query: str) -> tuple[list[str], list[tuple]]:
    if not query.strip().rstrip(";").strip():
        raise UsageError("no SQL statement given")
    _check_read_only(spark, query)
    try:
        frame = spark.sql(query)
        return list(frame.columns), [tuple(row) for row in frame.collect()]
    except Exception as exc:
        raise UsageError(f"SQL error: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

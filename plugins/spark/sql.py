"""``rill sql --engine spark``: the same tables and views, in Spark SQL over Parquet.

The event log (or a directory ``rill export`` wrote, on any file system Spark reads) is
registered in a database ``rill`` of the session catalog, the current database of the query's
session (so every name reads unqualified too): a table ``rill.ev_<kind>`` over the Parquet files
of each event kind the query reads (directly or through a view; an empty view, with the event's
columns, for kinds never recorded), ``rill.runs`` and ``rill.events``; the registered views it
reads (:mod:`kernel.views`) are temporary views over them. Everything comes with the
:class:`~kernel.contracts.sql.SqlQuery`: the event tables, the views, and the export of the
event log when no ``--parquet`` directory is given. The one query runs in a sandbox
(:mod:`plugins.spark.sandbox`); the database is dropped afterwards.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
import uuid
from contextlib import contextmanager
from typing import Any, Iterator

from kernel.contracts.sql import SqlQuery, local_path
from kernel.errors import RillError, UsageError
from kernel.sqlbounds import size
from kernel.eventtables import EventTable
from plugins.spark.sandbox import DATABASE

SPARK_TYPES = {"BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "VARCHAR": "STRING", "BOOLEAN": "BOOLEAN", "BLOB": "BINARY"}


#: the least memory a Spark driver starts with (Spark refuses a heap under 450 MiB)
MIN_DRIVER_MEMORY = 512 << 20
#: the exit code of a Spark JVM that ran out of memory (Spark's SparkExitCode.OOM)
OOM_EXIT = 52
#: how long a JVM whose gateway went away is given to end (and tell why) before it is killed
JVM_EXIT_WAIT_S = 10.0


class SparkSqlEngine:
    def query(self, request: SqlQuery) -> None:
        from plugins.spark.options import SparkOptions
        from plugins.spark.session import debugging, jvm_process, spark_session

        if not request.text.strip().rstrip(";").strip():
            raise UsageError("no SQL statement given")
        bounds = request.bounds
        if bounds.memory_bytes < MIN_DRIVER_MEMORY:
            raise UsageError(f"rill sql --engine spark runs the query in a Spark driver of sql.memory-limit "
                             f"({size(bounds.memory_bytes)}), and Spark needs at least {size(MIN_DRIVER_MEMORY)}: "
                             "raise sql.memory-limit")
        spark, created = spark_session(request.config.section(SparkOptions), quiet=True,
                                       settings=driver_settings(bounds.memory_bytes))
        jvm = jvm_process() if created else None
        with _quiet_gateway(jvm is not None and not debugging()):
            try:
                _bounded(spark, request, jvm)
            finally:
                if created:
                    _stop(spark, jvm)


def _stop(spark: Any, jvm: Any) -> None:
    """Stop the Spark session rill started for the query; its JVM, when it has ended or no longer
    answers (killed when the time was up, out of memory), is killed and waited for instead."""
    if jvm is None:
        spark.stop()
        return
    if jvm.poll() is None:
        try:
            spark.stop()
            return
        except Exception as exc:
            if not _gateway_lost(exc):
                raise
    jvm.kill()
    jvm.wait()


def _gateway_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised in handling) is Py4J losing its connection to the JVM."""
    from py4j.protocol import Py4JNetworkError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (Py4JNetworkError, ConnectionError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _context_stopped(spark: Any) -> bool:
    """Whether the SparkContext has stopped (or can no longer be asked): the JVM ending under the
    query, its shutdown hook stopping the context before the gateway goes, whatever Spark then
    said of the cancelled jobs."""
    try:
        return bool(spark.sparkContext._jsc.sc().isStopped())
    except Exception:  # the gateway went while asking
        return True


def _exit_code(jvm: Any) -> int | None:
    """The exit code of a JVM whose gateway went away, once it has ended (None: still running
    after :data:`JVM_EXIT_WAIT_S`)."""
    try:
        return jvm.wait(timeout=JVM_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        return None


@contextmanager
def _quiet_gateway(quiet: bool) -> Iterator[None]:
    """Keep Py4J's tracebacks off the terminal when the JVM rill started ends under a query
    (killed when the time is up, or out of memory): Py4J logs them on the root logger, and the
    query's error is one line."""
    if not quiet:
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def driver_settings(memory_bytes: int) -> dict[str, str]:
    """The settings of a Spark driver rill starts for a query: a heap of the memory limit, and
    at most a quarter of it for the results of a job (a clean error before the heap runs out)."""
    return {"spark.driver.memory": f"{memory_bytes >> 20}m",
            "spark.driver.maxResultSize": f"{max(1, memory_bytes >> 22)}m"}


def _bounded(spark: Any, request: SqlQuery, jvm: Any) -> None:
    """Answer the query with its Spark jobs tagged and cancelled when the time is up (every job,
    when rill started the JVM ``jvm`` for the query); the work of the driver between jobs (a
    recursive CTE's iterations) cannot be cancelled, so a JVM rill started that has not stopped
    within the grace period is killed. A JVM that died of lack of memory is the memory bound; a
    query that lost the JVM (its gateway, or its SparkContext shut down under it) says how it ended.
    The job tag is removed afterwards from a session rill did not start (one it started is
    stopped)."""
    context = spark.sparkContext
    tag = f"rill-sql-{uuid.uuid4().hex}"
    bounds = request.bounds
    context.addJobTag(tag)
    context.setInterruptOnCancel(True)
    try:
        stop = context.cancelAllJobs if jvm is not None else lambda: context.cancelJobsWithTag(tag)
        with bounds.watch(stop, last_resort=jvm.kill if jvm is not None else None):
            try:
                _answer(spark, request)
            except Exception as exc:
                if jvm is None or not (_gateway_lost(exc) or _context_stopped(spark)):
                    raise
                code = _exit_code(jvm)
                if code == OOM_EXIT:
                    raise bounds.out_of_memory() from None
                ended = "stopped answering" if code is None else f"ended (exit code {code})"
                raise RillError(f"Spark's JVM {ended} while answering the query") from None
    finally:
        if jvm is None:
            context.setInterruptOnCancel(False)
            context.removeJobTag(tag)


def _answer(spark: Any, request: SqlQuery) -> None:
    from plugins.spark.sandbox import SqlSandbox, error_line

    sandbox = SqlSandbox(spark)
    statement = sandbox.parse(request.text)  # before anything is exported, registered or read
    with tempfile.TemporaryDirectory(prefix="rill-spark-sql-") as scratch:
        exported = request.parquet
        if exported is None:
            exported = os.path.join(scratch, "log")
            request.export_log(exported)
        elif local_path(exported) is not None:
            request.export_files(local_path(exported))  # every file checked before Spark lists or reads any
        root = _qualified(sandbox.session, exported)
        prefix = _run_prefix(sandbox.session, _literal(root), exported)
        if local_path(exported) is None:
            _check_listing(sandbox.session, prefix)
        with _database(sandbox.session, os.path.join(scratch, "catalog")):
            try:
                _register(sandbox.session, prefix, request)
            except Exception as exc:  # an unreadable file: what Spark says about it
                raise UsageError(f"cannot read the runs in {exported!r}: {error_line(exc)}") from None
            sandbox.run(sandbox.analyse(statement, root), request.result, request.bounds)


@contextmanager
def _database(spark: Any, location: str) -> Iterator[None]:
    """The database ``rill``, the session's current one while the query runs, dropped afterwards
    (when the query failed, a failure to drop it does not hide the query's error)."""
    if spark.catalog.databaseExists(DATABASE):
        raise UsageError(f"Spark's catalog already has a database {DATABASE!r} (rill sql --engine spark "
                         "registers the runs there)")
    spark.sql(f"CREATE DATABASE {DATABASE} LOCATION '{_quoted(location)}'")
    answered = False
    try:
        spark.catalog.setCurrentDatabase(DATABASE)
        yield
        answered = True
    finally:
        try:
            spark.sql(f"DROP DATABASE {DATABASE} CASCADE")
        except Exception:
            if answered:  # else the query's own error is the one to report (a JVM it wore out drops nothing)
                raise


def _quoted(text: str) -> str:
    """``text`` inside a Spark SQL string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _qualified(spark: Any, directory: str) -> str:
    """``directory`` as a fully qualified Hadoop path (``file:/abs/dir``, ``hdfs://nn/dir``); a local
    relative one from rill's working directory (the JVM's may be another)."""
    local = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", directory) is None
    path = spark._jvm.org.apache.hadoop.fs.Path(os.path.abspath(directory) if local else directory)
    return str(path.getFileSystem(spark._jsc.hadoopConfiguration()).makeQualified(path).toString()).rstrip("/")


def _literal(path: str) -> str:
    """``path`` as a Hadoop glob pattern matching only itself: a directory named ``exp*`` or
    ``runs[1]`` is that directory, not its siblings ``export`` or ``runs1``."""
    return re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


def _glob(spark: Any, pattern: str) -> list[str]:
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(pattern)
    statuses = path.getFileSystem(spark._jsc.hadoopConfiguration()).globStatus(path)
    return sorted(str(status.getPath().toString()) for status in (statuses or []))


def _run_prefix(spark: Any, root: str, directory: str) -> str:
    """The glob prefix of the runs in an export (``root/*``, or ``root`` for one run; ``root`` a
    pattern, :func:`_literal`)."""
    prefix = root if _glob(spark, f"{root}/run.parquet") else f"{root}/*"
    if not _glob(spark, f"{prefix}/run.parquet"):
        raise UsageError(f"{directory!r} holds no exported run (no run.parquet; write one with "
                         "`rill export RUN... --parquet DIR`)")
    return prefix


def _check_listing(spark: Any, prefix: str) -> None:
    """On a file system other than the local one (whose files :mod:`replay.exported` checks),
    what Hadoop lists for the export must be a directory per run holding files."""
    jvm = spark._jvm
    configuration = spark._jsc.hadoopConfiguration()
    for pattern, directory in ((prefix, True), (f"{prefix}/run.parquet", False),
                               (f"{prefix}/events/*.parquet", False)):
        path = jvm.org.apache.hadoop.fs.Path(pattern)
        for status in path.getFileSystem(configuration).globStatus(path) or []:
            if status.isSymlink() or (status.isDirectory() if not directory else not status.isDirectory()):
                raise UsageError(f"{status.getPath().toString()} is not a {'directory' if directory else 'file'} "
                                 "`rill export` wrote: only its regular files are read")


def _register(spark: Any, prefix: str, request: SqlQuery) -> None:
    """The tables and views the query reads, over the runs under ``prefix``: a view reading an
    event kind neither recorded nor registered is left out (:meth:`ViewRegistry.readable`)."""
    recorded = {path.rsplit("/", 1)[1][: -len(".parquet")] for path in _glob(spark, f"{prefix}/events/*.parquet")}
    tables = request.tables
    readable = set(tables) | recorded
    views = {view.name: view.select for view in request.views.readable(readable)}
    view_names, kinds, events = _needed(request.text, views, readable)
    if events:
        kinds |= recorded
    _table(spark, "runs", f"{prefix}/run.parquet", None)
    fields = {}
    for kind in sorted(kinds):
        columns = _columns(tables[kind]) if kind in tables else None
        if kind in recorded:
            _table(spark, f"ev_{kind}", f"{prefix}/events/{kind}.parquet", columns)
        else:  # never recorded: no rows, the event's columns
            nulls = ", ".join(f"CAST(NULL AS {sql_type}) AS `{name}`" for name, sql_type in columns)
            spark.sql(f"CREATE VIEW {DATABASE}.ev_{kind} AS SELECT {nulls} WHERE false")
        fields[kind] = [name for name, _ in columns] if columns else spark.table(f"{DATABASE}.ev_{kind}").columns
    if events:
        _events_view(spark, {kind: fields[kind] for kind in sorted(recorded)})
    for name, select in views.items():
        if name in view_names:
            spark.sql(f"CREATE TEMPORARY VIEW {name} AS {select}")


def _columns(table: EventTable) -> list[tuple[str, str]]:
    """(name, Spark type) of an event table's columns."""
    return [("run_id", "STRING")] + [(column.name, SPARK_TYPES[column.sql_type]) for column in table.columns]


def _table(spark: Any, name: str, pattern: str, columns: list[tuple[str, str]] | None) -> None:
    """An external table over the Parquet files ``pattern`` matches. Its columns are declared when
    known, so that no Spark job reads the files' footers to infer them (files written before a
    column existed read it as NULL); else inferred, merged from every file."""
    path = _quoted(pattern)
    if columns is None:
        spark.sql(f"CREATE TABLE {DATABASE}.{name} USING parquet OPTIONS (path '{path}', mergeSchema 'true')")
    else:
        declared = ", ".join(f"`{column}` {sql_type}" for column, sql_type in columns)
        spark.sql(f"CREATE TABLE {DATABASE}.{name} ({declared}) USING parquet OPTIONS (path '{path}')")


def _events_view(spark: Any, columns: dict[str, list[str]]) -> None:
    """``rill.events``: every event as (run_id, seq, time, kind, payload JSON), as in the log."""
    parts = []
    for kind, names in columns.items():
        fields = [name for name in names if name not in ("run_id", "seq", "time")]
        packed = ", ".join(f"'{name}', `{name}`" for name in fields)
        payload = f"to_json(named_struct({packed}), map('ignoreNullFields', 'false'))" if fields else "'{}'"
        parts.append(f"SELECT run_id, seq, time, '{kind}' AS kind, {payload} AS payload FROM {DATABASE}.ev_{kind}")
    if not parts:
        parts.append("SELECT CAST(NULL AS STRING) AS run_id, CAST(NULL AS BIGINT) AS seq, CAST(NULL AS BIGINT) AS time,"
                     " CAST(NULL AS STRING) AS kind, CAST(NULL AS STRING) AS payload WHERE false")
    spark.sql(f"CREATE VIEW {DATABASE}.events AS " + " UNION ALL ".join(parts))


def _needed(query: str, views: dict[str, str], kinds: set[str]) -> tuple[set[str], set[str], bool]:
    """The views, event kinds and whether ``events`` a query names, directly or through the views
    it reads (registering only those keeps Spark from reading every table's Parquet footers)."""
    view_names: set[str] = set()
    needed: set[str] = set()
    texts = [query]
    while texts:
        text = texts.pop()
        needed |= {kind.lower() for kind in re.findall(r"\bev_(\w+)", text, re.IGNORECASE)} & kinds
        for name in views:
            if name not in view_names and re.search(rf"\b{name}\b", text, re.IGNORECASE):
                view_names.add(name)
                texts.append(views[name])
    return view_names, needed, re.search(r"\bevents\b", query, re.IGNORECASE) is not None

"""Starting Spark quietly, and stopping what rill started."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from types import MappingProxyType
from typing import Any, Mapping

from kernel.errors import RillError

LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

#: PySpark's loggers that print an error it raises, with the JVM's stack trace, as a JSON line:
#: rill reports the error itself, in one line
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def spark_session(options: Any, quiet: bool = False, python_executable: str = "",
                  settings: Mapping[str, str] = MappingProxyType({})) -> tuple[Any, bool]:
    """The active SparkSession (a test's, an application's — also one started in another thread
    of this process, e.g. the caller's when ``execute_and_collect`` runs the job in a thread of
    its own) or a new one: (session, created).

    ``quiet``: a session rill starts keeps all of Spark's own output (its log, the JVM's
    messages) off the terminal unless rill runs with ``--debug``.

    The Python of a session rill starts (``spark.pyspark.python``): the job's
    ``python.executable`` when it sets one, else Spark's own choice (``PYSPARK_PYTHON``, else
    ``python3`` on the executors' machines) — on a ``local`` master, this process's interpreter,
    whose Python workers get this process's import path too. A cluster's executors get nothing
    of this machine's: rill and the job's files reach them through Spark's file distribution
    (:mod:`.shipping`).

    ``settings``: Spark settings of a session rill starts, over ``spark.conf``'s (``rill sql``'s
    memory bound).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    _quiet_query_context_loggers()
    active = SparkSession.getActiveSession()  # of this thread
    if active is None and SparkContext._active_spark_context is not None:
        active = SparkSession.builder.getOrCreate()
    if active is not None:
        return active, False
    if options.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no hostname lookup, no warning about it
    java_options = f"-Dlog4j.configurationFile=file:{LOG_CONFIG} -Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    conf = (SparkConf().setMaster(options.master).setAppName(options.app_name)
            .set("spark.ui.enabled", str(options.ui).lower())
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.driver.extraJavaOptions", java_options)
            .set("spark.executor.extraJavaOptions", java_options)
            .set("spark.python.worker.reuse", "true"))
    local = options.master.startswith("local")
    if local:  # the Python workers run on this machine: they import as this process does
        conf.set("spark.executorEnv.PYTHONPATH", _python_path())
    if python_executable:
        conf.set("spark.pyspark.python", python_executable)
    elif "PYSPARK_PYTHON" not in os.environ and local:
        conf.set("spark.pyspark.python", sys.executable)  # this machine's workers run rill's Python
    for item in options.conf:
        key, _, value = item.partition("=")
        conf.set(key.strip(), value.strip())
    for key, value in settings.items():
        conf.set(key, value)
    silent = quiet and not debugging()
    try:
        if silent and SparkContext._gateway is None:  # no JVM yet: start it with its stderr discarded
            from pyspark.java_gateway import launch_gateway

            SparkContext(conf=conf, gateway=launch_gateway(conf, popen_kwargs={"stderr": subprocess.DEVNULL}))
        session = SparkSession.builder.config(conf=conf).getOrCreate()
    except Exception as exc:  # no Java, a bad setting, a master that does not answer
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise RillError(f"cannot start Spark (spark.master = {options.master}): {first} "
                        f"({_what_to_check(options.master)})") from None
    session.sparkContext.setLogLevel("OFF" if silent else options.log_level.upper())
    return session, True


def _what_to_check(master: str) -> str:
    """Java when none is found; a standalone master that does not answer; else where Spark's
    own account of the failure is."""
    java_home = os.environ.get("JAVA_HOME", "")
    if not (java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK)) and shutil.which("java") is None:
        return "the spark backend needs Java 17 or later on PATH or in JAVA_HOME: none is found"
    if master.startswith("spark://"):
        unanswered = []
        for address in master[len("spark://"):].split(","):
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
                break
            except OSError as exc:
                unanswered.append(f"{address}: {exc.strerror or exc}")
        else:
            return f"no Spark master answers at {'; '.join(unanswered)}"
    return "Spark's own messages say why: run rill with --debug"


def debugging() -> bool:
    """Whether rill runs with ``--debug`` (``RILL_DEBUG=1``): then Spark's own output is shown."""
    return os.environ.get("RILL_DEBUG", "") not in ("", "0")


def _quiet_query_context_loggers() -> None:
    from pyspark.logger import PySparkLogger

    for name in QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).disabled = not debugging()


def _python_path() -> str:
    """The driver's import path, so ``local`` Python workers import the job's modules as the
    driver does, and the directory holding rill's packages (an editable install's import hook
    lives in the driver's environment, which a worker's interpreter may not start in)."""
    import kernel

    rill = os.path.dirname(os.path.dirname(os.path.abspath(kernel.__file__)))
    paths = [path for path in sys.path if path and os.path.isdir(path)]
    return os.pathsep.join(paths if rill in paths else [*paths, rill])


def jvm_process() -> Any:
    """The process of the JVM this Python process started for Spark (None if it did not start one)."""
    from pyspark import SparkContext

    return getattr(SparkContext._gateway, "proc", None)

"""Starting Spark quietly, and stopping what rill started."""

from __future__ import annotations

import os
import sys
from typing import Any

from kernel.errors import RillError

LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def spark_session(options: Any) -> tuple[Any, bool]:
    """The active SparkSession (a test's, an application's) or a new one: (session, created)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if options.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no hostname lookup, no warning about it
    java_options = f"-Dlog4j.configurationFile=file:{LOG_CONFIG} -Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    builder = (SparkSession.builder.master(options.master).appName(options.app_name)
               .config("spark.ui.enabled", str(options.ui).lower())
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", java_options)
               .config("spark.executor.extraJavaOptions", java_options)
               .config("spark.python.worker.reuse", "true")
               .config("spark.executorEnv.PYTHONPATH", _python_path()))
    if "PYSPARK_PYTHON" not in os.environ:
        builder = builder.config("spark.pyspark.python", sys.executable)  # the workers run rill's Python
    for item in options.conf:
        key, _, value = item.partition("=")
        builder = builder.config(key.strip(), value.strip())
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # no Java, a bad master URL or setting
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise RillError(f"cannot start Spark (spark.master = {options.master}): {first} (the spark backend needs "
                        "Java 17 or later on PATH or in JAVA_HOME)") from None
    session.sparkContext.setLogLevel(options.log_level.upper())
    return session, True


def _python_path() -> str:
    """The driver's import path, so Python workers import the job's modules as the driver does."""
    return os.pathsep.join(path for path in sys.path if path and os.path.isdir(path))

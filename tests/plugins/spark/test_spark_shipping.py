"""rill on a Spark standalone cluster whose executors' Python has no rill: a venv made here with
nothing in it (Spark gives its Python workers PySpark and py4j itself). ``rill run`` ships rill
and the job's Python files, requirements and archives through Spark's own file distribution;
the same job prints what it prints embedded, with spark workers and on the spark backend. An
executors' Python that cannot run rill fails the run at once in one line.

The cluster (a master and two workers on 127.0.0.1, from the pyspark package's daemon script)
is started here, as ``tests/plugins/spark/test_spark_workers.py`` starts its own; every run is the ``rill``
command in a subprocess, a driver of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kernel.lifecycle.test_python_dependencies import EXPECTED, rill, write_job
from tests.plugins.spark.test_spark_workers import StandaloneCluster

pytestmark = pytest.mark.skipif(not os.environ.get("JAVA_HOME") and not any(
    os.access(os.path.join(p, "java"), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep)),
    reason="Spark needs Java (none on PATH or in JAVA_HOME)")

STREAMING = '''
import sys

from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.from_source(DataGeneratorSource(lambda i: (f"k{i % 3}", 1), count=30, records_per_second=50,
                                    type_info=Types.TUPLE([Types.STRING(), Types.INT()])),
                WatermarkStrategy.no_watermarks(), "Generated") \\
    .key_by(lambda r: r[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])) \\
    .map(lambda r: f"{r[0]} {r[1]} {sys.prefix}").print()
env.execute("streaming")
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory) -> str:
    """The executors' Python: a venv with nothing installed (no rill, none of its dependencies)."""
    directory = tmp_path_factory.mktemp("executor-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=300)
    python = str(directory / "bin" / "python")
    assert subprocess.run([python, "-c", "import kernel"], capture_output=True).returncode == 1
    return python


def on_cluster(cluster: StandaloneCluster, *args: str, python: str, cwd: Path) -> subprocess.CompletedProcess:
    """``rill run --quiet ARGS`` on the cluster, its executors running ``python``; its stderr
    without the line Spark's JVM prints when it starts (``WARNING: Using incubator modules``)."""
    conf = ["spark.executor.memory=512m", "spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1"]
    done = rill("run", "--quiet", "--set", f"spark.master={cluster.url}", "--set", f"spark.conf={json.dumps(conf)}",
                *args, cwd=cwd, env={"PYSPARK_PYTHON": python, "SPARK_LOCAL_IP": "127.0.0.1"})
    done.stderr = "".join(line for line in done.stderr.splitlines(keepends=True)
                          if not line.startswith("WARNING: Using incubator modules"))
    return done


def test_a_streaming_job_on_executors_without_rill_prints_as_embedded(cluster, executor_python, tmp_path):
    job = tmp_path / "streaming.py"
    job.write_text(STREAMING)
    embedded = rill("run", "--quiet", str(job), cwd=tmp_path)
    assert embedded.returncode == 0, embedded.stderr
    done = on_cluster(cluster, "--set", "plugins.workers=spark", str(job), python=executor_python, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    prefix = str(Path(executor_python).parents[1])
    # the same records, computed by TaskExecutors in the executors' venv
    assert sorted(done.stdout.splitlines()) == sorted(embedded.stdout.replace(sys.prefix, prefix).splitlines())
    assert len(done.stdout.splitlines()) == 30


@pytest.mark.parametrize("where", ["spark workers", "spark backend"])
def test_the_jobs_files_requirements_and_archive_reach_executors_without_rill(cluster, executor_python, tmp_path,
                                                                              where):
    job = write_job(tmp_path)
    how = ["--set", "plugins.workers=spark"] if where == "spark workers" else ["--backend", "spark"]
    # the job's functions work in the executors' working directory, where Spark unpacked the archive
    done = on_cluster(cluster, *how, str(job), "relative", python=executor_python, cwd=tmp_path)
    assert (done.returncode, sorted(done.stdout.splitlines()), done.stderr) == (0, EXPECTED, "")


def test_executors_whose_python_cannot_run_rill_fail_the_run_at_once_in_one_line(cluster, executor_python, tmp_path):
    # an executors' Python that cannot load the driver's build of msgspec (as on another platform)
    site = tmp_path / "blocked"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'msgspec._core':\n"
        "            raise ImportError('msgspec._core: wrong ELF class')\n"
        "sys.meta_path.insert(0, Refuse())\n")
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={site}:$PYTHONPATH exec {executor_python} \"$@\"\n")
    python.chmod(0o755)
    job = tmp_path / "streaming.py"
    job.write_text(STREAMING)
    done = on_cluster(cluster, "--set", "plugins.workers=spark", "--duration", "10 min", str(job), python=str(python),
                      cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"rill: error: the Spark executors' Python {sys.version.split()[0]} ({executor_python}) cannot run rill: "
        "ImportError: msgspec._core: wrong ELF class"]

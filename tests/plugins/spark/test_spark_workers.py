"""TaskExecutors as long-running Spark tasks (``plugins.workers=spark``), with real Spark:
``local[8,2]`` (eight task threads; a failed task is retried once, so the guard against a
second TaskExecutor is exercised), then a standalone cluster — a master and two workers
started on 127.0.0.1 from the pyspark package's own launch script and stopped afterwards.

The same output as embedded TaskExecutors, print() and events brought back to the driver,
Spark's executor ids in ``worker_started``, a SIGKILLed TaskExecutor replaced (exactly once
with checkpoints), idle workers and streaming jobs ending their Spark jobs cleanly, and a
Spark worker lost mid-job. One SparkSession per master serves its tests (the driver uses the
active session)."""

from __future__ import annotations

import json
import os
import pickle
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from kernel import hookimpl
from kernel.runtime.cluster_events import (
    FaultInjected,
    TaskMetricsSampled,
    WorkerRegistered,
    WorkerStarted,
    WorkerStopped,
)
from kernel.common import Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.lifecycle.pythonenv.environment import PythonEnvironment
from plugins.checkpointing.events import CheckpointCompleted
from plugins.spark.shipping import Shipment
from tests.runtime import run_job
from tests.kernel.test_contracts import Products, violations
from tests.plugins.workers.test_worker_processes import (
    counting,
    event_time_timers,
    gone,
    keyed_windows,
    last_counts,
    print_reaches_stdout_and_worker_started_has_its_process,
)

ROOT = Path(__file__).resolve().parents[3]
SPARK_WORKERS = ("rill.clock=realtime", "plugins.workers=spark")
EMBEDDED = ("rill.clock=realtime",)
LOCAL = "local[8,2]"

pytestmark = pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                                reason="Spark needs Java (none on PATH or in JAVA_HOME)")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StandaloneCluster:
    """A Spark standalone master and two workers (2 cores each) on 127.0.0.1, started with the
    pyspark package's ``sbin/spark-daemon.sh`` (what ``start-master.sh``/``start-worker.sh``
    run; the pip package ships the daemon script only), logs and work dirs in ``root``."""

    MASTER = "org.apache.spark.deploy.master.Master"
    WORKER = "org.apache.spark.deploy.worker.Worker"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.work = {1: root / "worker-1", 2: root / "worker-2"}
        for directory in (root / "logs", root / "pids", root / "conf", *self.work.values()):
            directory.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_CONF_DIR": str(root / "conf"),
                    "SPARK_LOG_DIR": str(root / "logs"), "SPARK_PID_DIR": str(root / "pids"),
                    "SPARK_IDENT_STRING": f"rill-{uuid.uuid4().hex[:8]}", "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_MASTER_HOST": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m"}

    def daemon(self, action: str, command: str, instance: int, *args: str) -> None:
        subprocess.run([str(spark_home() / "sbin" / "spark-daemon.sh"), action, command, str(instance), *args],
                       env=self.env, check=True, stdout=subprocess.DEVNULL, timeout=120)

    def start(self) -> None:
        self.daemon("start", self.MASTER, 1, "--host", "127.0.0.1", "--port", str(self.port),
                    "--webui-port", str(self.ui))
        for number, work in self.work.items():
            self.daemon("start", self.WORKER, number, "--host", "127.0.0.1", "--webui-port", str(free_port()),
                        "--cores", "2", "--memory", "1g", "--work-dir", str(work), self.url)
        deadline = time.monotonic() + 120
        while self.alive_workers() < 2:
            assert time.monotonic() < deadline, "the standalone workers did not register at the master"
            time.sleep(0.5)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as answer:
                state = json.load(answer)
        except OSError:
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def pid(self, command: str, instance: int) -> int | None:
        path = self.root / "pids" / f"spark-{self.env['SPARK_IDENT_STRING']}-{command}-{instance}.pid"
        return int(path.read_text()) if path.exists() else None

    def worker_of_executor(self, executor_id: str) -> int:
        """The worker whose work dir holds the executor (``<work dir>/<app id>/<executor id>``)."""
        return next(n for n, work in self.work.items() if list(work.glob(f"app-*/{executor_id}")))

    def lose_worker(self, number: int) -> None:
        """The worker's machine is gone: SIGKILL its JVM and its executors' JVMs."""
        worker = self.pid(self.WORKER, number)
        for pid in [worker, *children(worker)]:
            os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        for number in self.work:
            self.daemon("stop", self.WORKER, number)
        self.daemon("stop", self.MASTER, 1)
        for pid in java_processes_under(self.root):  # what a stop left (an executor being killed)
            os.kill(pid, signal.SIGKILL)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def java_processes_under(root: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"java" in command and str(root).encode() in command:
                found.append(int(entry.name))
    return found


def import_task_manager(_) -> None:
    import plugins.local.runner  # noqa: F401


@pytest.fixture(scope="module")
def spark(request, tmp_path_factory):
    """The SparkSession of the tests: ``local[8,2]`` or a standalone cluster's (parametrised
    indirectly, so the local session stops before the cluster's starts)."""
    from plugins.spark.options import SparkOptions
    from plugins.spark.workers import worker_session

    cluster = None
    if request.param == "local":
        options = SparkOptions(master=LOCAL)
    else:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver too (as spark_session does for local[N])
        cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
        try:
            cluster.start()
        except BaseException:
            cluster.stop()
            raise
        # the executors run rill's interpreter and import the tests' modules from this checkout
        # (the jobs' functions defined here travel by reference); rill itself reaches them shipped
        options = SparkOptions(master=cluster.url, conf=["spark.executor.memory=512m", "spark.driver.host=127.0.0.1",
                                                         "spark.driver.bindAddress=127.0.0.1",
                                                         f"spark.pyspark.python={sys.executable}",
                                                         f"spark.executorEnv.PYTHONPATH={ROOT}:{Path(__file__).resolve().parent}"])
    try:
        session, _ = worker_session(options)
        session.cluster = cluster
        # Python workers that imported rill once: a TaskExecutor starts in a reused one in well
        # under a second, in a new one (under load) in many
        session.sparkContext.parallelize(range(4), 4).foreach(import_task_manager)
        # what every run ships is checked on the executors once per session: here, not in the
        # first test's run (where it would delay its TaskExecutors)
        Shipment(session.sparkContext, PythonEnvironment()).check(["plugins.spark.worker_task", "plugins.local.runner"])
        yield session
        session.stop()
    finally:  # a cluster whose session could not be set up is stopped too
        if cluster is not None:
            cluster.stop()


local = pytest.mark.parametrize("spark", ["local"], indirect=True)
standalone = pytest.mark.parametrize("spark", ["standalone"], indirect=True)


def same_output(build, *sets: str):
    embedded = run_job(build, *EMBEDDED, *sets)
    on_spark = run_job(build, *SPARK_WORKERS, *sets)
    assert embedded.outcome.status == on_spark.outcome.status == "FINISHED", on_spark.outcome.failure
    return sorted(embedded.lines), sorted(on_spark.lines), on_spark


def started(job) -> dict[str, WorkerStarted]:
    return {e.resource_id: e for e in job.events(WorkerStarted)}


def spark_jobs(spark, run_id: str, resource_id: str) -> list[str]:
    """The statuses of a worker's Spark jobs (its job group), once Spark's status store has
    heard of everything that happened (its listener bus lags behind the scheduler)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    tracker = spark.sparkContext.statusTracker()
    return [tracker.getJobInfo(job).status for job in tracker.getJobIdsForGroup(f"rill-{run_id}-{resource_id}")]


def example(name: str):
    def build(env):
        runpy.run_path(str(ROOT / "examples" / name))["main"]()

    return build


# -- local[N]: the same output as embedded -------------------------------------------------------


@local
@pytest.mark.parametrize("name", ["wordcount.py", "window_wordcount.py"])
def test_every_example_prints_the_same_on_spark_workers(spark, name):
    embedded, on_spark, job = same_output(example(name), "taskmanager.numberOfTaskSlots=2")
    assert on_spark == embedded and len(on_spark) > 30
    workers = started(job)
    pids = {e.pid for e in workers.values()}
    assert len(workers) == 4 and len(pids) == 4 and os.getpid() not in pids
    assert {e.executor_id for e in workers.values()} == {"driver"}  # local mode's one executor
    statuses = {resource: spark_jobs(spark, job.outcome.run_id, resource) for resource in workers}
    assert all(status == ["SUCCEEDED"] for status in statuses.values()), statuses


@local
@pytest.mark.parametrize("build", [keyed_windows, event_time_timers])
def test_event_time_jobs_print_the_same_on_spark_workers(spark, build):
    embedded, on_spark, job = same_output(build)
    assert on_spark == embedded and len(on_spark) > 20
    assert all(e.pid != os.getpid() for e in started(job).values())


@local
def test_the_output_flusher_sends_during_a_pause_on_spark_workers(spark):
    """Issue 27's paced job (1.5 s pauses in time.sleep) on TaskExecutors in Spark tasks:
    PyFlink's windows and late records, and the source task's records leave in three
    different seconds (tests/plugins/local/test_output_flusher.py)."""
    from tests.plugins.local.test_output_flusher import PACED, paced, source_records_out

    job = run_job(paced(sleep=time.sleep, pause=1.5), *SPARK_WORKERS)
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert job.lines == PACED
    assert [n for _, n in source_records_out(job) if n] == [4, 4, 3]


# -- print and events through the driver, executor ids -----------------------------------------------


@local
def test_print_reaches_rill_runs_stdout_and_worker_started_has_the_executor(spark, cli, tmp_path):
    print_reaches_stdout_and_worker_started_has_its_process(cli, tmp_path, "spark", "driver")


def test_a_simulated_run_refuses_spark_workers_in_one_line(cli, tmp_path):
    job_file = tmp_path / "job.py"
    job_file.write_text("from kernel.datastream import StreamExecutionEnvironment\n"
                        "env = StreamExecutionEnvironment.get_execution_environment()\n"
                        "env.from_collection([1]).print()\nenv.execute()\n")
    code, out, err = cli("run", "--clock", "simulated", "--set", "plugins.workers=spark", str(job_file))
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1] == (
        "rill: error: plugins.workers=spark needs rill.clock=realtime: TaskExecutors in Spark tasks run on the wall "
        "clock (a simulated run has one thread; use plugins.workers=embedded)")


@local
def test_the_spark_driver_and_what_it_is_handed_satisfy_their_contracts(spark):
    from kernel.contracts.workers import ResourceEventHandler, ResourceManagerDriver, WorkerHost

    captured = Products()
    job = run_job(lambda env: (env.from_collection([1, 2]).map(lambda v: v).add_sink(lambda v: None), env.execute()),
                  *SPARK_WORKERS, plugins=(captured,))
    assert job.outcome.status == "FINISHED"
    [driver] = captured.made["create_resource_manager_driver"]
    assert type(driver).__name__ == "SparkWorkerDriver" and not driver.in_process
    assert violations(driver, ResourceManagerDriver) == []
    assert violations(captured.given["host"][0], WorkerHost) == []
    assert violations(captured.given["handler"][0], ResourceEventHandler) == []


def test_a_task_executor_serves_its_partitions_where_its_executor_reaches_the_driver_unless_set():
    from kernel.config import load_raw
    from kernel.contracts.workers import TaskExecutorProcessSpec
    from kernel.lifecycle.session import Session
    from plugins.spark.worker_task import serving_at

    def spec(*sets: str, environ: dict | None = None) -> TaskExecutorProcessSpec:
        return TaskExecutorProcessSpec(resource_id="taskexecutor-1", slots=1, entry="plugins.local.runner:run_task_manager",
                                       rpc_address="10.0.0.1:6123", run_id="r",
                                       config=pickle.dumps((load_raw(sets=sets, environ=environ or {}), {})))

    def serves(spec: TaskExecutorProcessSpec) -> str:
        return Session.from_raw(pickle.loads(spec.config)[0]).config.get("taskmanager.host")

    assert serves(serving_at(spec(), "10.0.0.7")) == "10.0.0.7"
    assert serves(serving_at(spec("taskmanager.host=10.0.0.9"), "10.0.0.7")) == "10.0.0.9"
    assert serves(serving_at(spec(environ={"RILL_TASKMANAGER_HOST": "10.0.0.8"}), "10.0.0.7")) == "10.0.0.8"


# -- real kills, released workers, streaming jobs ---------------------------------------------------


@local
def test_a_sigkilled_task_executor_is_replaced_once_and_checkpoints_keep_state_exactly_once(spark, tmp_path):
    job = run_job(counting(4_000), *SPARK_WORKERS, f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
                  faults=["kill:target=taskexecutor-1,at=2500ms"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    workers = started(job)
    # local[8,2] retries the failed task once: the retry starts no second taskexecutor-1
    assert sorted(workers) == ["taskexecutor-1", "taskexecutor-2", "taskexecutor-3"]
    assert gone(workers["taskexecutor-1"].pid)
    stopped = {e.resource_id: e.reason for e in job.events(WorkerStopped)}
    assert stopped["taskexecutor-1"] == ("terminated: killed by SIGKILL (its Spark task failed: Python worker exited "
                                         "unexpectedly (crashed); Spark's retry starts no second TaskExecutor)")
    assert [e.target for e in job.events(FaultInjected)] == ["taskexecutor-1"]
    registered = [e.resource_id for e in job.events(WorkerRegistered)]
    assert registered.count("taskexecutor-1") == 1
    assert last_counts(job.lines) == {"k0": 1_000, "k1": 1_000, "k2": 1_000, "k3": 1_000}
    assert spark_jobs(spark, job.outcome.run_id, "taskexecutor-1") == ["SUCCEEDED"]  # its retry ended at once


@local
def test_kafka_exactly_once_through_a_killed_spark_task(spark, kafka_cluster):
    from kernel.datastream.connectors.kafka import DeliveryGuarantee
    from kernel.runtime.kafka_events import KafkaSplitsAssigned
    from tests.kafka_mock import produce, read_topic
    from tests.kernel.runtime.streaming.test_kafka import RESTARTS, guarantee_job, topic

    source_topic, sink_topic = topic("spark-kill-in"), topic("spark-kill-out")
    records = [str(i) for i in range(6000)]
    produce(kafka_cluster, source_topic, [(r, i % 4) for i, r in enumerate(records)])
    job = run_job(guarantee_job(kafka_cluster, source_topic, sink_topic, DeliveryGuarantee.EXACTLY_ONCE),
                  *SPARK_WORKERS, *RESTARTS, "taskmanager.numberOfTaskSlots=1",
                  faults=["kill:target=taskexecutor-1,at=4s"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert [e.target for e in job.events(FaultInjected)] == ["taskexecutor-1"]
    assert any(e.origin == "restored" for e in job.events(KafkaSplitsAssigned))
    # a read_committed consumer sees each record once
    assert sorted((v for _, _, v in read_topic(kafka_cluster, sink_topic)), key=int) == records


@local
def test_an_idle_worker_is_released_and_its_spark_job_ends(spark):
    def build(env):
        env.from_collection([1, 2, 3], Types.INT()).print()
        env.from_source(DataGeneratorSource(lambda i: i, count=60, records_per_second=10),
                        WatermarkStrategy.no_watermarks(), "Slow").slot_sharing_group("other").add_sink(lambda v: None)
        env.execute("idle")

    job = run_job(build, *SPARK_WORKERS, "resourcemanager.taskmanager-timeout=1 s")
    assert job.outcome.status == "FINISHED" and job.lines == ["1", "2", "3"]
    stopped = [(e.resource_id, e.reason) for e in job.events(WorkerStopped)]
    released = [r for r, reason in stopped if reason == "idle for resourcemanager.taskmanager-timeout (1000 ms)"]
    assert len(released) == 1 and len(stopped) == 2
    # stopped, not cancelled: the TaskExecutors returned and their Spark tasks finished (their
    # Python workers stay, for Spark to reuse)
    statuses = {resource: spark_jobs(spark, job.outcome.run_id, resource) for resource in started(job)}
    assert all(status == ["SUCCEEDED"] for status in statuses.values()), statuses


class Interrupt:
    """A plugin: Ctrl-C (SIGINT to this process) once the tasks report metrics."""

    def __init__(self) -> None:
        self.sent = False

    @hookimpl
    def create_event_observers(self, run):
        return self

    def events_emitted(self, batch) -> None:
        if not self.sent and any(isinstance(e, TaskMetricsSampled) for e in batch.events):
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)

    def close(self, status: str) -> None:
        """Nothing to close."""


@local
@pytest.mark.parametrize("end", ["duration", "ctrl-c"])
def test_a_streaming_job_runs_until_its_duration_or_ctrl_c_and_stops_its_spark_jobs(spark, end):
    def build(env):
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: (f"k{i % 3}", 1), records_per_second=200,
                                            type_info=Types.TUPLE([Types.STRING(), Types.INT()])),
                        WatermarkStrategy.no_watermarks(), "Unbounded") \
            .key_by(lambda r: r[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])) \
            .add_sink(lambda v: None)
        env.execute("streaming")

    if end == "duration":
        job = run_job(build, *SPARK_WORKERS, "rill.duration=8 s")
    else:
        job = run_job(build, *SPARK_WORKERS, plugins=(Interrupt(),))
    assert job.outcome.status == "CANCELED"
    workers = started(job)
    assert len(workers) == 2
    assert {e.reason for e in job.events(WorkerStopped)} == {"cluster shut down"}
    statuses = {resource: spark_jobs(spark, job.outcome.run_id, resource) for resource in workers}
    assert all(status == ["SUCCEEDED"] for status in statuses.values()), statuses
    final = {(e.vertex_name, e.subtask) for e in job.events(TaskMetricsSampled) if e.final}
    assert len(final) == 4  # every task's last metrics, sent as its TaskExecutor stopped


# -- a standalone cluster ----------------------------------------------------------------------------


@standalone
def test_a_job_on_a_standalone_cluster_prints_as_embedded(spark):
    embedded, on_spark, job = same_output(example("wordcount.py"), "taskmanager.numberOfTaskSlots=2")
    assert on_spark == embedded and len(on_spark) > 30
    workers = started(job)
    # four TaskExecutors hold all four cores: two on each worker's executor
    assert sorted(e.executor_id for e in workers.values()) == ["0", "0", "1", "1"]


@standalone
def test_a_kafka_job_on_a_standalone_cluster_reads_its_partitions_on_the_executors(spark, kafka_cluster):
    from kernel.datastream.connectors.kafka import DeliveryGuarantee
    from kernel.runtime.kafka_events import KafkaSplitsAssigned
    from tests.kafka_mock import produce, read_topic
    from tests.kernel.runtime.streaming.test_kafka import RESTARTS, guarantee_job, topic

    source_topic, sink_topic = topic("spark-in"), topic("spark-out")
    records = [str(i) for i in range(1000)]
    produce(kafka_cluster, source_topic, [(r, i % 4) for i, r in enumerate(records)])
    job = run_job(guarantee_job(kafka_cluster, source_topic, sink_topic, DeliveryGuarantee.EXACTLY_ONCE),
                  *SPARK_WORKERS, *RESTARTS)
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert sorted((v for _, _, v in read_topic(kafka_cluster, sink_topic)), key=int) == records
    workers = started(job)
    assert {e.executor_id for e in workers.values()} <= {"0", "1"}  # on the cluster's executors
    assert sorted(p for e in job.events(KafkaSplitsAssigned) for p in e.partitions) == \
        sorted(f"{source_topic}-{p}" for p in range(4))


class LoseSparkWorker:
    """A plugin: once the first checkpoint completed, the Spark worker hosting
    taskexecutor-1's executor is lost (its JVM and its executor's SIGKILLed)."""

    def __init__(self, cluster: StandaloneCluster) -> None:
        self.cluster = cluster
        self.executor = ""
        self.lost: int | None = None

    @hookimpl
    def create_event_observers(self, run):
        return self

    def events_emitted(self, batch) -> None:
        for event in batch.events:
            if isinstance(event, WorkerStarted) and event.resource_id == "taskexecutor-1":
                self.executor = event.executor_id
            if isinstance(event, CheckpointCompleted) and self.lost is None and self.executor:
                self.lost = self.cluster.worker_of_executor(self.executor)
                threading.Thread(target=self.cluster.lose_worker, args=(self.lost,)).start()

    def close(self, status: str) -> None:
        """Nothing to close."""


@standalone
def test_losing_a_spark_worker_mid_job_replaces_its_task_executors_on_the_other(spark, tmp_path):
    lose = LoseSparkWorker(spark.cluster)
    job = run_job(counting(5_000), *SPARK_WORKERS, f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
                  plugins=(lose,))
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert lose.lost is not None
    workers = started(job)
    lost_executor = workers["taskexecutor-1"].executor_id
    on_lost = [r for r, e in workers.items() if e.executor_id == lost_executor]
    replacements = [r for r in workers if r not in ("taskexecutor-1", "taskexecutor-2")]
    # one replacement per TaskExecutor the worker took with it, all on the other worker's executor
    assert len(replacements) == len(on_lost) >= 1
    assert {workers[r].executor_id for r in replacements} == {"1" if lost_executor == "0" else "0"}
    stopped = {e.resource_id: e.reason for e in job.events(WorkerStopped)}
    # Spark does not count a lost worker's tasks as failures: it retried them (and the retries
    # started no second TaskExecutors)
    assert all(re.fullmatch(f"terminated: its Spark task failed: ExecutorLostFailure \\(executor {lost_executor} exited "
                            r"[^)]+\) Reason: worker lost: 127\.0\.0\.1:\d+ got disassociated; Spark's retry starts no "
                            r"second TaskExecutor", stopped[r])
               for r in on_lost), "\n".join(stopped.values())
    registered = [e.resource_id for e in job.events(WorkerRegistered)]
    assert all(registered.count(r) == 1 for r in workers)
    # restored from the latest checkpoint: every key counted exactly once
    assert last_counts(job.lines) == {"k0": 1_250, "k1": 1_250, "k2": 1_250, "k3": 1_250}


# -- TaskExecutors that cannot start -----------------------------------------------------------------


@local
def test_a_task_executor_failing_in_its_spark_task_reports_its_exception_and_the_job_fails_at_the_slot_timeout(
        spark, capsys):
    """Each TaskExecutor's Spark task raises as it starts (it cannot bind where it would serve
    its partitions): its Python exception, not Spark's cut sentence, is in ``worker_stopped``
    and on stderr; no worker ever registers, so the job fails after ``slot.request.timeout``
    instead of idling until ``rill.duration``."""
    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=10, type_info=Types.INT()),
                        WatermarkStrategy.no_watermarks(), "Unbounded").add_sink(lambda v: None)
        env.execute("never starts")

    job = run_job(build, *SPARK_WORKERS, "taskmanager.host=192.0.2.1", "slot.request.timeout=6 s",
                  "rill.duration=10 min")
    assert job.outcome.status == "FAILED"
    assert job.outcome.failure.startswith("NoResourceAvailableException: could not acquire the minimum required "
                                          "resources (a slot for slot sharing group 'default') within "
                                          "slot.request.timeout (6000 ms)")
    assert job.outcome.clock_seconds < 120 and not job.events(WorkerRegistered)
    exception = ("OSError: [Errno 99] Cannot assign requested address (while attempting to bind on address "
                 "('192.0.2.1', 0))")
    # local[8,2] retries a failed task once (and its retry starts no TaskExecutor)
    diagnostics = f"its Spark task failed: {exception}; Spark's retry starts no second TaskExecutor"
    failed = [e.resource_id for e in job.events(WorkerStopped) if e.reason != "cluster shut down"]
    assert len(failed) >= 2 and {e.reason for e in job.events(WorkerStopped) if e.resource_id in failed} == {
        f"terminated before registering: {diagnostics}"}
    printed = [line for line in capsys.readouterr().err.splitlines() if line.startswith("rill: TaskExecutor")]
    assert set(printed) >= {f"rill: TaskExecutor {resource} failed: {diagnostics}" for resource in failed}
    assert all(line.endswith(f" failed: {diagnostics}") for line in printed)

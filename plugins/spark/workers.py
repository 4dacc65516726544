"""The driver of plugin ``workers.spark`` (:mod:`.workers_plugin`): each TaskExecutor a
long-running task on a Spark cluster's executors — the pattern Spark's Real-time Mode uses for long-running tasks, with rill's own
runtime (network, watermarks, checkpoints) inside them.

``rill run``'s process is the Spark driver (the SparkSession of :mod:`.session`, ``spark.master``
and the other ``spark.*`` keys). A requested worker is one Spark job of one task
(``parallelize([spec], 1).mapPartitions(...)``, submitted from a driver thread in a job group of
its own, ``rill-<run id>-<resource id>``), which runs :mod:`.worker_task` in the Python worker
process hosting it on an executor: the TaskExecutor connects back to the cluster's process and
registers, and its task connects to this driver's task channel. The worker is placed once its
task says hello: its pid and host, and Spark's executor id of the task (from the driver's status
store). What it prints comes over the channel to this process's stdout, whole lines at a time.

Releasing a worker sends ``stop`` over the channel (SIGTERM in the task: the TaskExecutor stops
its tasks and sends its last events, the task returns, the Spark job ends); a worker whose job
has not ended within ``rill.workers.stop-timeout`` — or that never started — has its job group
cancelled (Spark then kills its Python worker). The ``kill`` fault sends ``kill`` (SIGKILL of the
Python worker process, as a crash: Spark sees the task fail). A worker's end, for whatever reason,
is reported to the ResourceManager once its Spark job has ended and its channel has closed.

Spark must not start a second TaskExecutor for a worker: the session rill starts for spark
workers sets ``spark.task.maxFailures=1`` (``local[N]`` never retries), and a retried attempt of
a worker's task (a session started elsewhere, speculation) ends at once without starting one.
The ResourceManager requests replacements for lost workers. Each worker holds one task slot
(a core) of Spark for its whole life: the cluster needs at least as many as the job's
TaskExecutors. Spark workers need the realtime clock: a simulated run is refused.

rill reaches the executors shipped (:mod:`.shipping`): before the first worker, one probe task
checks that it runs there, else the run fails at once. A worker whose task raises is reported
with the Python exception it raised, in its ``worker_stopped`` and on stderr.
The task channel listens where the cluster's process does (``jobmanager.bind-host``, else the
host of ``jobmanager.rpc.address``; tasks reach it at that host, or at the rpc address's when it
is a wildcard); a task proves it knows the run's secret before anything it sends is read
(:mod:`kernel.remoting.security`). The secret and the security keys travel in the task's own data
(Spark's RPC: ``spark.authenticate`` / ``spark.network.crypto.enabled`` guard it on a network).
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.contracts.workers import WorkerNode
from kernel.errors import UsageError
from kernel.messaging import Future
from kernel.options import SecurityOptions, WorkerOptions
from kernel.remoting.security import TransportSecurity, report_rejections
from kernel.remoting.tcp import Connection, Server, malformed, parse_address
from plugins.spark.failures import spark_failure
from plugins.spark.options import SparkOptions
from plugins.spark.shipping import Shipment, executors_python
from plugins.spark.worker_task import FINISHED, RETRIED, decode, encode, on_executors, run_in_spark_task

if TYPE_CHECKING:
    from kernel.contracts.workers import ResourceEventHandler, TaskExecutorProcessSpec, WorkerHost

_output_lock = threading.Lock()


class WorkerStartFailed(Exception):
    """A worker's Spark job ended before its task said hello."""


def worker_session(options: SparkOptions, python_executable: str = "") -> tuple[Any, bool]:
    """The SparkSession spark workers run on: the active one, or a new one in which Spark does
    not retry failed tasks (``spark.task.maxFailures=1`` unless ``spark.conf`` sets it)."""
    from plugins.spark.session import spark_session

    return spark_session(msgspec.structs.replace(options, conf=["spark.task.maxFailures=1", *options.conf]),
                         python_executable=python_executable)


def _write(text: str) -> None:
    with _output_lock:
        out = sys.stdout
        try:
            out.write(text)
            out.flush()
        except (BrokenPipeError, ValueError):
            pass


class _Worker:
    """A requested worker: its Spark job (run by ``thread``) and its task's channel."""

    def __init__(self, resource_id: str, group: str, placed: Future) -> None:
        self.resource_id = resource_id
        self.group = group
        self.placed = placed
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.connection: Connection | None = None
        self.disconnected = threading.Event()
        self.task: tuple[int, int] | None = None  # the Spark stage and task running its TaskExecutor
        self.released = False
        self.killed = False


class SparkWorkerDriver:
    in_process = False

    def __init__(self, host: WorkerHost, spark: Any, created: bool, options: WorkerOptions,
                 run_id: str, shipment: Shipment, run: Any) -> None:
        self.host = host
        self.spark = spark
        self.created = created
        self.task = shipment.wrap(run_in_spark_task)  # what each worker's Spark task runs
        self.stop_timeout = options.stop_timeout / 1000
        self.run_id = run_id
        self.run = run
        self.handler: ResourceEventHandler | None = None
        self.workers: dict[str, _Worker] = {}
        self.channel: Server | None = None
        self.terminated = False

    def initialize(self, handler: ResourceEventHandler) -> None:
        self.handler = handler

    # -- requesting a worker: its Spark job --------------------------------------------------

    def request_resource(self, spec: TaskExecutorProcessSpec) -> Future:
        """Submits the worker's Spark job; the Future completes when its task says hello."""
        placed = Future(self.host.loop)
        security = self.run.config.section(SecurityOptions).absolute()  # the task starts in Spark's directory
        if self.channel is None:  # where tasks connect: where they connect to the cluster's process
            self.channel = self._listen(spec, security)
        worker = self.workers[spec.resource_id] = _Worker(spec.resource_id, f"rill-{self.run_id}-{spec.resource_id}",
                                                          placed)
        payload = (msgspec.msgpack.encode(on_executors(spec)), self.channel.address, msgspec.msgpack.encode(security))
        from pyspark import InheritableThread

        worker.thread = InheritableThread(target=self._run_job, args=(worker, payload), name=f"rill-{spec.resource_id}",
                                          daemon=True)
        self.host.loop.io_started()  # the cluster's loop waits for the job's end
        worker.thread.start()
        return placed

    def _listen(self, spec: TaskExecutorProcessSpec, options: SecurityOptions) -> Server:
        """The task channel (see the module)."""
        rpc_host = parse_address(spec.rpc_address)[0]
        bind_host = self.run.config.get("jobmanager.bind-host") or rpc_host
        advertised = rpc_host if bind_host in ("0.0.0.0", "::", "") else bind_host
        security = TransportSecurity.of(options, spec.secret, report_rejections(self.run))
        return Server(bind_host, 0, self._frames, self._closed, "task-channel", security, advertised)

    def _run_job(self, worker: _Worker, payload: tuple[bytes, str, bytes]) -> None:
        context = self.spark.sparkContext
        context.setJobGroup(worker.group, f"rill {self.run_id}: TaskExecutor {worker.resource_id}",
                            interruptOnCancel=True)
        error = ""
        try:
            ended = context.parallelize([payload], 1).mapPartitions(self.task).collect()
        except Exception as exc:  # the task failed (its process died, it raised), the job was cancelled
            ended, error = [], spark_failure(str(exc)) or type(exc).__name__
        if worker.connection is not None:  # everything it sent is handled
            worker.disconnected.wait(self.stop_timeout)
        self.host.loop.call_soon_threadsafe(self._ended, worker, self._diagnostics(worker, ended, error))

    def _diagnostics(self, worker: _Worker, ended: list[str], error: str) -> str:
        """How a worker's Spark job ended: its task finished, or the task that ran the
        TaskExecutor failed (Spark's reason) — whether Spark then retried it or not."""
        if ended == [FINISHED]:
            diagnostics = "its Spark task finished"
        else:
            failure = self._task_failure(worker) or error or "its Spark job ended"
            diagnostics = f"its Spark task failed: {failure}"
            if ended == [RETRIED]:
                diagnostics += "; Spark's retry starts no second TaskExecutor"
        return f"killed by SIGKILL ({diagnostics})" if worker.killed else diagnostics

    def _task_failure(self, worker: _Worker) -> str:
        """Spark's reason for the failure of the task that ran the worker's TaskExecutor."""
        if worker.task is None:
            return ""
        from py4j.protocol import Py4JError

        stage, task = worker.task
        context = self.spark.sparkContext._jsc.sc()
        try:
            context.listenerBus().waitUntilEmpty()
            tasks = context.statusStore().taskList(stage, 0, 8)
            for index in range(tasks.size()):
                data = tasks.apply(index)
                if data.taskId() == task and data.errorMessage().isDefined():
                    return spark_failure(data.errorMessage().get())
        except Py4JError:  # the SparkContext stopped meanwhile
            pass
        return ""

    def _ended(self, worker: _Worker, diagnostics: str) -> None:
        self.host.loop.io_finished()
        if "its Spark task failed" in diagnostics and not (worker.released or worker.killed or self.terminated):
            print(f"rill: TaskExecutor {worker.resource_id} {'failed' if worker.placed.done() else 'could not start'}"
                  f": {diagnostics}", file=sys.stderr, flush=True)
        if self.workers.get(worker.resource_id) is worker:
            del self.workers[worker.resource_id]
        if not worker.placed.done():
            worker.placed.set_exception(WorkerStartFailed(f"its Spark job ended before the task started: {diagnostics}"))
        elif self.handler is not None and not self.terminated:
            self.handler.on_worker_terminated(worker.resource_id, diagnostics)

    # -- the task channel ---------------------------------------------------------------------

    def _frames(self, connection: Connection, frames: list[bytes]) -> None:
        for frame in frames:
            try:
                kind, *fields = decode(frame)
                if kind == "out" and len(fields) == 1 and type(fields[0]) is str:
                    _write(fields[0])
                elif kind == "hello" and not hasattr(connection, "worker"):
                    self._hello(connection, *fields)
                else:
                    raise ValueError(f"unexpected {kind!r:.40} frame")
            except Exception as exc:  # noqa: BLE001 -- a frame no task of the run sends
                connection.reject(malformed(exc))
                return

    def _hello(self, connection: Connection, resource_id: str, pid: int, host: str, stage: int, task: int) -> None:
        if not (type(resource_id) is str and type(host) is str and all(type(n) is int for n in (pid, stage, task))):
            raise ValueError("malformed hello")
        worker = self.workers.get(resource_id)
        if worker is None:  # its worker ended meanwhile
            connection.send(encode("stop"))
            return
        connection.worker = worker  # type: ignore[attr-defined]
        worker.task = (stage, task)
        with worker.lock:
            worker.connection = connection
            released = worker.released
        if released:
            connection.send(encode("stop"))
        node = WorkerNode(resource_id=resource_id, pid=pid, host=host, executor_id=self._executor_of(stage, task))
        self.host.loop.call_soon_threadsafe(self._placed, worker, node)

    def _executor_of(self, stage: int, task: int) -> str:
        """Spark's executor id of a running task: where the task scheduler launched it, else
        (should that read miss, the scheduler changing its map meanwhile) what the driver's
        status store (Spark's UI) says."""
        from py4j.protocol import Py4JError

        context = self.spark.sparkContext._jsc.sc()
        try:
            launched = context.taskScheduler().taskIdToExecutorId().get(task)
            if launched.isDefined():
                return launched.get()
            context.listenerBus().waitUntilEmpty()
            tasks = context.statusStore().taskList(stage, 0, 8)
            return next((tasks.apply(i).executorId() for i in range(tasks.size()) if tasks.apply(i).taskId() == task),
                        "")
        except Py4JError:  # the SparkContext stopped meanwhile
            return ""

    def _placed(self, worker: _Worker, node: WorkerNode) -> None:
        if not worker.placed.done():
            worker.placed.set_result(node)

    def _closed(self, connection: Connection, error: BaseException | None) -> None:
        worker = getattr(connection, "worker", None)
        if worker is not None:
            worker.disconnected.set()

    # -- stopping workers ---------------------------------------------------------------------

    def release_resource(self, resource_id: str) -> None:
        worker = self.workers.get(resource_id)
        if worker is not None:
            self._stop(worker)

    def _stop(self, worker: _Worker) -> None:
        """``stop`` over the channel, the job group cancelled after the stop timeout (at once
        when the task has not started)."""
        with worker.lock:
            if worker.released:
                return
            worker.released = True
            connection = worker.connection
        if connection is None or not connection.send(encode("stop")):
            self._cancel(worker)
            return
        timer = threading.Timer(self.stop_timeout, self._cancel, (worker,))
        timer.daemon = True
        timer.start()

    def _cancel(self, worker: _Worker) -> None:
        if worker.thread is not None and worker.thread.is_alive():
            self.spark.sparkContext.cancelJobGroup(worker.group)

    def kill_worker(self, resource_id: str) -> bool:
        worker = self.workers.get(resource_id)
        if worker is None or worker.connection is None:
            return False
        worker.killed = True
        if not worker.connection.send(encode("kill")):
            worker.killed = False
            return False
        return True

    def terminate(self) -> None:
        """Stop every worker and wait for their Spark jobs to end; stop the SparkSession if
        rill started it."""
        self.terminated = True
        workers = list(self.workers.values())
        for worker in workers:
            self._stop(worker)
        for worker in workers:
            worker.thread.join(self.stop_timeout)
            if worker.thread.is_alive():
                self._cancel(worker)
                worker.thread.join()
        if self.channel is not None:
            self.channel.close()
        if self.created:
            self.spark.stop()


def create_driver(host: Any, run: Any) -> SparkWorkerDriver:
    """The driver of a realtime run: a Spark session (rill's own, or the one running), and
    rill shipped to its executors and checked there."""
    if run.clock.mode == "simulated":
        raise UsageError("plugins.workers=spark needs rill.clock=realtime: TaskExecutors in Spark tasks run on the "
                         "wall clock (a simulated run has one thread; use plugins.workers=embedded)")
    environment = run.python_environment
    options = run.config.section(SparkOptions)
    spark, created = worker_session(options, executors_python(options, environment))
    shipment = Shipment(spark.sparkContext, environment)
    try:
        shipment.check(["plugins.spark.worker_task", "plugins.local.runner"])
    except BaseException:
        if created:
            spark.stop()
        raise
    return SparkWorkerDriver(host, spark, created, run.config.section(WorkerOptions), run.id, shipment, run)

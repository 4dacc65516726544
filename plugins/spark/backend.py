"""The ``spark`` execution backend: a compiled job on Spark, in Flink's BATCH semantics.

The same JobGraph the local runtime runs: job vertices in topological order, each a Spark
stage whose partitions are its subtasks (``executor.SubtaskRunner`` runs the operator chain in
them). An edge is a Spark shuffle to the consumer subtask the local runtime would pick (key
groups for key_by, the pointwise wiring of forward and rescale edges). Each vertex is one Spark
job: its stage writes its edges' shuffle files (a blocking exchange, as Flink batch shuffles),
which its consumers' stages read. User sinks and FileSink's writers run in the Spark tasks;
metrics, FileSink's pending parts and the records of print and collect sinks come to the driver
in an accumulator (:mod:`plugins.spark.sinks`). Once every Spark job succeeded, the print and
collect sinks run on the driver, per subtask, in topological and subtask order, then the
FileSink parts are committed; a failed job commits nothing.

rill and the job's Python dependencies reach the executors shipped (:mod:`.shipping`): the
subtasks' runners go wrapped by :mod:`.bootstrap`; one probe task first checks that rill runs
there, else the run fails at once.

The run is recorded like any other: compilation, job status, each subtask's execution states
with the times its Spark task ran, a final metrics sample per subtask (records in/out,
duration, and its user metrics as its Spark task ended), the Spark job and stages of each
vertex, and what print sinks wrote.
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from kernel.clock import NS_PER_MS
from kernel.datastream.connectors.file_system import FileSink
from kernel.runtime.cluster_events import (
    ExecutionStateChanged,
    JobStatusChanged,
    JobSubmitted,
    SinkOutputPrinted,
    TaskMetricsSampled,
    UserMetricSampled,
)
from kernel.lifecycle.compiler import CompiledJob
from kernel.contracts.backend import JobResult
from kernel.errors import UsageError
from kernel.runtime.graph.job import DistributionPattern
from kernel.lifecycle.pythonenv.options import PythonOptions
from kernel.runtime.streaming.operators.factory import create_operator
from kernel.runtime.streaming.outputs import DiscardingOutput
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo, print_to_stdout
from kernel.lifecycle.summary import VertexSummary
from plugins.spark.events import SparkStageCompleted
from plugins.spark.bootstrap import target_subtask
from plugins.spark.executor import (
    FAILURE_MARK,
    DriverChannel,
    SubtaskRunner,
    Wiring,
)
from plugins.spark.failures import python_exception
from plugins.spark.options import SparkOptions
from plugins.spark.shipping import Shipment
from plugins.spark.sinks import DRIVER_SINK_KINDS, SentToDriver

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run


class SparkBackendError(UsageError):
    """A job the spark backend cannot run as asked (bad input: exit code 2)."""


class DriverRuntime(OperatorRuntime):
    """The runtime of the print and collect sinks on the driver: print output is recorded like
    the local runtime's."""

    def __init__(self, run: Any, info: TaskInfo, job_id: str) -> None:
        super().__init__(info, run.rng.stream, batch=True, auto_watermark_interval=0)
        self.run = run
        self.job_id = job_id

    def now_ms(self) -> int:
        return self.run.clock.now_ms()

    def schedule(self, when_ms: int, callback: Any) -> Any:
        return None

    def write_stdout(self, text: str, sink: str = "", lines: int = 0) -> None:
        print_to_stdout(text)
        info = self.info
        self.run.bus.emit(SinkOutputPrinted(time=self.run.clock.now(), job_id=self.job_id, vertex_id=info.vertex_id,
                                            vertex_name=info.task_name, subtask=info.subtask, attempt=0, sink=sink,
                                            lines=lines, text=text))


class SparkBackend:
    name = "spark"

    def __init__(self, config: Any) -> None:
        self.config = config
        self.options = config.section(SparkOptions)
        self.spark: Any = None
        self.created = False

    def prepare(self, compiled: CompiledJob) -> None:
        """Refuse what Spark cannot run, then get the SparkSession (before the run starts)."""
        self._check(compiled)
        self.spark, self.created = self._session()

    def execute(self, compiled: CompiledJob, run: Run) -> JobResult:
        job_graph = compiled.job_graph
        spark, created = self.spark, self.created
        version = spark.version
        graph = run.build_execution_graph(job_graph)
        status, failure = "FINISHED", ""
        self.persisted: list[Any] = []
        driver = spark.sparkContext.accumulator([], DriverChannel())
        sent = SentToDriver([])
        try:
            shipment = Shipment(spark.sparkContext, run.python_environment)
            shipment.check(["plugins.spark.executor"])
            self._emit_job(run, job_graph, "CREATED", "RUNNING")
            for ev in graph.vertices():
                self._state(run, job_graph.job_id, ev.job_vertex.job_vertex, ev.subtask, "CREATED", "SCHEDULED", run.clock.now())
            try:
                self._run_vertices(spark, run, compiled, graph, driver, shipment)
            finally:  # what finished subtasks sent, also when a later one failed
                sent = SentToDriver(driver.value)
            self._run_sinks(run, compiled, sent.blocks)
            self._commit(sent)
        except _Failed as failed:
            status, failure = "FAILED", failed.failure
            sent.discard()
        finally:
            for rdd in self.persisted:
                rdd.unpersist()
            if created:
                spark.stop()
        metrics = sent.metrics
        for vertex in job_graph.topological_order():
            for subtask in range(vertex.parallelism):
                self._report_subtask(run, job_graph.job_id, vertex, subtask, metrics.get((vertex.id, subtask)),
                                     status, failure)
        self._emit_job(run, job_graph, "RUNNING", status, failure.splitlines()[0] if failure else "")
        return JobResult(
            status=status, failure=failure, vertices=self._summaries(compiled, metrics),
            notes=[f"spark {version} ({self.options.master}): {len(job_graph.vertices)} job vertices as Spark "
                   "stages, BATCH execution"],
            details={"metrics": metrics},
        )

    # -- checks and Spark ---------------------------------------------------------------------

    def _check(self, compiled: CompiledJob) -> None:
        if self.config.get("rill.clock") != "realtime":
            raise SparkBackendError("the spark backend runs under the realtime clock (rill.clock = realtime)")
        for key in ("execution.state-recovery.path", "rill.stop-with-savepoint"):
            if self.config.get(key) is not None:
                raise SparkBackendError(f"{key}: the spark backend runs bounded jobs in BATCH mode, which take and "
                                        "restore no savepoints; use the local backend")
        for node in compiled.stream_graph.nodes.values():
            spec = node.operator
            if spec.kind == "sink_writer" and not isinstance(spec.function, FileSink):
                raise SparkBackendError(f"sink {node.name!r} ({spec.function.describe()}): the spark backend writes "
                                        "FileSinks only; run Kafka jobs on the local backend (plugins.workers=spark "
                                        "puts its TaskExecutors on a Spark cluster)")
            if spec.kind == "source" and not bool(getattr(spec.function, "is_bounded", lambda: True)()):
                raise SparkBackendError(
                    f"source {node.name!r} is unbounded: the spark backend runs bounded jobs only (Flink's BATCH "
                    "execution mode); run unbounded jobs on the local backend")

    def _session(self) -> tuple[Any, bool]:
        from plugins.spark.session import spark_session

        return spark_session(self.options, python_executable=self.config.section(PythonOptions).executable)

    # -- vertices -----------------------------------------------------------------------------

    def _run_vertices(self, spark: Any, run: Any, compiled: CompiledJob, graph: Any, driver: Any,
                      shipment: Shipment) -> None:
        """Run each vertex as a Spark job, in topological order: its subtasks are the tasks of
        a stage that writes their output edges as a shuffle (a blocking exchange, as Flink's
        batch shuffle) for the consumers' stages to read. The subtasks send what the driver
        gets through the accumulator ``driver``; their runners reach the executors with what
        ``shipment`` shipped."""
        job_graph = compiled.job_graph
        edges = [edge for vertex in job_graph.topological_order() for edge in vertex.inputs]
        wiring = _wiring(graph, job_graph, edges)
        context = spark.sparkContext
        shuffled: dict[int, Any] = {}  # job edge index -> its records, partitioned by consumer subtask
        for vertex in job_graph.topological_order():
            runner = shipment.wrap(SubtaskRunner(vertex, compiled.stream_graph, wiring,
                                                 graph.job_vertex(vertex.id).max_parallelism, run.seed, driver,
                                                 run.config.section(PythonOptions).metric_enabled,
                                                 in_files_directory=bool(run.python_environment.info.archives)))
            if not vertex.inputs:
                rdd = context.parallelize(range(vertex.parallelism), vertex.parallelism)
            else:
                parts = [shuffled.pop(wiring.edges[edge.stream_edge.edge_id]) for edge in vertex.inputs]
                rdd = parts[0] if len(parts) == 1 else context.union(parts)  # one partitioner: p partitions
            result = rdd.mapPartitionsWithIndex(runner)
            feeds = [index for index, edge in enumerate(edges) if edge.source.producer.id == vertex.id]
            if len(feeds) > 1:
                result.persist()  # computed once for its several edges
                self.persisted.append(result)
            for index in feeds:
                records = result if len(feeds) == 1 else \
                    result.filter(lambda item, index=index: item[0] == index).map(lambda item: item[1])
                shuffled[index] = records.partitionBy(edges[index].target.parallelism, target_subtask)
            self._run_spark_job(run, context, job_graph.job_id, vertex, [shuffled[index] for index in feeds],
                                result)

    def _run_spark_job(self, run: Any, context: Any, job_id: str, vertex: Any, shuffles: list[Any],
                       result: Any) -> None:
        """The Spark job of a vertex: its stage writes the shuffle files of its edges (only
        that stage runs), or, for a vertex that feeds no edge, computes it."""
        group = f"rill-{run.id}-{vertex.id}"
        context.setJobGroup(group, f"rill {run.id}: {vertex.name}")
        started = time.time_ns()
        try:
            for shuffled in shuffles:
                _write_shuffle(context, shuffled)
            if not shuffles:
                result._jrdd.count()
        except Exception as exc:  # a Spark job failed: which subtask, which operator
            raise _Failed(_describe(exc, vertex)) from None
        finally:
            context.setJobGroup("", "")
        self._record_stages(run, job_id, vertex, context, group, started)

    def _record_stages(self, run: Any, job_id: str, vertex: Any, context: Any, group: str, started: int) -> None:
        tracker = context.statusTracker()
        for spark_job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(spark_job)
            stages = list(info.stageIds) if info is not None else []
            tasks = sum((tracker.getStageInfo(s).numTasks if tracker.getStageInfo(s) is not None else 0) for s in stages)
            run.bus.emit(SparkStageCompleted(
                time=run.clock.now(), job_id=job_id, vertex_id=vertex.id, vertex_name=vertex.name,
                spark_job_id=spark_job, stage_ids=stages, tasks=tasks,
                duration_ms=(time.time_ns() - started) / NS_PER_MS))

    def _run_sinks(self, run: Any, compiled: CompiledJob, blocks: dict[tuple[int, int], list[bytes]]) -> None:
        """The records of print and collect sinks came to the driver; each of their subtasks
        runs here, in order."""
        import pickle

        job_graph, stream_graph = compiled.job_graph, compiled.stream_graph
        for vertex in job_graph.topological_order():
            sinks = [n for n in vertex.chained_node_ids if stream_graph.nodes[n].operator.kind in DRIVER_SINK_KINDS]
            for node_id in sinks:
                node = stream_graph.nodes[node_id]
                for subtask in range(vertex.parallelism):
                    info = TaskInfo(vertex.name, subtask, vertex.parallelism, vertex.max_parallelism, 0,
                                    vertex_id=vertex.id)
                    sink = create_operator(node, DriverRuntime(run, info, job_graph.job_id))
                    sink.output = DiscardingOutput()
                    sink.open()
                    try:
                        for blob in blocks.get((node_id, subtask), ()):
                            values, timestamps = pickle.loads(blob)
                            sink.process_batch(values, timestamps)
                        sink.end_input()
                        sink.finish()
                    except Exception as exc:
                        raise _Failed(f"{vertex.name} ({subtask + 1}/{vertex.parallelism}) failed in operator "
                                      f"{node.name!r}: {type(exc).__name__}: {exc}") from None
                    finally:
                        sink.close()

    def _commit(self, sent: SentToDriver) -> None:
        """Every Spark job succeeded: FileSink's parts become visible (Flink's committer)."""
        try:
            sent.commit()
        except OSError as exc:
            raise _Failed(f"committing FileSink parts failed: {type(exc).__name__}: {exc}") from None

    # -- events -------------------------------------------------------------------------------

    def _emit_job(self, run: Any, job_graph: Any, old: str, new: str, reason: str = "") -> None:
        if old == "CREATED":
            run.bus.emit(JobSubmitted(time=run.clock.now(), job_id=job_graph.job_id, job_name=job_graph.job_name))
        run.bus.emit(JobStatusChanged(time=run.clock.now(), job_id=job_graph.job_id, old_status=old, new_status=new,
                                      reason=reason))

    def _state(self, run: Any, job_id: str, vertex: Any, subtask: int, old: str, new: str, at: int,
               failure: str = "") -> None:
        run.bus.emit(ExecutionStateChanged(time=at, job_id=job_id, vertex_id=vertex.id, vertex_name=vertex.name,
                                           subtask=subtask, old_state=old, new_state=new, resource_id="spark",
                                           failure=failure))

    def _report_subtask(self, run: Any, job_id: str, vertex: Any, subtask: int, values: dict | None, status: str,
                        failure: str) -> None:
        """The subtask's states as its Spark task lived them, and one metrics sample."""
        if values is None:  # its Spark task failed, or never ran or finished (the job failed)
            failed = status == "FAILED" and failure.startswith(f"{vertex.name} ({subtask + 1}/{vertex.parallelism})")
            end = "FINISHED" if status == "FINISHED" else "FAILED" if failed else "CANCELED"
            self._state(run, job_id, vertex, subtask, "SCHEDULED", end, run.clock.now(), failure if failed else "")
            return
        started, ended = values["started"], values["ended"]
        for old, new, at in (("SCHEDULED", "DEPLOYING", started), ("DEPLOYING", "INITIALIZING", started),
                             ("INITIALIZING", "RUNNING", started), ("RUNNING", "FINISHED", ended)):
            self._state(run, job_id, vertex, subtask, old, new, at)
        interval = max(ended - started, 1) / NS_PER_MS
        seconds = interval / 1000
        run.bus.emit(TaskMetricsSampled(
            time=ended, job_id=job_id, vertex_id=vertex.id, vertex_name=vertex.name, subtask=subtask,
            interval_ms=interval, idle_ms=0.0, busy_ms=1000.0, back_pressured_ms=0.0,
            records_in=values["records_in"], records_out=values["records_out"],
            records_in_per_second=values["records_in"] / seconds, records_out_per_second=values["records_out"] / seconds,
            final=True, late_records_dropped=values.get("late_records_dropped", 0),
            timers_fired=values.get("timers_fired", 0), windows_fired=values.get("windows_fired", 0)))
        for row in values.get("user_metrics", ()):
            run.bus.emit(UserMetricSampled(time=ended, job_id=job_id, vertex_id=vertex.id, vertex_name=vertex.name,
                                           subtask=subtask, interval_ms=interval, final=True, **row))

    def _summaries(self, compiled: CompiledJob, metrics: dict) -> list[VertexSummary]:
        summaries = []
        for vertex in compiled.job_graph.topological_order():
            values = [metrics.get((vertex.id, s)) for s in range(vertex.parallelism)]
            values = [v for v in values if v is not None]
            summaries.append(VertexSummary(
                name=vertex.name, parallelism=vertex.parallelism,
                records_in=sum(v["records_in"] for v in values), records_out=sum(v["records_out"] for v in values),
                busy_ratio=1.0 if values else 0.0, back_pressured_ratio=0.0))
        return summaries


class _Failed(Exception):
    def __init__(self, failure: str) -> None:
        super().__init__(failure)
        self.failure = failure


def _write_shuffle(context: Any, shuffled: Any) -> None:
    """Run just the map stage of a shuffled RDD (``SparkContext.submitMapStage``): the
    producer's tasks write the shuffle files its consumer's stage reads later."""
    jrdd = shuffled._jrdd.rdd()  # PySpark's partitionBy: the values of a ShuffledRDD of (partition, bytes)
    dependency = jrdd.dependencies().head().rdd().dependencies().head()
    if dependency.getClass().getSimpleName() != "ShuffleDependency":
        raise RuntimeError(f"unexpected RDD lineage of a partitionBy: {jrdd.toDebugString()}")
    context._jsc.sc().submitMapStage(dependency).get()


def _wiring(graph: Any, job_graph: Any, edges: list[Any]) -> Wiring:
    outputs = {vertex.id: 0 for vertex in job_graph.vertices}
    for edge in edges:
        outputs[edge.source.producer.id] += 1
    return Wiring(
        edges={edge.stream_edge.edge_id: index for index, edge in enumerate(edges)},
        targets=_edge_targets(graph, edges),
        consumer_max_parallelism={index: graph.job_vertex(edge.target.id).max_parallelism
                                  for index, edge in enumerate(edges)},
        consumer_inputs={index: max(edge.type_number - 1, 0) for index, edge in enumerate(edges)},
        outputs=outputs)


def _edge_targets(graph: Any, edges: list[Any]) -> dict[int, list[list[int]]]:
    """job edge index -> [producer subtask][channel] -> consumer subtask (the local wiring)."""
    targets: dict[int, list[list[int]]] = {}
    for index, edge in enumerate(edges):
        producer = graph.job_vertex(edge.source.producer.id)
        rows = []
        for ev in producer.vertices:
            partition = next(p for p in ev.produced if edge in p.result.consumers)
            if edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
                rows.append(list(range(edge.target.parallelism)))
            else:
                consumers = partition.consumer_vertices[partition.result.consumers.index(edge)]
                rows.append([c.subtask for c in consumers])
        targets[index] = rows
    return targets


_LOST_TASK = re.compile(r"Lost task (\d+)\.\d+ in stage [\d.]+ \(TID \d+\) \([^)]*\): ([\w.$]+): ([^\n]*)")


def _describe(exc: BaseException, vertex: Any) -> str:
    """The failure of a Spark job in rill's words: subtask, operator, error, traceback."""
    text = str(exc)
    start = text.find(FAILURE_MARK)
    if start >= 0:
        line = text[start + len(FAILURE_MARK):].splitlines()[0]
        try:
            info = json.loads(line)
        except ValueError:
            info = None
        if info is not None:
            return (f"{info['vertex']} ({info['subtask'] + 1}/{info['parallelism']}) failed in operator "
                    f"{info['operator']!r}: {info['error']}\n" + info.get("traceback", ""))
    lost = _LOST_TASK.search(text)
    if lost is not None:  # Spark's own failure of the task running a subtask
        subtask, error, message = int(lost.group(1)), lost.group(2).rsplit(".", 1)[-1], lost.group(3).strip()
        raised = python_exception(text)  # in the task's Python worker (not in an operator: its code or rill's)
        return (f"{vertex.name} ({subtask + 1}/{vertex.parallelism}) failed in Spark: "
                f"{raised or f'{error}: {message}'}\n{text}")
    first = python_exception(text) or next((line for line in text.splitlines() if line.strip()), type(exc).__name__)
    return f"{vertex.name} failed in Spark: {first}\n{text}"

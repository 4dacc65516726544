"""What runs inside Spark: one subtask of one job vertex per partition.

A ``SubtaskRunner`` is shipped (with the job graph and its user functions) to the Python
workers; for partition i it builds the vertex's operator chain for subtask i — the same
chain the local runtime runs — with a batch runtime, feeds it its input and yields the
records it sends into job edges, pickled in blocks (so a record that cannot be serialised
names the operator), keyed for Spark's shuffle: ``(target subtask, (consumer input, blob))``,
or ``(job edge, (target subtask, (consumer input, blob)))`` when the vertex feeds several
edges. User sinks and FileSink's writer run here too (:mod:`plugins.spark.sinks`). What goes
to the driver travels in a Spark accumulator, tagged with the vertex, the subtask and a token
of this computation of it:

* ``("s", vertex, subtask, token, node, blob)``: records for a print or collect sink, which
  runs on the driver;
* ``("c", vertex, subtask, token, node, committables)``: a FileSink writer's pending parts,
  which the driver commits once the job succeeded;
* ``("m", vertex, subtask, token, metrics)``: records in/out, counters, the subtask's start
  and end (wall clock), and its user metrics sampled at its end.

The subtask's attempt number (``RuntimeContext.get_attempt_number``) is its Spark task's.
A subtask that fails closes its operators (a FileSink discards its parts) and raises.

BATCH semantics (Flink's batch runtime mode): the input is read completely; a keyed head gets
it sorted as Flink sorts it: key after key in the order of the keys' serialized bytes, each
key's records (of both inputs of a two-input operator, merged as Flink merges them) in
timestamp order, each key's timers firing before the next key's records — but a broadcast
operator reads its broadcast input whole before the other (Flink's batch broadcast operators
select it until it ends); no watermark but the final one,
so event-time timers (windows) fire at the end of input, processing-time timers after them.
Processing time is the wall clock, but a rate-limited source is read without waiting (its
pauses are skipped); callbacks an operator schedules on it (a FileSink's bucket checks) run
between blocks of records once it has passed them. An async operator's
coroutines run on an asyncio loop of the partition's own, driven whenever the operator waits
(its capacity is used up, the end of input): up to ``capacity`` requests in flight, in real time.
A failure is raised with ``FAILURE_MARK`` and a JSON description the driver reports.
"""

from __future__ import annotations

import gc
import heapq
import json
import os
import pickle
import time
import traceback
import uuid
from dataclasses import dataclass
from itertools import count
from typing import Any, Callable, Iterator

from kernel.clock import MAX_LONG, NS_PER_MS, NS_PER_S
from kernel.metrics.groups import TaskMetricGroup
from kernel.metrics.metrics import UPDATE_INTERVAL_SECONDS
from kernel.lifecycle.pythonenv.environment import WORKING_DIR_VARIABLE
from kernel.rng import SeededRandom
from kernel.runtime.streaming.async_io import BlockingAsyncExecutor
from kernel.runtime.streaming.chain import OperatorChain
from kernel.runtime.streaming.operators.factory import create_operator
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.runtime.streaming.outputs import Output
from kernel.runtime.streaming.partitioning import channel_selector
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo
from kernel.runtime.streaming.sorted_input import SortingDataInput
from kernel.runtime.streaming.sources import InputStatus
from kernel.lifecycle.tracebacks import describe
from plugins.spark.sinks import DRIVER_SINK_KINDS, DriverSink, FileSinkPartWriter

BLOCK = 8192
FAILURE_MARK = "RILL_SUBTASK_FAILED "


class DriverChannel:
    """The Spark accumulator parameter carrying items to the driver: lists, concatenated."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, items: list, more: list) -> list:  # noqa: N802  (Spark's name)
        items.extend(more)
        return items


class SubtaskFailure(RuntimeError):
    """Raised in a Spark task; its message carries ``FAILURE_MARK`` and a JSON description."""


class BatchRuntime(OperatorRuntime):
    """Operators' view inside a Spark task: the wall clock as processing time, except that
    the task never waits for it (a rate-limited source's pauses are skipped), no watermarks
    but the final one — so no watermark generator, valve or alignment is ever asked for (the
    watermarking plugin has nothing to do in BATCH execution, as in Flink)."""

    def __init__(self, info: TaskInfo, seed: int, metrics_enabled: bool) -> None:
        rng = SeededRandom(seed)
        super().__init__(info, rng.stream, batch=True, auto_watermark_interval=0,
                         user_metrics=TaskMetricGroup(), metrics_enabled=metrics_enabled)
        #: when the user metrics' meters are updated next (every 5 s of wall-clock time)
        self.meters_due = time.time_ns() + UPDATE_INTERVAL_SECONDS * NS_PER_S
        self.skipped_ms = 0
        self.counters: dict[str, int] = {}
        self.scheduled: list[tuple[int, int, Callable[[], None]]] = []  # a heap: (time, order, callback)
        self._order = count()

    def now_ms(self) -> int:
        return time.time_ns() // NS_PER_MS + self.skipped_ms

    def skip_to(self, when_ms: int) -> None:
        """Processing time jumps to ``when_ms`` instead of waiting for it."""
        self.skipped_ms += max(when_ms - self.now_ms(), 1)

    def schedule(self, when_ms: int, callback: Callable[[], None]) -> Any:
        """Run ``callback`` between blocks of records once processing time has passed
        ``when_ms`` (keyed processing-time timers never come here: in BATCH they fire at the
        end of input)."""
        heapq.heappush(self.scheduled, (when_ms, next(self._order), callback))

    def run_due(self) -> None:
        """Run the scheduled callbacks whose time has come (and update the user metrics' meters
        every 5 s of the task's wall-clock life)."""
        if self.user_metrics is not None and time.time_ns() >= self.meters_due:
            self.meters_due += UPDATE_INTERVAL_SECONDS * NS_PER_S
            self.user_metrics.update_meters()
        scheduled = self.scheduled
        if scheduled:
            now = self.now_ms()
            while scheduled and scheduled[0][0] <= now:
                heapq.heappop(scheduled)[2]()

    def count(self, metric: str, amount: int = 1) -> None:
        self.counters[metric] = self.counters.get(metric, 0) + amount

    def create_async_executor(self, operator_name: str) -> Any:
        """An asyncio loop of the partition's own, run while the operator waits."""
        return BlockingAsyncExecutor(self.now_ms)


class _Counter:
    records_out = 0


class EdgeOutput(Output):
    """A chain's output into a job edge: routes blocks of records to consumer subtasks."""

    def __init__(self, runner: SubtaskRunner, edge_index: int, targets: list[int], selector: Any, operator: str) -> None:
        self.runner = runner
        self.edge_index = edge_index
        self.consumer_input = runner.wiring.consumer_inputs[edge_index]
        self.targets = targets  # channel -> consumer subtask
        self.selector = selector
        self.operator = operator
        self.buffers: dict[int, tuple[list, list | None]] = {}

    def collect(self, values, timestamps):
        for channel, part_values, part_ts in self.selector.route(values, timestamps):
            buffered = self.buffers.get(channel)
            if buffered is None:
                buffered = self.buffers[channel] = ([], [] if part_ts is not None else None)
            buffered[0].extend(part_values)
            if buffered[1] is not None:
                buffered[1].extend(part_ts if part_ts is not None else [None] * len(part_values))
            if len(buffered[0]) >= BLOCK:
                self.flush(channel)

    def flush(self, channel: int | None = None) -> None:
        runner = self.runner
        for ch in ([channel] if channel is not None else list(self.buffers)):
            values, timestamps = self.buffers.pop(ch)
            item = (self.targets[ch], (self.consumer_input, runner.pickle(values, timestamps, self.operator)))
            runner.out.append(item if runner.single_edge else (self.edge_index, item))

    def emit_watermark(self, timestamp):
        """Batch: consumers take the end of their input as the final watermark."""

    def emit_watermark_status(self, idle):
        pass

    def emit_latency_marker(self, marker):
        pass


@dataclass
class Wiring:
    """How the job's edges connect subtasks (the same for every vertex of a job)."""

    edges: dict[str, int]  # stream edge id -> job edge index
    targets: dict[int, list[list[int]]]  # job edge index -> [producer subtask][channel] -> consumer subtask
    consumer_max_parallelism: dict[int, int]  # job edge index -> key groups of its consumer
    consumer_inputs: dict[int, int]  # job edge index -> input (0 / 1) of the consumer's head
    outputs: dict[str, int]  # job vertex id -> number of job edges it feeds


class SubtaskRunner:
    def __init__(self, vertex: Any, graph: Any, wiring: Wiring, max_parallelism: int, seed: int,
                 driver: Any, metrics_enabled: bool = True, in_files_directory: bool = False) -> None:
        self.vertex = vertex
        self.metrics_enabled = metrics_enabled
        #: the job has archives: it works where Spark unpacked them (PyFlink's working directory)
        self.in_files_directory = in_files_directory
        self.graph = graph
        self.wiring = wiring
        self.max_parallelism = max_parallelism
        self.seed = seed
        self.driver = driver  # the Spark accumulator carrying metrics, sink records and committables
        self.is_source = not vertex.inputs
        self.single_edge = wiring.outputs[vertex.id] == 1

    # -- in the Spark task -------------------------------------------------------------------

    def __call__(self, index: int, records: Iterator[Any]) -> Iterator[Any]:
        """The subtask, with Python's cyclic garbage collector paused: a batch task allocates
        millions of records that reference counting frees, and the collector's passes over
        them would cost a tenth of its time; it resumes when the subtask ends."""
        collecting = gc.isenabled()
        gc.disable()
        cwd, named = os.getcwd(), os.environ.get(WORKING_DIR_VARIABLE)
        if self.in_files_directory:
            from pyspark import SparkFiles

            os.chdir(SparkFiles.getRootDirectory())
            os.environ[WORKING_DIR_VARIABLE] = SparkFiles.getRootDirectory()
        try:
            yield from self._run(index, records)
        finally:
            os.chdir(cwd)
            if self.in_files_directory:
                if named is None:
                    os.environ.pop(WORKING_DIR_VARIABLE, None)
                else:
                    os.environ[WORKING_DIR_VARIABLE] = named
            if collecting:
                gc.enable()

    def _run(self, index: int, records: Iterator[Any]) -> Iterator[Any]:
        self.subtask = index
        self.token = uuid.uuid4().hex
        self.out: list[Any] = []
        vertex = self.vertex
        info = TaskInfo(vertex.name, index, vertex.parallelism, self.max_parallelism, _spark_attempt(),
                        vertex_id=vertex.id)
        runtime = BatchRuntime(info, self.seed, self.metrics_enabled)
        started = time.time_ns()
        counter = _Counter()
        chain = None
        records_in = 0
        try:
            chain = OperatorChain(vertex, self.graph, runtime, self._network_output(runtime), counter,
                                  create=self._create)
            chain.open()
            if self.is_source:
                yield from self._read_source(chain, runtime)
            else:
                records_in = yield from self._process_input(chain, runtime, records)
            chain.finish()
            for output in self._outputs:
                output.flush()
        except BaseException as exc:  # SystemExit or KeyboardInterrupt of a user function too
            if chain is not None:
                _close_failed(chain)
            if isinstance(exc, SubtaskFailure):
                raise
            raise self._failure(exc, chain) from None
        try:
            chain.close()
        except BaseException as exc:
            _abort_file_sinks(chain)
            raise self._failure(exc, chain) from None
        yield from self.out
        self.out = []
        ended = time.time_ns()
        user_metrics = runtime.user_metrics.sample(final=True) if runtime.user_metrics is not None else []
        self.to_driver("m", {"started": started, "ended": ended, "records_in": records_in,
                             "records_out": counter.records_out, "user_metrics": user_metrics, **runtime.counters})

    def to_driver(self, kind: str, *payload: Any) -> None:
        self.driver.add([(kind, self.vertex.id, self.subtask, self.token, *payload)])

    def _create(self, node: Any, runtime: OperatorRuntime) -> StreamOperator:
        """The node's operator; print and collect sinks stand in for the driver's, a FileSink
        writer hands its parts to the driver's commit."""
        kind = node.operator.kind
        if kind in DRIVER_SINK_KINDS:
            operator: StreamOperator = DriverSink(node.operator, node, runtime)
        elif kind == "sink_writer":
            operator = FileSinkPartWriter(node.operator, node, runtime)
        else:
            return create_operator(node, runtime)
        operator.runner = self
        return operator

    def _network_output(self, runtime: BatchRuntime) -> Callable[[Any], Output]:
        self._outputs: list[EdgeOutput] = []
        rng = SeededRandom(self.seed).stream(f"network/{self.vertex.id}/{self.subtask}")

        def output(edge: Any) -> Output:
            wiring = self.wiring
            index = wiring.edges[edge.edge_id]
            targets = wiring.targets[index][self.subtask]
            selector = channel_selector(edge.partitioner, len(targets), wiring.consumer_max_parallelism[index], rng,
                                        runtime)
            result = EdgeOutput(self, index, targets, selector, self.graph.nodes[edge.source_id].name)
            self._outputs.append(result)
            return result

        return output

    def _read_source(self, chain: OperatorChain, runtime: BatchRuntime) -> Iterator[Any]:
        head = chain.head
        while True:
            status = head.emit_next(BLOCK)
            runtime.run_due()
            if self.out:
                yield from self.out
                self.out = []
            if status is InputStatus.END_OF_INPUT:
                return
            if status is InputStatus.NOTHING_AVAILABLE:
                when = head.reader.available_at()
                if when is None:
                    raise RuntimeError(f"source {head.name!r} has nothing to read and does not end: the spark "
                                       "backend runs bounded sources only")
                runtime.skip_to(when)

    def _process_input(self, chain: OperatorChain, runtime: BatchRuntime, records: Iterator[Any]) -> Iterator[Any]:
        head = chain.head
        two_input = self.vertex.invokable == "TwoInputStreamTask"
        inputs: list[list[tuple[list, list | None]]] = [[], []]
        for _, (input_index, blob) in records:
            inputs[input_index].append(pickle.loads(blob))
        count = sum(len(values) for part in inputs for values, _ in part)
        processes = (head.process_batch1, head.process_batch2) if two_input else (head.process_batch,)
        for index, values, timestamps, key_ends in _runs(head, inputs[:len(processes)]):
            processes[index](values, timestamps)
            if key_ends:
                head.end_key()
            runtime.run_due()
            if len(self.out) > 64:
                yield from self.out
                self.out = []
        if two_input:
            head.process_watermark_input(0, MAX_LONG)
            head.process_watermark_input(1, MAX_LONG)
        else:
            head.process_watermark(MAX_LONG)
        return count

    # -- serialisation and failures --------------------------------------------------------------

    def pickle(self, values: list, timestamps: list | None, operator: str) -> bytes:
        try:
            return pickle.dumps((values, timestamps), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            sample = next((v for v in values if not _picklable(v)), None)
            raise SubtaskFailure(FAILURE_MARK + json.dumps({
                "vertex": self.vertex.name, "subtask": self.subtask, "parallelism": self.vertex.parallelism,
                "operator": operator,
                "error": f"the spark backend cannot serialise a record of {operator!r}: {type(exc).__name__}: {exc}"
                         + (f" (record {sample!r:.200})" if sample is not None else ""),
                "traceback": "",
            })) from None

    def _failure(self, exc: BaseException, chain: OperatorChain | None) -> SubtaskFailure:
        operator = getattr(exc, "rill_operator", None) or (chain.head.name if chain is not None else self.vertex.name)
        return SubtaskFailure(FAILURE_MARK + json.dumps({
            "vertex": self.vertex.name, "subtask": self.subtask, "parallelism": self.vertex.parallelism,
            "operator": operator,
            "error": describe(exc), "traceback": "".join(traceback.format_exception(exc)),
        }))


def _spark_attempt() -> int:
    """The attempt number of the Spark task running this subtask (0 outside one)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


def _close_failed(chain: OperatorChain) -> None:
    """Close the operators of a failed subtask (user sinks' ``close``; FileSink writers discard
    their parts); the subtask's own failure is what it reports."""
    try:
        chain.close()
    except BaseException:  # the subtask already failed; closing must not hide that
        pass
    _abort_file_sinks(chain)


def _abort_file_sinks(chain: OperatorChain) -> None:
    for operator in chain.operators:
        if isinstance(operator, FileSinkPartWriter):
            operator.abort()


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
        return True
    except Exception:
        return False


def _runs(head: StreamOperator, inputs: list[list[tuple[list, list | None]]]) -> Iterator[tuple[int, list, list | None, bool]]:
    """The order the head gets its input in, as ``(input index, values, timestamps, whether a
    key's records end with them)``: an input a two-input head selects (a broadcast operator's
    broadcast input) whole and first, in arrival order, then the rest — a keyed head's keyed
    inputs sorted as the local runtime sorts them (``kernel.runtime.streaming.sorted_input``), else
    each input in arrival order, the first input first. A two-input head hears of each input's
    end (the selected one before the others are read)."""
    selected = head.next_selection() if len(inputs) == 2 else None
    if selected is not None:
        for values, timestamps in inputs[selected]:
            yield selected, values, timestamps, False
        head.end_input_of(selected)
        inputs = [[] if index == selected else batches for index, batches in enumerate(inputs)]
    if head.keyed:
        sorting = SortingDataInput(head)
        for index, batches in enumerate(inputs):
            for values, timestamps in batches:
                sorting.add(values, timestamps, index)
        yield from sorting.runs()
    else:
        for index, batches in enumerate(inputs):
            for values, timestamps in batches:
                yield index, values, timestamps, False
    if len(inputs) == 2:
        for index in (0, 1):
            if index != selected:
                head.end_input_of(index)

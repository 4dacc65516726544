"""StreamTask: one execution attempt of one subtask, driven by its MailboxProcessor.

Life cycle as Flink's: DEPLOYING -> INITIALIZING (build the operator chain, network
partitions and gates, open operators tail to head) -> RUNNING (the mailbox loop) ->
end of input: ``end_input``/``finish`` head to tail, end of partition downstream, close ->
FINISHED. A user-code exception fails the task with the operator's name and traceback.

Default action: if an output partition has no free buffer, suspend with the back-pressure
timer; else take the next element of the input (or read a source batch); with no input,
suspend with the idle timer. Both suspensions resume on availability.
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from kernel.cluster_events import SinkOutputPrinted, SourceFileOpened, WatermarkAdvanced, WatermarkStatusChanged
from kernel.graph.job import JobGraph, JobVertex
from kernel.graph.stream import StreamEdge
from kernel.loop import TimerGroup
from kernel.streaming.alignment import AlignmentMember
from kernel.streaming.chain import OperatorChain
from kernel.streaming.elements import MIN_LONG, EndOfPartition, LatencyMarker, RecordBatch, Watermark, WatermarkStatus
from kernel.streaming.outputs import blame
from kernel.streaming.partitioning import channel_selector
from kernel.streaming.runtime import OperatorRuntime, TaskInfo, print_to_stdout
from kernel.streaming.sources import InputStatus
from kernel.tracebacks import describe
from plugins.local.metrics import TaskIOMetrics
from plugins.local.network import InputGate, RecordWriterOutput, ResultPartition

#: file inputs up to this size are recorded in the event log with their content
MAX_RECORDED_INPUT = 64 << 20

if TYPE_CHECKING:
    from kernel.run import Run
    from plugins.local.network import ShuffleEnvironment, NetworkSettings


@dataclass
class ProducedPartition:
    partition_id: str
    num_subpartitions: int
    blocking: bool
    edge: StreamEdge
    consumer_max_parallelism: int


@dataclass
class ConsumedInput:
    type_number: int  # 0: the one input; 1/2: inputs of a two-input operator
    channels: list[tuple[str, int]]  # (partition id, subpartition index) per channel


@dataclass
class TaskDeploymentDescriptor:
    job_id: str
    job_graph: JobGraph
    vertex: JobVertex
    subtask: int
    attempt: int
    max_parallelism: int
    allocation_id: str
    produced: list[ProducedPartition]
    inputs: list[ConsumedInput]
    alignment: Any = None  # the job's watermark alignment coordinator, if sources align
    committer: Any = None  # the job's SinkCommitter, when sinks stage their output


class LocalOperatorRuntime(OperatorRuntime):
    """Operators' view of the local cluster: the run's clock, timers as mailbox mails."""

    def __init__(self, task: StreamTask, info: TaskInfo) -> None:
        run = task.run
        graph = task.deployment.job_graph.stream_graph
        interval = graph.auto_watermark_interval if graph.auto_watermark_interval is not None else task.options.auto_watermark_interval
        super().__init__(info, run.rng.stream, batch=graph.runtime_mode == "BATCH", auto_watermark_interval=interval)
        self.task = task
        self.clock = run.clock

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def schedule(self, when_ms: int, callback: Callable[[], None]) -> Any:
        return self.task.schedule_mail(when_ms * 1_000_000, callback, "timer")

    def create_watermark_generator(self, strategy: Any, activity_clock: Callable[[], int] | None = None) -> Any:
        return self.task.run.plugin_manager.hook.create_watermark_generator(
            strategy=strategy, run=self.task.run, activity_clock=activity_clock or self.now_ms)

    def join_watermark_alignment(self, strategy: Any, on_announce: Callable[[int, int], None]) -> Any:
        task = self.task
        coordinator = task.deployment.alignment
        if coordinator is None:
            return None
        d = task.deployment
        member = AlignmentMember(d.vertex.id, d.vertex.name, d.subtask, d.attempt)

        def deliver(max_allowed: int, group_min: int) -> None:
            task.schedule_mail(task.run.clock.now(), lambda: on_announce(max_allowed, group_min), "watermark alignment")

        return coordinator.join(strategy, member, deliver)

    def create_watermark_valve(self, num_channels: int) -> Any:
        return self.task.run.plugin_manager.hook.create_watermark_valve(num_channels=num_channels, run=self.task.run)

    def write_stdout(self, text: str, sink: str = "", lines: int = 0) -> None:
        print_to_stdout(text)
        d = self.task.deployment
        self.task.run.bus.emit(SinkOutputPrinted(
            time=self.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, sink=sink, lines=lines, text=text,
        ))

    def open_input(self, path: str) -> str:
        run = self.task.run
        actual = run.input_overrides.get(path, path)
        content = b""
        with open(actual, "rb") as handle:
            data = handle.read(MAX_RECORDED_INPUT + 1)
            digest = hashlib.sha256(data)
            size = len(data)
            if size <= MAX_RECORDED_INPUT:
                content = data
            else:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
        d = self.task.deployment
        run.bus.emit(SourceFileOpened(
            time=self.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, path=path, size=size, sha256=digest.hexdigest(), content=content,
        ))
        return actual

    def emit_event(self, event: Any) -> None:
        self.task.run.bus.emit(event)

    def count(self, metric: str, amount: int = 1) -> None:
        counters = self.task.metrics.counters
        counters[metric] = counters.get(metric, 0) + amount

    def record_latency(self, marker: Any) -> None:
        self.task.metrics.record_latency(self.clock.now_ms() - marker.marked_time)


class _ValveOutput:
    """Where an input's StatusWatermarkValve sends what it emits: into the head operator."""

    __slots__ = ("task", "index")

    def __init__(self, task: StreamTask, index: int) -> None:
        self.task = task
        self.index = index

    def emit_watermark(self, timestamp: int) -> None:
        task = self.task
        task.watermark_reporter.input_watermark(self.index, timestamp)
        task.on_input_watermark(self.index, timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        task = self.task
        task.watermark_reporter.input_status(self.index, idle)
        if task.two_input:
            task.chain.head.process_watermark_status_input(self.index, idle)
        else:
            task.chain.head.process_watermark_status(idle)


class WatermarkReporter:
    """Records a task's watermark progress: what each input valve passes on, and what leaves
    the chain (into the network, or reaching a sink at its end) once per task."""

    def __init__(self, task: StreamTask) -> None:
        self.task = task
        self.last_output = MIN_LONG
        self.output_idle = False
        self.inputs: dict[int, int] = {}  # input gate -> last watermark its valve passed on
        self.statuses: dict[str, str] = {}  # "output" / "input N" -> last status reported

    def _emit(self, event_type: type, **fields: Any) -> None:
        task = self.task
        d = task.deployment
        task.run.bus.emit(event_type(
            time=task.run.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, **fields,
        ))

    def input_watermark(self, index: int, timestamp: int) -> None:
        self.inputs[index] = timestamp
        self._emit(WatermarkAdvanced, direction="input", input=index, watermark=timestamp)

    def input_status(self, index: int, idle: bool) -> None:
        self.statuses[f"input {index}"] = "IDLE" if idle else "ACTIVE"
        self._emit(WatermarkStatusChanged, direction="input", input=index, status="IDLE" if idle else "ACTIVE")

    def output_watermark(self, timestamp: int) -> None:
        if timestamp > self.last_output:
            self.last_output = timestamp
            self._emit(WatermarkAdvanced, direction="output", watermark=timestamp, event_time=self._event_time())

    def _event_time(self) -> int | None:
        """The largest event time the chain's last timestamp-assigning operator has seen."""
        chain = self.task.chain
        for operator in reversed(chain.operators if chain is not None else ()):
            probe = getattr(operator, "max_event_time", None)
            if probe is not None:
                return probe()
        return None

    def output_status(self, idle: bool) -> None:
        if idle != self.output_idle:
            self.output_idle = idle
            self.statuses["output"] = "IDLE" if idle else "ACTIVE"
            self._emit(WatermarkStatusChanged, direction="output", status="IDLE" if idle else "ACTIVE")


class StreamTask:
    def __init__(self, deployment: TaskDeploymentDescriptor, run: Run, shuffle: ShuffleEnvironment,
                 settings: NetworkSettings, options: Any, report: Callable[[StreamTask, str, str], None]) -> None:
        self.deployment = deployment
        self.run = run
        self.shuffle = shuffle
        self.settings = settings
        self.options = options
        self.report = report
        vertex = deployment.vertex
        self.vertex = vertex
        self.name = f"{vertex.name} ({deployment.subtask + 1}/{vertex.parallelism})"
        self.state = "DEPLOYING"
        self.legacy_source = vertex.invokable == "SourceStreamTask"
        self.is_source = vertex.invokable in ("SourceStreamTask", "SourceOperatorStreamTask")
        self.two_input = vertex.invokable == "TwoInputStreamTask"
        self.metrics = TaskIOMetrics(busy_time_enabled=not self.legacy_source, started=run.clock.now())
        self.last_sample: dict[str, Any] | None = None  # the metrics of the latest sample
        self.watermark_reporter = WatermarkReporter(self)
        self._timers = TimerGroup()
        self.partitions: list[ResultPartition] = []
        self.gates: list[InputGate] = []
        self.valves: list[Any] = []
        self.mailbox: Any = None
        self.chain: OperatorChain | None = None
        self.failure: str | None = None
        #: work takes this many times as long (an injected slow TaskExecutor)
        self.slowdown = 1.0
        #: called with the task once its chain exists (injected faults wrap operators)
        self.instrument: Callable[[StreamTask], None] | None = None

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def attempt_key(self) -> tuple[str, int, int]:
        d = self.deployment
        return d.vertex.id, d.subtask, d.attempt

    def _set_state(self, state: str, failure: str = "") -> None:
        self.state = state
        self.report(self, state, failure)

    def start(self) -> None:
        if self.state != "DEPLOYING":
            return
        self._set_state("INITIALIZING")
        try:
            self._initialize()
        except BaseException as exc:  # SystemExit or KeyboardInterrupt of a user function too
            self.fail(exc)
            return
        self._set_state("RUNNING")
        self._start_flusher()
        self._start_latency_markers()
        self.mailbox.schedule()

    def _initialize(self) -> None:
        d = self.deployment
        graph = d.job_graph.stream_graph
        info = TaskInfo(d.vertex.name, d.subtask, d.vertex.parallelism, d.max_parallelism, d.attempt,
                        vertex_id=d.vertex.id)
        self.runtime = LocalOperatorRuntime(self, info)
        self.runtime.sink_committer = d.committer
        rng = self.run.rng.stream(f"network/{d.vertex.id}/{d.subtask}")
        flush_always = self.options.buffer_timeout_enabled and self.vertex_buffer_timeout() == 0
        outputs: dict[int, RecordWriterOutput] = {}
        for produced in d.produced:
            partition = ResultPartition(produced.partition_id, produced.num_subpartitions, self.settings, produced.blocking)
            selector = channel_selector(produced.edge.partitioner, produced.num_subpartitions,
                                        produced.consumer_max_parallelism, rng)
            outputs[id(produced.edge)] = RecordWriterOutput(partition, selector, rng, flush_always, self.watermark_reporter)
            self.partitions.append(partition)
        self.chain = OperatorChain(d.vertex, graph, self.runtime, lambda edge: outputs[id(edge)], self.metrics,
                                   self.watermark_reporter)
        if self.instrument is not None:
            self.instrument(self)
        for consumed in sorted(d.inputs, key=lambda c: c.type_number):
            gate = InputGate(len(consumed.channels), self.settings)
            gate.index = len(self.gates)  # type: ignore[attr-defined]
            self.gates.append(gate)
            self.valves.append(self.runtime.create_watermark_valve(len(consumed.channels)))
        self.mailbox = self.run.plugin_manager.hook.create_mailbox_processor(task=self, run=self.run)
        self.mailbox.slowdown = self.slowdown
        self.chain.open()
        for partition in self.partitions:
            self.shuffle.register_partition(partition)
        for gate, consumed in zip(self.gates, sorted(d.inputs, key=lambda c: c.type_number)):
            for channel, (partition_id, subpartition) in zip(gate.channels, consumed.channels):
                self.shuffle.register_channel(partition_id, subpartition, channel)
        self._valve_outputs = [_ValveOutput(self, i) for i in range(len(self.gates))]

    def schedule_mail(self, when_ns: int, callback: Callable[[], None], description: str) -> Any:
        """Run ``callback`` as a mail of this task once the clock reaches ``when_ns``."""
        mailbox = self.mailbox
        return self._timers.add(self.run.loop.call_at(when_ns, lambda: mailbox.execute(callback, description)))

    def _start_flusher(self) -> None:
        options = self.options
        if not self.partitions or not options.buffer_timeout_enabled:
            return
        timeout = self.vertex_buffer_timeout()
        if timeout <= 0:
            return
        period = timeout * 1_000_000

        def flush() -> None:
            if self.state == "RUNNING":
                for partition in self.partitions:
                    partition.flush_all()
                self._timers.add(self.run.loop.call_later(period, flush))

        self._timers.add(self.run.loop.call_later(period, flush))

    def vertex_buffer_timeout(self) -> int:
        graph = self.deployment.job_graph.stream_graph
        head = graph.nodes[self.vertex.head_node_id]
        return head.buffer_timeout if head.buffer_timeout >= 0 else self.options.buffer_timeout

    def _start_latency_markers(self) -> None:
        interval = self.options.latency_interval
        if not self.is_source or interval <= 0:
            return
        period = interval * 1_000_000
        head = self.chain.head
        operator_id = self.vertex.operator_ids[self.vertex.head_node_id]

        def mark() -> None:
            head.output.emit_latency_marker(LatencyMarker(self.run.clock.now_ms(), operator_id, self.deployment.subtask))
            self.schedule_mail(self.run.clock.now() + period, mark, "latency marker")

        self.schedule_mail(self.run.clock.now() + period, mark, "latency marker")

    # -- the default action -------------------------------------------------------------------

    def _outputs_available(self, mailbox: Any) -> bool:
        for partition in self.partitions:
            if not partition.is_available():
                suspension = mailbox.suspend_default_action(self.metrics.soft_back_pressured, "back_pressure")
                resume = suspension.resume
                if self.is_source:  # a back-pressured source is not idle
                    activity = self.chain.head.activity
                    activity.pause("back_pressure")

                    def resume() -> None:
                        activity.resume("back_pressure")
                        suspension.resume()
                partition.when_available(resume)
                return False
        return True

    def default_action(self, mailbox: Any) -> None:
        if not self._outputs_available(mailbox):
            return
        if self.is_source:
            self._read_source(mailbox)
        else:
            self._process_input(mailbox)

    def _read_source(self, mailbox: Any) -> None:
        status = self.chain.head.emit_next(self.settings.records_per_buffer)
        if status is InputStatus.END_OF_INPUT:
            self._end_of_input()
        elif status is InputStatus.NOTHING_AVAILABLE:
            suspension = mailbox.suspend_default_action(self.metrics.idle, "idle")
            head = self.chain.head
            if not head.when_available(suspension.resume):
                when = head.reader.available_at()
                wake_ms = when if when is not None else self.run.clock.now_ms() + 100
                self._timers.add(self.run.loop.call_at(wake_ms * 1_000_000, suspension.resume))

    def _process_input(self, mailbox: Any) -> None:
        for gate in self.gates:
            if gate.has_data():
                self._handle(gate, *gate.poll())
                if len(self.gates) > 1:  # round robin between the inputs
                    self.gates.append(self.gates.pop(self.gates.index(gate)))
                return
        suspension = mailbox.suspend_default_action(self.metrics.idle, "idle")
        for gate in self.gates:
            gate.when_available(suspension.resume)

    def _handle(self, gate: InputGate, channel: Any, item: Any) -> None:
        head = self.chain.head
        index = gate.index  # type: ignore[attr-defined]
        kind = type(item)
        if kind is RecordBatch:
            self.metrics.records_in += len(item.values)
            try:
                if self.two_input:
                    (head.process_batch1 if index == 0 else head.process_batch2)(item.values, item.timestamps)
                else:
                    head.process_batch(item.values, item.timestamps)
            except BaseException as exc:
                blame(exc, head.name)
                raise
            channel.recycle()
        elif kind is Watermark:
            self.valves[index].input_watermark(item.timestamp, channel.index, self._valve_outputs[index])
        elif kind is WatermarkStatus:
            self.valves[index].input_watermark_status(item.idle, channel.index, self._valve_outputs[index])
        elif kind is LatencyMarker:
            head.process_latency_marker(item)
        elif kind is EndOfPartition:
            channel.finished = True
            gate.finished_channels += 1
            if all(g.finished for g in self.gates):
                self._end_of_input()

    def on_input_watermark(self, index: int, timestamp: int) -> None:
        head = self.chain.head
        try:
            if self.two_input:
                head.process_watermark_input(index, timestamp)
            else:
                head.process_watermark(timestamp)
        except BaseException as exc:
            blame(exc, head.name)
            raise

    # -- ending -------------------------------------------------------------------------------

    def _end_of_input(self) -> None:
        """Finish as a mail: after the work the last step charged (simulated time) is done."""
        self.mailbox.suspend_default_action(None, "finishing")
        self.mailbox.execute(self._finish, "finish")

    def _finish(self) -> None:
        self.chain.finish()
        for partition in self.partitions:
            partition.finish()
        self._stop_timers()
        self.mailbox.stop()
        self.chain.close()
        self._set_state("FINISHED")

    def _stop_timers(self) -> None:
        self._timers.cancel_all()

    def fail_from_mailbox(self, exc: BaseException) -> None:
        self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        if self.state in ("FINISHED", "FAILED", "CANCELED"):
            return
        operator = getattr(exc, "rill_operator", None) or (self.chain.head.name if self.chain else self.vertex.name)
        self.failure = (
            f"{self.name} failed in operator {operator!r}: {describe(exc)}\n"
            + "".join(traceback.format_exception(exc))
        )
        self._teardown()
        self._set_state("FAILED", self.failure)

    def cancel(self) -> None:
        if self.state in ("FINISHED", "FAILED", "CANCELED"):
            return
        self._teardown()
        self._set_state("CANCELED")

    def _teardown(self) -> None:
        self._stop_timers()
        if self.mailbox is not None:
            self.mailbox.stop()
        if self.chain is not None:
            try:
                self.chain.close()
            except BaseException:  # the task already ended badly; closing must not hide that
                pass
        for partition in self.partitions:
            partition.release()
            self.shuffle.release(partition.partition_id)

    def suspension_changed(self, reason: str, suspended: bool) -> None:
        bus = self.run.bus
        if bus.debug:
            from kernel.cluster_events import MailboxResumed, MailboxSuspended

            d = self.deployment
            event = MailboxSuspended if suspended else MailboxResumed
            bus.emit(event(time=self.run.clock.now(), vertex_id=d.vertex.id, subtask=d.subtask,
                           attempt=d.attempt, reason=reason))

"""StreamTask: one execution attempt of one subtask, driven by its MailboxProcessor.

Life cycle as Flink's: DEPLOYING -> INITIALIZING (build the operator chain, network
partitions and gates, open operators tail to head) -> RUNNING (the mailbox loop) ->
end of input: ``end_input``/``finish`` head to tail, end of partition downstream, close ->
FINISHED. A user-code exception fails the task with the operator's name and traceback.

Default action: if an output partition has no free buffer, or an async operator of the chain
has used up its capacity, suspend, back pressured (:meth:`TaskIOMetrics.output_available`,
:mod:`.async_io`); else read a source batch, or take the next element of the input
(:mod:`.input_processor`); with no input, suspend, idle. The suspensions resume on
availability. At the end of input an operator with async requests in flight finishes them
before the operators after it finish.

The task's thread of control is an event loop (``loop``): the run's under the simulated clock,
else a thread's of its own (:mod:`.task_thread`): a task blocked in user code stalls only itself.
Other threads reach it only through that loop (mails, :meth:`post`); once cancelling was
requested, an error the interrupted user code raises ends the task CANCELED, not FAILED.

Checkpoints: the task restores its operators' state after opening them (and queues the
in-flight data an unaligned checkpoint persisted), checkpoints (:mod:`.checkpoints`) when
triggered or when its barrier handler aligned a barrier, its operators' work in flight
finished first; as Flink's FLIP-147, a task that ended its input finishes its operators, ends
the data downstream and finishes once a checkpoint taken after that completed.

Stop-with-savepoint (Flink's synchronous savepoint): a source told to stop ends its data
before the savepoint's barrier, draining (final watermark, operators finish) or not (state and
timers kept, timers stopped); every task downstream ends the same way and finishes once that
savepoint completed.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any, Callable

from kernel.runtime.checkpointing.channel_state import INPUT, OUTPUT, restore
from kernel.runtime.checkpointing.options import CheckpointingOptions, checkpointing_enabled
from kernel.runtime.checkpointing.snapshots import RestoredOperatorState, collector_paused
from kernel.clock import NS_PER_MS
from kernel.loop import TimerGroup
from kernel.options import ExecutionOptions
from kernel.runtime.streaming.chain import OperatorChain
from kernel.runtime.streaming.elements import END_OF_DATA, EndOfData, LatencyMarker
from kernel.runtime.streaming.keygroups import key_group_range
from kernel.runtime.streaming.partitioning import channel_selector
from kernel.runtime.streaming.runtime import TaskInfo
from kernel.runtime.streaming.sources import InputStatus
from kernel.lifecycle.tracebacks import describe
from plugins.local import messages as m
from plugins.local.events import MailboxResumed, MailboxSuspended
from plugins.local.network.input_gate import InputGate
from plugins.local.network.partition import ResultPartition
from plugins.local.network.record_writer import RecordWriter
from plugins.local.network.wire import edge_type
from plugins.local.tasks.checkpoints import SubtaskCheckpointCoordinator
from plugins.local.tasks.input_processor import StreamInputProcessor
from plugins.local.tasks.io_metrics import TaskIOMetrics
from plugins.local.tasks.operator_runtime import LocalOperatorRuntime
from plugins.local.tasks.record_writer_output import RecordWriterOutput
from plugins.local.tasks.output_flusher import EmissionTimes, buffer_timeout, create_output_flusher, emission_times
from plugins.local.tasks.watermark_reporter import WatermarkReporter

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.assignment import TaskRestore
    from kernel.runtime.checkpointing.failures import CheckpointFailureReason
    from kernel.runtime.checkpointing.format import ChannelState
    from kernel.runtime.checkpointing.messages import CheckpointMetrics
    from kernel.contracts.checkpointing import CheckpointBarrierHandler
    from kernel.contracts.mailbox import MailboxProcessor
    from kernel.runtime.streaming.elements import CheckpointBarrier
    from kernel.lifecycle.run import Run
    from plugins.local.deployment import TaskDeploymentDescriptor
    from plugins.local.network.shuffle import NetworkSettings, ShuffleEnvironment
    from plugins.local.tasks.async_io import LocalAsyncExecutor


class StreamTask:
    def __init__(self, deployment: TaskDeploymentDescriptor, run: Run, shuffle: ShuffleEnvironment,
                 settings: NetworkSettings, report: Callable[[StreamTask, str, str], None]) -> None:
        self.deployment = deployment
        self.run = run
        self.shuffle = shuffle
        self.settings = settings
        self.execution_options = run.config.section(ExecutionOptions)
        self.report = report
        self.loop = run.loop  # the event loop of the task's thread of control (a task thread sets its own)
        #: cancelling was requested from outside: what the task raises now ends it CANCELED
        self.cancel_requested = False
        #: failing was requested from outside (its cause): what the task raises now fails it with this
        self.external_failure: BaseException | None = None
        self.vertex = vertex = deployment.vertex
        self.name = f"{vertex.name} ({deployment.subtask + 1}/{vertex.parallelism})"
        self.state = "DEPLOYING"
        self.legacy_source = vertex.invokable == "SourceStreamTask"
        self.is_source = vertex.invokable in ("SourceStreamTask", "SourceOperatorStreamTask")
        self.two_input = vertex.invokable == "TwoInputStreamTask"
        self.metrics = TaskIOMetrics(busy_time_enabled=not self.legacy_source, started=run.clock.now(), config=run.config)
        self.last_sample: dict[str, Any] | None = None  # the metrics of the latest sample
        self.watermark_reporter = WatermarkReporter(self)
        self._timers = TimerGroup()
        self._flusher: Any = None  # the output flusher (:mod:`.output_flusher`)
        self.emission_times: EmissionTimes | None = None  # simulated: what it emits when, in virtual time
        #: what ``kernel.clock.sleep`` does in the task's threads (set by a task thread)
        self.sleeper: Callable[[float], None] | None = None
        self.partitions: list[ResultPartition] = []
        self.buffer_timeouts: list[int] = []  # of each partition's producing operator, ms
        self.input: StreamInputProcessor | None = None
        self.mailbox: MailboxProcessor | None = None
        self.chain: OperatorChain | None = None
        self._source_head: Any = None  # the head of a source task (its activity clock pauses under back pressure)
        #: where the chain's async operators run their coroutines
        self.async_executors: list[LocalAsyncExecutor] = []
        self.failure: str | None = None
        #: work takes this many times as long (an injected slow TaskExecutor)
        self.slowdown = 1.0
        #: called with the task once its chain exists (injected faults wrap operators)
        self.instrument: Callable[[StreamTask], None] | None = None
        #: sends a message to the task's JobMaster (set by the TaskExecutor)
        self.tell_job_master: Callable[[Any], None] = lambda message: None
        #: checkpoints: the task's part, its input's barrier handler, whether it waits for a final checkpoint
        self.checkpoints: SubtaskCheckpointCoordinator | None = None
        self.barriers: CheckpointBarrierHandler | None = None
        self.final_checkpoint = False
        self.input_held = False  # a checkpoint waits for the operators' work in flight: no input meanwhile
        self._held: Any = None  # the default action's suspension while the input is held
        self.data_ending = False  # the operators are finishing
        self.data_ended = False  # operators finished, end of data sent downstream
        self.input_ended = False  # every input channel (or the source) ended
        self.restored_finished = False  # restored from a checkpoint taken after its end of data
        self.stopping = False  # a stop-with-savepoint ends it: it finishes once that savepoint completed
        self.drained = True  # its data ended with its operators finished (not by a stop without drain)
        self._end_event: EndOfData = END_OF_DATA
        self._when_data_ended: Callable[[], None] | None = None

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def attempt_key(self) -> tuple[str, int, int]:
        d = self.deployment
        return d.vertex.id, d.subtask, d.attempt

    @property
    def job_id(self) -> str:
        return self.deployment.job_id

    @property
    def info(self) -> TaskInfo:
        return self.runtime.info

    def _set_state(self, state: str, failure: str = "") -> None:
        self.state = state
        if self.checkpoints is not None and state == "FINISHED":
            self.checkpoints.finished()
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
        options = self.run.config.section(CheckpointingOptions)  # periodic checkpoints (not savepoints): sinks commit at them
        self.runtime.checkpointing = d.checkpoint_storage is not None and checkpointing_enabled(options, d.job_graph.runtime_mode)
        self.runtime.checkpoint_interval_ms = options.interval if self.runtime.checkpointing else 0
        rng = self.run.rng.stream(f"network/{d.vertex.id}/{d.subtask}")
        self.emission_times, counter = emission_times(self)
        outputs: dict[int, RecordWriterOutput] = {}
        for produced in d.produced:
            partition = ResultPartition(produced.partition_id, produced.num_subpartitions, self.settings, produced.blocking,
                                        edge_type(graph, produced.edge), self.shuffle.lock, self.loop)
            selector = channel_selector(produced.edge.partitioner, produced.num_subpartitions,
                                        produced.consumer_max_parallelism, rng, self.runtime)
            timeout = buffer_timeout(graph.nodes[produced.edge.source_id], self.execution_options)
            outputs[id(produced.edge)] = RecordWriterOutput(RecordWriter(partition, selector, rng, timeout == 0),
                                                            self.watermark_reporter, self.emission_times)
            self.partitions.append(partition)
            self.buffer_timeouts.append(timeout)
        self.chain = OperatorChain(d.vertex, graph, self.runtime, lambda edge: outputs[id(edge)], counter,
                                   self.watermark_reporter)
        if self.instrument is not None:
            self.instrument(self)
        inputs = sorted(d.inputs, key=lambda c: c.type_number)
        gates = [self.shuffle.create_input_gate(consumed, index, graph, self.loop) for index, consumed in enumerate(inputs)]
        valves = [self.runtime.create_watermark_valve(len(consumed.channels)) for consumed in inputs]
        self.mailbox = self.run.plugin_manager.hook.create_mailbox_processor(task=self, run=self.run)
        self.mailbox.slowdown = self.slowdown
        self.chain.open()
        if d.checkpoint_storage is not None:
            self._set_up_checkpointing(d.checkpoint_storage, gates)
        self.input = StreamInputProcessor(self, gates, valves, self.barriers)
        for partition in self.partitions:
            self.shuffle.register_partition(partition)
        for gate, consumed in zip(gates, inputs):
            self.shuffle.connect_input_gate(gate, consumed, self._channel_failed)
        self._source_head = self.chain.head if self.is_source else None

    def _set_up_checkpointing(self, storage: Any, gates: list[InputGate]) -> None:
        self.checkpoints = SubtaskCheckpointCoordinator(self, storage)
        options = self.run.config.section(CheckpointingOptions)
        self.final_checkpoint = options.after_tasks_finish and checkpointing_enabled(
            options, self.deployment.job_graph.runtime_mode)
        channels = [channel for gate in gates for channel in gate.channels]
        if channels:
            self.barriers = self.run.plugin_manager.hook.create_checkpoint_barrier_handler(
                task=self, channels=channels, run=self.run)
        if self.deployment.restore is not None:
            self._restore(self.deployment.restore, gates)

    def _restore(self, restore: TaskRestore, gates: list[InputGate]) -> None:
        """Give the operators the state of the checkpoint (read from the handles assigned), and
        queue the in-flight data it persisted in the task's channels and subpartitions."""
        info = self.runtime.info
        key_groups = key_group_range(info.max_parallelism, info.parallelism, info.subtask)
        with collector_paused():
            restored = {
                operator.node_id: RestoredOperatorState.read(operator.handles, restore.directory, key_groups,
                                                             info.subtask, info.parallelism, operator.old_parallelism)
                for operator in restore.operators}
            self.chain.initialize_state(restored)
        head = restored.get(self.vertex.head_node_id)
        if head is not None:
            self._restore_in_flight(head.channels, gates)
        self.checkpoints.last_checkpoint_id = restore.checkpoint_id
        if restore.finished:
            self.restored_finished = True
            if self.is_source:
                self.chain.head.reader.finished = True

    def _restore_in_flight(self, channels: list[ChannelState], gates: list[InputGate]) -> None:
        for state in channels:
            elements = [restore(data) for data in state.elements]
            if state.kind == INPUT:
                gates[state.gate].channels[state.index].restore_in_flight(elements)
            elif state.kind == OUTPUT:
                self.partitions[state.gate].subpartitions[state.index].restore_in_flight(elements)

    def schedule_mail(self, when_ns: int, callback: Callable[[], None], description: str) -> Any:
        """Run ``callback`` as a mail of this task once the clock reaches ``when_ns`` (in the
        task's thread)."""
        mailbox = self.mailbox
        return self._timers.add(self.loop.call_at(when_ns, lambda: mailbox.execute(callback, description)))

    def _channel_failed(self, error: BaseException) -> None:
        """A remote input channel's connection broke (in the TaskExecutor's loop)."""
        self.post(lambda: self.fail(error), "remote input channel failed")

    def post(self, callback: Callable[[], None], description: str) -> None:
        """Run ``callback`` as a mail of this task as soon as the clock allows (from any thread)."""
        self.loop.call_in_thread(lambda: self.schedule_mail(self.run.clock.now(), callback, description))

    def _start_flusher(self) -> None:
        """Flink's OutputFlusher (:mod:`.output_flusher`): what the chain emitted leaves
        within the buffer timeout, whatever the task does next."""
        self._flusher = create_output_flusher(self, list(zip(self.partitions, self.buffer_timeouts)))
        if self._flusher is not None:
            self._flusher.start()

    def hand_over_emitted(self) -> None:
        """A user function is about to sleep (``kernel.clock.sleep``): what the chain's
        operators emitted so far goes on now, in this thread (:mod:`kernel.runtime.streaming.handover`)."""
        chain = self.chain
        if chain is not None and self.state == "RUNNING":
            chain.relay()

    def _start_latency_markers(self) -> None:
        interval = self.execution_options.latency_interval
        if not self.is_source or interval <= 0:
            return
        period = interval * NS_PER_MS
        head = self.chain.head
        operator_id = self.vertex.operator_ids[self.vertex.head_node_id]

        def mark() -> None:
            head.output.emit_latency_marker(LatencyMarker(self.run.clock.now_ms(), operator_id, self.deployment.subtask))
            self.schedule_mail(self.run.clock.now() + period, mark, "latency marker")

        self.schedule_mail(self.run.clock.now() + period, mark, "latency marker")

    # -- the default action -------------------------------------------------------------------

    def default_action(self, mailbox: MailboxProcessor) -> None:
        if self.input_held:
            self._held = mailbox.suspend_default_action(None, "checkpoint")
            return
        if not self.metrics.output_available(mailbox, self.partitions, self._source_head):
            return
        if self.async_executors and self._blocked_by_async_io(mailbox):
            return
        if self.is_source:
            self._read_source(mailbox)
        else:
            self.input.process_input(mailbox)

    def _blocked_by_async_io(self, mailbox: MailboxProcessor) -> bool:
        from plugins.local.tasks.async_io import blocked_by_async_io  # asyncio only for jobs with async I/O

        return blocked_by_async_io(self.async_executors, self.metrics, mailbox, self._source_head)

    def _read_source(self, mailbox: MailboxProcessor) -> None:
        status = self.chain.head.emit_next(self.settings.records_per_buffer)
        if status is InputStatus.END_OF_INPUT:
            if any(executor.blocked for executor in self.async_executors):
                return  # its last records wait to enter an async operator: the source ends once they are in
            self.end_of_input()
        elif status is InputStatus.NOTHING_AVAILABLE:
            suspension = mailbox.suspend_default_action(self.metrics.idle, "idle")
            head = self.chain.head
            if not head.when_available(suspension.resume):
                when = head.reader.available_at()
                wake_ms = when if when is not None else self.run.clock.now_ms() + 100
                self._timers.add(self.loop.call_at(wake_ms * NS_PER_MS, suspension.resume))

    # -- checkpoints (the CheckpointableTask of the barrier handler) ----------------------------

    def trigger_checkpoint_on_barrier(self, barrier: CheckpointBarrier, metrics: CheckpointMetrics) -> None:
        self.checkpoints.checkpoint(barrier, metrics, awaiting_inputs=barrier.unaligned)

    def abort_checkpoint_on_barrier(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self.checkpoints.abort_on_barrier(checkpoint_id, reason)

    def input_channel_state_completed(self, checkpoint_id: int, channels: list[ChannelState],
                                      metrics: CheckpointMetrics) -> None:
        self.checkpoints.input_channel_state_completed(checkpoint_id, channels, metrics)

    def unfinished_channels(self) -> list[Any]:
        """The input channels that have not delivered their end of partition."""
        if self.input is None:
            return []
        return [channel for gate in self.input.gate_of_input for channel in gate.channels if not channel.finished]

    def hold_input(self, held: bool) -> None:
        """Take no input (and read no source) while held."""
        self.input_held = held
        if not held and self._held is not None:
            suspension, self._held = self._held, None
            suspension.resume()

    # -- ending -------------------------------------------------------------------------------

    def stop_for_savepoint(self, drain: bool, then: Callable[[], None]) -> None:
        """The savepoint of a stop-with-savepoint is to be taken (a mail): a source stops reading
        and ends its data, then ``then()`` takes the savepoint; the default action, running again,
        sees the stopped source and ends the input."""
        if not self.is_source or self.data_ending:
            then()
            return
        self.chain.head.stop(drain)
        self._when_data_ended = then
        self._end_data(drain, stop=True)
        suspension = self.mailbox.suspension
        if suspension is not None:
            suspension.resume()

    def end_of_input(self) -> None:
        """Finish as a mail: after the work the last step charged (simulated time) is done.
        With a final checkpoint (or a stopping savepoint) to wait for, the wait is idle time."""
        self.input_ended = True
        if not (self.final_checkpoint or self.stopping):
            self.mailbox.suspend_default_action(None, "finishing")
            self.mailbox.execute(self._finish, "finish")
            return
        self.mailbox.suspend_default_action(self.metrics.idle, "finishing")
        self.mailbox.execute(self._await_final_checkpoint, "final checkpoint")

    def end_of_data(self, drain: bool = True, stop: bool = False) -> None:
        """Every input channel ended its data: finish the operators (as a mail) — unless a
        stop-with-savepoint without drain ended it."""
        self.stopping = self.stopping or stop
        self.mailbox.execute(lambda: self._end_data(drain, stop), "end of data")

    def _end_data(self, drain: bool = True, stop: bool = False) -> None:
        if self.data_ending:
            return
        self.data_ending = True
        self.stopping = self.stopping or stop
        self.drained = drain
        if stop or not drain:
            self._end_event = EndOfData(drain, stop)
        if self.restored_finished or not drain:
            self._data_ended()
        else:
            self._finish_operators()

    def _finish_operators(self, start: int = 0) -> None:
        if self.chain.finish(self._finish_operators, start):
            self._data_ended()  # else an operator finishes its requests in flight first and resumes here

    def _data_ended(self) -> None:
        self.data_ended = True
        for partition in self.partitions:
            partition.broadcast_event(self._end_event)
        self._stop_timers()
        self.checkpoints.end_of_data(() if self.stopping else self.partitions)  # stopping: the savepoint is final
        d = self.deployment
        self.tell_job_master(m.NotifyEndOfData(d.job_id, d.vertex.id, d.subtask, d.attempt))
        then, self._when_data_ended = self._when_data_ended, None
        if then is not None:
            then()

    def _await_final_checkpoint(self) -> None:
        self._end_data()
        if self.data_ended and self.checkpoints.final_completed:
            self._finish_task()

    def final_checkpoint_completed(self) -> None:
        """A checkpoint taken after the end of data completed: finish once the input ended."""
        if self.input_ended:
            self._finish_task()

    def _finish_task(self) -> None:
        for partition in self.partitions:
            partition.finish()
        self._finished()

    def _finished(self) -> None:
        self.mailbox.stop()
        self.chain.close()
        self._set_state("FINISHED")

    def _finish(self, start: int = 0) -> None:
        if self.stopping and start == 0:  # a stop-with-savepoint came first: it decides how the task ends
            self._await_final_checkpoint()
            return
        if not self.chain.finish(self._finish, start):
            return  # an operator finishes its requests in flight first: its last one resumes here
        for partition in self.partitions:
            partition.finish()
        self._stop_timers()
        self._finished()

    def _stop_timers(self) -> None:
        self._timers.cancel_all()
        if self._flusher is not None:
            self._flusher.stop()

    def fail_from_mailbox(self, exc: BaseException) -> None:
        self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        if self.state in ("FINISHED", "FAILED", "CANCELED"):
            return
        if self.external_failure is not None:
            exc = self.external_failure
        elif self.cancel_requested:
            self.cancel()
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
        if self.emission_times is not None:
            self.emission_times.cancel()
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
        if self.input is not None:
            for gate in self.input.gate_of_input:
                self.shuffle.release_input_gate(gate)

    def suspension_changed(self, reason: str, suspended: bool) -> None:
        bus = self.run.bus
        if bus.debug:
            d = self.deployment
            event = MailboxSuspended if suspended else MailboxResumed
            bus.emit(event(time=self.run.clock.now(), vertex_id=d.vertex.id, subtask=d.subtask,
                           attempt=d.attempt, reason=reason))

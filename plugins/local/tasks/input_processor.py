"""The input of a task that reads input gates (Flink's StreamOneInputProcessor and
StreamTwoInputProcessor with their network inputs).

Each step takes the next element of the gates, round robin between them — or of the gate a
two-input head selects (Flink's InputSelectable: a broadcast operator in BATCH reads its
broadcast input to the end first): a record batch goes to the head operator and its buffer
back to the channel (giving its credit back); watermarks and watermark statuses go through
the gate's valve (the watermarking plugin's StatusWatermarkValve) into the head; latency
markers go to the head; checkpoint barriers, cancellation markers and ended channels go to the
barrier handler (when the job takes checkpoints), and so do priority events (unaligned
barriers, barrier announcements), at once, as a mail; once every channel ended its data the task's
operators finish, once every channel of every gate has ended the task's input has ended (a
two-input head hears of each gate that ended). With nothing to read, the task is idle until a
gate it may read has data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.runtime.streaming.elements import (
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfData,
    EndOfPartition,
    LatencyMarker,
    RecordBatch,
    Watermark,
    WatermarkStatus,
)
from kernel.runtime.streaming.outputs import blaming
from kernel.runtime.streaming.sorted_input import SortingDataInput

if TYPE_CHECKING:
    from kernel.contracts.checkpointing import CheckpointBarrierHandler
    from kernel.contracts.mailbox import MailboxProcessor
    from kernel.contracts.watermarks import WatermarkValve
    from plugins.local.network.input_gate import InputGate
    from plugins.local.tasks.streamtask import StreamTask


class ValveOutput:
    """Where an input gate's valve sends what it emits: into the head operator."""

    __slots__ = ("processor", "index")

    def __init__(self, processor: StreamInputProcessor, index: int) -> None:
        self.processor = processor
        self.index = index

    def emit_watermark(self, timestamp: int) -> None:
        processor = self.processor
        processor.reporter.input_watermark(self.index, timestamp)
        processor.on_input_watermark(self.index, timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        processor = self.processor
        processor.reporter.input_status(self.index, idle)
        if processor.two_input:
            processor.head.process_watermark_status_input(self.index, idle)
        else:
            processor.head.process_watermark_status(idle)


class StreamInputProcessor:
    def __init__(self, task: StreamTask, gates: list[InputGate], valves: list[WatermarkValve],
                 barriers: CheckpointBarrierHandler | None = None) -> None:
        self.task = task
        self.gates = gates  # reordered: the gate just read goes last
        self.gate_of_input = list(gates)
        self.valves = valves
        self.barriers = barriers
        self.head = task.chain.head
        #: what the head raises names it
        self.head_blaming = blaming(self.head.name)
        self.metrics = task.metrics
        self.two_input = task.two_input
        self.reporter = task.watermark_reporter
        self.valve_outputs = [ValveOutput(self, i) for i in range(len(gates))]
        #: BATCH: a keyed head reads its keyed inputs sorted (and hears of their end after that)
        self.sorting = SortingDataInput(self.head) if task.runtime.batch and self.head.keyed else None
        self._ended_sorted_inputs: list[int] = []
        #: how the inputs' data ended: all drained, or some stopped with a savepoint
        self.drain = True
        self.stop = False
        if barriers is not None:
            for gate in gates:
                gate.priority_listener = self._priority_event_arrived

    def _priority_event_arrived(self) -> None:
        self.task.mailbox.execute(self.process_priority_events, "priority event")

    def process_priority_events(self) -> None:
        """Hand every priority event to the barrier handler."""
        barriers = self.barriers
        for gate in self.gate_of_input:
            polled = gate.poll_priority()
            while polled is not None:
                channel, item = polled
                if type(item) is BarrierAnnouncement:
                    barriers.process_barrier_announcement(item.barrier, channel)
                else:
                    barriers.process_barrier(item, channel)
                polled = gate.poll_priority()

    def process_input(self, mailbox: MailboxProcessor) -> None:
        selected = self.head.next_selection() if self.two_input else None
        gates = self.gates if selected is None else [self.gate_of_input[selected]]
        for gate in gates:
            if gate.has_data():
                self._handle(gate, *gate.poll())
                if len(gates) > 1:  # round robin between the inputs
                    gates.append(gates.pop(gates.index(gate)))
                return
        suspension = mailbox.suspend_default_action(self.metrics.idle, "idle")
        for gate in gates:
            gate.when_available(suspension.resume)

    def _handle(self, gate: InputGate, channel: Any, item: Any) -> None:
        head = self.head
        index = gate.index
        kind = type(item)
        if kind is RecordBatch:
            self.metrics.records_in += len(item.values)
            with self.head_blaming:
                if self.sorting is not None and self.sorting.sorts(index):
                    self.sorting.add(item.values, item.timestamps, index)
                elif self.two_input:
                    (head.process_batch1 if index == 0 else head.process_batch2)(item.values, item.timestamps)
                else:
                    head.process_batch(item.values, item.timestamps)
            barriers = self.barriers
            if barriers is not None and barriers.aligning:
                barriers.records_processed(item.values)
            channel.recycle()
        elif kind is Watermark:
            self.valves[index].input_watermark(item.timestamp, channel.index, self.valve_outputs[index])
        elif kind is WatermarkStatus:
            self.valves[index].input_watermark_status(item.idle, channel.index, self.valve_outputs[index])
        elif kind is LatencyMarker:
            head.process_latency_marker(item)
        elif kind is CheckpointBarrier:
            self.barriers.process_barrier(item, channel)
        elif kind is CancelCheckpointMarker:
            self.barriers.process_cancel_marker(item, channel)
        elif kind is EndOfData:
            channel.data_ended = True
            channel.acknowledge_data_processed()
            self.drain = self.drain and item.drain
            self.stop = self.stop or item.stop
            if all(c.data_ended or c.finished for g in self.gates for c in g.channels):
                if self.sorting is not None:
                    self._end_sorted_input()
                self.task.end_of_data(self.drain, self.stop)
        elif kind is EndOfPartition:
            channel.finished = True
            gate.finished_channels += 1
            if self.barriers is not None:
                self.barriers.process_end_of_partition(channel)
            if self.two_input and gate.finished:
                if self.sorting is not None and self.sorting.sorts(index):
                    self._ended_sorted_inputs.append(index)
                else:
                    head.end_input_of(index)
            if all(g.finished for g in self.gates):
                if self.sorting is not None:
                    self._end_sorted_input()
                self.task.end_of_input()

    def _end_sorted_input(self) -> None:
        """The sorted input's data ended: the head reads it, then reads on unsorted (nothing)."""
        sorting, self.sorting = self.sorting, None
        with self.head_blaming:
            sorting.end_of_data()
            for index in self._ended_sorted_inputs:
                self.head.end_input_of(index)

    def on_input_watermark(self, index: int, timestamp: int) -> None:
        head = self.head
        if self.sorting is not None and self.sorting.sorts(index):
            self.sorting.hold_watermark(timestamp, index)
            return
        with self.head_blaming:
            if self.two_input:
                head.process_watermark_input(index, timestamp)
            else:
                head.process_watermark(timestamp)

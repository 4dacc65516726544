"""The network between tasks: result partitions, input gates, credit-based flow control.

Producer side: a :class:`ResultPartition` per produced partition, one :class:`Subpartition`
per consumer channel, and a buffer pool of ``subpartitions x buffers-per-channel + floating``
buffers. A record batch goes into the subpartition's open buffer; full (or flushed on buffer
timeout, or before an event) buffers queue in the subpartition and keep a producer buffer
until they are sent.

Consumer side: an :class:`InputGate` per input with an :class:`InputChannel` per consumed
subpartition. A buffer is only sent when the receiver has credit: a free exclusive buffer of
the channel (``buffers-per-channel``) or a free floating buffer of the gate
(``floating-buffers-per-gate``). The consumer returns the buffer after processing it, which
gives credit back. So a slow consumer keeps its buffers full, the producer's queue grows,
its pool runs dry, its record writer turns unavailable and the producer's mailbox suspends:
back pressure, hop by hop. Events (watermarks, end of partition) need no credit but never
overtake buffers. BLOCKING partitions (batch) hold everything until they are finished.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from random import Random
from typing import Any, Callable

from kernel.streaming.elements import END_OF_PARTITION, LatencyMarker, RecordBatch, Watermark, WatermarkStatus
from kernel.streaming.outputs import Output
from kernel.streaming.partitioning import ChannelSelector


@dataclass(frozen=True)
class NetworkSettings:
    buffers_per_channel: int = 2
    floating_buffers_per_gate: int = 8
    max_buffers_per_channel: int = 10
    records_per_buffer: int = 1024


class Subpartition:
    __slots__ = ("partition", "index", "values", "timestamps", "queue", "queued_buffers", "channel")

    def __init__(self, partition: ResultPartition, index: int) -> None:
        self.partition = partition
        self.index = index
        self.values: list | None = None  # the open buffer
        self.timestamps: list | None = None
        self.queue: deque[Any] = deque()  # finished buffers and events, not yet sent
        self.queued_buffers = 0
        self.channel: InputChannel | None = None

    def add(self, values: list, timestamps: list | None) -> None:
        partition = self.partition
        if self.values is None:
            partition.take_buffer()
            self.values = list(values)
            self.timestamps = list(timestamps) if timestamps is not None else None
        else:
            self.values.extend(values)
            if self.timestamps is not None:
                self.timestamps.extend(timestamps if timestamps is not None else [None] * len(values))
            elif timestamps is not None:
                self.timestamps = [None] * (len(self.values) - len(values)) + list(timestamps)
        if len(self.values) >= partition.records_per_buffer:
            self._finish_full_buffers()

    def _finish_full_buffers(self) -> None:
        partition, capacity = self.partition, self.partition.records_per_buffer
        values, timestamps = self.values, self.timestamps
        while len(values) >= capacity:
            self._enqueue_buffer(values[:capacity], timestamps[:capacity] if timestamps is not None else None)
            values = values[capacity:]
            timestamps = timestamps[capacity:] if timestamps is not None else None
            if values:
                partition.take_buffer()
        self.values = values or None
        self.timestamps = timestamps if values else None
        self.try_send()

    def _enqueue_buffer(self, values: list, timestamps: list | None) -> None:
        self.queue.append(RecordBatch(values, timestamps))
        self.queued_buffers += 1
        partition = self.partition
        if not partition.blocking and self.queued_buffers >= partition.settings.max_buffers_per_channel:
            self.partition.unavailable_subpartitions.add(self.index)

    def flush(self) -> None:
        """Finish the open buffer (buffer timeout, events, end of input)."""
        if self.values:
            self._enqueue_buffer(self.values, self.timestamps)
            self.values = self.timestamps = None
            self.try_send()

    def add_event(self, event: Any) -> None:
        self.flush()
        self.queue.append(event)
        self.try_send()

    def try_send(self) -> None:
        channel = self.channel
        partition = self.partition
        if channel is None or (partition.blocking and not partition.finished):
            return
        queue = self.queue
        sent_buffer = False
        while queue:
            item = queue[0]
            if type(item) is RecordBatch:
                if not channel.reserve():
                    break
                queue.popleft()
                self.queued_buffers -= 1
                if self.queued_buffers < partition.settings.max_buffers_per_channel:
                    partition.unavailable_subpartitions.discard(self.index)
                partition.recycle_buffer()
                sent_buffer = True
            else:
                queue.popleft()
            channel.deliver(item)
        if sent_buffer:
            partition.check_available()


class ResultPartition:
    """The producer side of one IntermediateResultPartition."""

    def __init__(self, partition_id: str, num_subpartitions: int, settings: NetworkSettings, blocking: bool) -> None:
        self.partition_id = partition_id
        self.settings = settings
        self.records_per_buffer = settings.records_per_buffer
        self.blocking = blocking
        self.subpartitions = [Subpartition(self, i) for i in range(num_subpartitions)]
        #: unbounded for BLOCKING partitions: a batch producer writes everything first
        self.capacity = (
            1 << 62 if blocking else num_subpartitions * settings.buffers_per_channel + settings.floating_buffers_per_gate
        )
        self.in_use = 0
        self.unavailable_subpartitions: set[int] = set()
        self.finished = False
        self._waiters: list[Callable[[], None]] = []

    def take_buffer(self) -> None:
        self.in_use += 1

    def recycle_buffer(self) -> None:
        self.in_use -= 1

    def is_available(self) -> bool:
        return self.in_use < self.capacity and not self.unavailable_subpartitions

    def when_available(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, as soon as the partition is available again."""
        self._waiters.append(callback)

    def check_available(self) -> None:
        if self._waiters and self.is_available():
            waiters, self._waiters = self._waiters, []
            for callback in waiters:
                callback()

    def flush_all(self) -> None:
        for subpartition in self.subpartitions:
            subpartition.flush()

    def broadcast_event(self, event: Any) -> None:
        for subpartition in self.subpartitions:
            subpartition.add_event(event)

    def finish(self) -> None:
        """End of this producer: flush and append the end of partition everywhere."""
        for subpartition in self.subpartitions:
            subpartition.flush()
            subpartition.queue.append(END_OF_PARTITION)
        self.finished = True
        for subpartition in self.subpartitions:
            subpartition.try_send()

    def release(self) -> None:
        """Drop everything (the producer failed or was cancelled)."""
        for subpartition in self.subpartitions:
            subpartition.queue.clear()
            subpartition.values = subpartition.timestamps = None
        self._waiters.clear()

    def backlog(self) -> int:
        return sum(sp.queued_buffers for sp in self.subpartitions)


class InputChannel:
    __slots__ = ("gate", "index", "exclusive_free", "queue", "credits", "subpartition", "finished", "waiting")

    def __init__(self, gate: InputGate, index: int) -> None:
        self.gate = gate
        self.index = index
        self.exclusive_free = gate.settings.buffers_per_channel
        self.queue: deque[Any] = deque()
        self.credits: deque[bool] = deque()  # per received buffer: came from the exclusive buffers?
        self.subpartition: Subpartition | None = None
        self.finished = False
        self.waiting = False  # queued for a floating buffer

    def reserve(self) -> bool:
        """Credit for one more buffer: an exclusive one, else a floating one of the gate."""
        if self.exclusive_free > 0:
            self.exclusive_free -= 1
            self.credits.append(True)
            return True
        gate = self.gate
        if gate.floating_free > 0:
            gate.floating_free -= 1
            self.credits.append(False)
            return True
        if not self.waiting:
            self.waiting = True
            gate.waiting_for_credit.append(self)
        return False

    def deliver(self, item: Any) -> None:
        self.queue.append(item)
        self.gate.data_arrived(self)

    def recycle(self) -> None:
        """The consumer processed a buffer: its credit goes back."""
        if self.credits.popleft():
            self.exclusive_free += 1
            if self.subpartition is not None:
                self.subpartition.try_send()
        else:
            gate = self.gate
            gate.floating_free += 1
            gate.retry_waiting()


class InputGate:
    """The consumer side of one input: channels, floating buffers, channels with data."""

    def __init__(self, num_channels: int, settings: NetworkSettings) -> None:
        self.settings = settings
        self.channels = [InputChannel(self, i) for i in range(num_channels)]
        self.floating_free = settings.floating_buffers_per_gate
        self.with_data: deque[InputChannel] = deque()
        self.waiting_for_credit: deque[InputChannel] = deque()
        self.finished_channels = 0
        self._waiter: Callable[[], None] | None = None

    @property
    def finished(self) -> bool:
        return self.finished_channels == len(self.channels)

    def data_arrived(self, channel: InputChannel) -> None:
        if len(channel.queue) == 1:
            self.with_data.append(channel)
        if self._waiter is not None:
            waiter, self._waiter = self._waiter, None
            waiter()

    def when_available(self, callback: Callable[[], None]) -> None:
        self._waiter = callback

    def has_data(self) -> bool:
        return bool(self.with_data)

    def poll(self) -> tuple[InputChannel, Any] | None:
        """The next element of the next channel with data (round robin over channels)."""
        with_data = self.with_data
        if not with_data:
            return None
        channel = with_data.popleft()
        item = channel.queue.popleft()
        if channel.queue:
            with_data.append(channel)
        return channel, item

    def retry_waiting(self) -> None:
        waiting = self.waiting_for_credit
        for _ in range(len(waiting)):
            if self.floating_free <= 0:
                return
            channel = waiting.popleft()
            channel.waiting = False
            if channel.subpartition is not None:
                channel.subpartition.try_send()


class ShuffleEnvironment:
    """Connects producers' subpartitions and consumers' channels, whoever registers first."""

    def __init__(self, settings: NetworkSettings) -> None:
        self.settings = settings
        self._subpartitions: dict[tuple[str, int], Subpartition] = {}
        self._channels: dict[tuple[str, int], InputChannel] = {}

    def register_partition(self, partition: ResultPartition) -> None:
        for subpartition in partition.subpartitions:
            key = (partition.partition_id, subpartition.index)
            self._subpartitions[key] = subpartition
            channel = self._channels.pop(key, None)
            if channel is not None:
                self._connect(subpartition, channel)

    def register_channel(self, partition_id: str, subpartition_index: int, channel: InputChannel) -> None:
        key = (partition_id, subpartition_index)
        subpartition = self._subpartitions.pop(key, None)
        if subpartition is not None:
            self._connect(subpartition, channel)
        else:
            self._channels[key] = channel

    def _connect(self, subpartition: Subpartition, channel: InputChannel) -> None:
        subpartition.channel = channel
        channel.subpartition = subpartition
        subpartition.try_send()

    def release(self, partition_id: str) -> None:
        for key in [k for k in self._subpartitions if k[0] == partition_id]:
            del self._subpartitions[key]
        for key in [k for k in self._channels if k[0] == partition_id]:
            del self._channels[key]


class RecordWriterOutput(Output):
    """A chain's output into the network: routes batches to subpartitions by the partitioner."""

    def __init__(self, partition: ResultPartition, selector: ChannelSelector, rng: Random,
                 flush_always: bool = False, watermarks: Any = None) -> None:
        self.partition = partition
        #: told of every watermark and status sent (``output_watermark``, ``output_status``)
        self.watermarks = watermarks
        self.selector = selector
        self.rng = rng
        self.subpartitions = partition.subpartitions
        #: buffer timeout 0: every batch is sent at once
        self.flush_always = flush_always

    def collect(self, values, timestamps):
        subpartitions = self.subpartitions
        for channel, part_values, part_ts in self.selector.route(values, timestamps):
            subpartitions[channel].add(part_values, part_ts)
            if self.flush_always:
                subpartitions[channel].flush()

    def emit_watermark(self, timestamp):
        if self.watermarks is not None:
            self.watermarks.output_watermark(timestamp)
        self.partition.broadcast_event(Watermark(timestamp))

    def emit_watermark_status(self, idle):
        if self.watermarks is not None:
            self.watermarks.output_status(idle)
        self.partition.broadcast_event(WatermarkStatus(idle))

    def emit_latency_marker(self, marker: LatencyMarker):
        self.subpartitions[self.rng.randrange(len(self.subpartitions))].add_event(marker)

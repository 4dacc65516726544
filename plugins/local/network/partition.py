"""The producer side: a :class:`ResultPartition` per produced partition, one
:class:`Subpartition` per consumer channel, and a buffer pool of ``subpartitions x
buffers-per-channel + floating`` buffers.

A record batch goes into the subpartition's open buffer (a batch that fills exactly one
buffer becomes that buffer, without a copy: nothing changes a batch once it is emitted); full
(or flushed on buffer timeout, or before an event) buffers queue in the subpartition and keep
a producer buffer until they are sent. Watermarks, watermark statuses and latency markers are
written in band as Flink serialises them among the records: they wait with the records before
them for the flush (buffer timeout, a full buffer, an event, the end of the partition), so
with ``execution.buffer-timeout.interval`` -1 a watermark leaves only with a full buffer;
checkpoint barriers and the end of data finish the open buffer and go at once. A buffer is only sent when the consumer's channel has credit
(:meth:`InputChannel.reserve`). So a slow consumer keeps its buffers full, the producer's
queue grows, its pool runs dry, the partition turns unavailable and the producer's mailbox
suspends: back pressure, hop by hop. Events (watermarks, end of partition) need no credit
but never overtake buffers; an aligned checkpoint barrier, once sent, blocks its subpartition
(nothing more is sent, whatever the credit) until the consumer resumes it. Priority events
go out first, blocked or not: an unaligned barrier overtakes what is queued (the data it
overtakes is persisted for the checkpoint), an aligned barrier with an alignment timeout is
announced ahead of it, and an announced barrier converted to unaligned moves to the front.
BLOCKING partitions (batch) hold everything until they are finished. The writer never waits for a buffer: a batch it started is written whole (its
buffers may exceed the pool, as Flink's overdraft buffers), so a task is never blocked
mid-record.

Producer and consumer may run in different threads (realtime): every operation that hands
buffers, events (barriers, cancellation markers, priority events) or credit across takes the
network's lock (the shuffle environment's, shared by both ends), per batch or event, never per
record; the producer's availability callbacks run in the producer's thread (``loop``: its
task's event loop).
"""

from __future__ import annotations

import threading
from collections import deque
from itertools import islice
from typing import TYPE_CHECKING, Any, Callable

from kernel.runtime.checkpointing.channel_state import persist_all
from kernel.runtime.streaming.elements import END_OF_PARTITION, BarrierAnnouncement, CheckpointBarrier, RecordBatch

if TYPE_CHECKING:
    from kernel.loop import EventLoop
    from plugins.local.network.input_channel import InputChannel
    from plugins.local.network.shuffle import NetworkSettings


def call_now(callback: Callable[..., Any], *args: Any) -> None:
    """Where a network end without a loop of its own runs its availability callbacks."""
    callback(*args)


class Subpartition:
    __slots__ = ("partition", "index", "values", "timestamps", "held", "held_size", "queue", "queued_buffers",
                 "channel", "blocked", "priority", "data_processed")

    def __init__(self, partition: ResultPartition, index: int) -> None:
        self.partition = partition
        self.index = index
        self.values: list | None = None  # the open buffer
        self.timestamps: list | None = None
        #: in-band elements (watermarks, statuses, latency markers) and the records written
        #: before them, in order, waiting with the open buffer for the flush (None: nothing);
        #: ``held_size`` counts them (records, and each element as one)
        self.held: list | None = None
        self.held_size = 0
        self.queue: deque[Any] = deque()  # finished buffers and events, not yet sent
        self.queued_buffers = 0
        self.channel: InputChannel | None = None
        self.blocked = False  # an aligned barrier went out: wait for the consumer to resume
        self.priority: deque[Any] = deque()  # priority events, sent before anything else
        self.data_processed = False  # the consumer processed everything before the end of data

    def add(self, values: list, timestamps: list | None) -> None:
        with self.partition.lock:
            self._add(values, timestamps)

    def _add(self, values: list, timestamps: list | None) -> None:
        partition = self.partition
        if self.values is None:
            partition.take_buffer()
            if len(values) == partition.records_per_buffer and self.held is None:  # exactly one buffer: as it is
                self._enqueue_buffer(values, timestamps)
                self.try_send()
                return
            self.values = list(values)
            self.timestamps = list(timestamps) if timestamps is not None else None
        else:
            self.values.extend(values)
            if self.timestamps is not None:
                self.timestamps.extend(timestamps if timestamps is not None else [None] * len(values))
            elif timestamps is not None:
                self.timestamps = [None] * (len(self.values) - len(values)) + list(timestamps)
        if len(self.values) + self.held_size >= partition.records_per_buffer:
            self._finish_full_buffers()

    def _finish_full_buffers(self) -> None:
        partition, capacity = self.partition, self.partition.records_per_buffer
        if self.held is not None:  # a full buffer goes, and everything written before it
            self._release_held()
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
        with self.partition.lock:
            self._flush()

    def _flush(self) -> None:
        held = self.held is not None
        if held:
            self._release_held()
        if self.values:
            self._enqueue_buffer(self.values, self.timestamps)
            self.values = self.timestamps = None
            self.try_send()
        elif held:
            self.try_send()

    def add_in_band(self, element: Any) -> None:
        with self.partition.lock:
            self._add_in_band(element)

    def _add_in_band(self, element: Any) -> None:
        """A watermark, watermark status or latency marker: serialised behind the records
        written before it, as a record is, it waits with them for the next flush (buffer
        timeout, an event, the end) or until they fill a buffer — Flink's ``broadcastEmit`` /
        ``randomEmit``. The records before it wait as a batch of their own, which takes a
        buffer of the pool only once it is queued (in Flink they share one buffer with what
        follows), so frequent watermarks never use up the pool while they wait."""
        held = self.held
        if held is None:
            held = self.held = []
        values = self.values
        if values:
            held.append(RecordBatch(values, self.timestamps))
            self.held_size += len(values)
            self.values = self.timestamps = None
            self.partition.recycle_buffer()
        held.append(element)
        self.held_size += 1
        if self.held_size >= self.partition.records_per_buffer:  # a full buffer goes
            self._release_held()
            self.try_send()

    def _release_held(self) -> None:
        """The held elements, in order, into the queue (the lock is held)."""
        held, self.held = self.held, None
        self.held_size = 0
        for item in held:
            if type(item) is RecordBatch:
                self.partition.take_buffer()
                self._enqueue_buffer(item.values, item.timestamps)
            else:
                self.queue.append(item)

    def add_event(self, event: Any) -> None:
        with self.partition.lock:
            self._add_event(event)

    def _add_event(self, event: Any) -> None:
        self._flush()
        self.queue.append(event)
        if type(event) is CheckpointBarrier and event.alignment_timeout:
            self.priority.append(BarrierAnnouncement(event))
        self.try_send()

    def _add_priority_event(self, event: Any) -> list[bytes]:
        """Send ``event`` ahead of everything queued (an unaligned barrier): the persisted
        forms of the data it overtook (the lock is held)."""
        self._flush()
        overtaken = persist_all(self.queue)
        self.priority.append(event)
        self.try_send()
        return overtaken

    def convert_to_priority(self, checkpoint_id: int) -> list[bytes] | None:
        """The barrier of ``checkpoint_id`` still queued here overtakes the data before it, as
        an unaligned barrier, at the next :meth:`try_send` (the caller's, once it took the
        overtaken data): the persisted forms of that data (None: not queued here). The lock is
        held."""
        queue = self.queue
        for position, item in enumerate(queue):
            if type(item) is CheckpointBarrier and item.checkpoint_id == checkpoint_id:
                overtaken = persist_all(islice(queue, position))
                del queue[position]
                self.priority.append(item.as_unaligned())
                return overtaken
        return None

    def restore_in_flight(self, elements: list) -> None:
        """Queue the in-flight data an unaligned checkpoint persisted here (before the
        consumer is connected)."""
        with self.partition.lock:
            for element in elements:
                if type(element) is RecordBatch:
                    self.partition.take_buffer()
                    self._enqueue_buffer(element.values, element.timestamps)
                else:
                    self.queue.append(element)

    def try_send(self) -> None:
        """Send what the consumer has credit for (the network's lock is held)."""
        channel = self.channel
        partition = self.partition
        if channel is None:
            return
        if self.priority:
            priority = self.priority
            while priority:
                channel.deliver_priority(priority.popleft())
        if self.blocked or (partition.blocking and not partition.finished):
            return
        queue = self.queue
        sent_buffer = False
        while queue:
            item = queue[0]
            kind = type(item)
            if kind is RecordBatch:
                if not channel.reserve():
                    break
                queue.popleft()
                self.queued_buffers -= 1
                if self.queued_buffers < partition.settings.max_buffers_per_channel:
                    partition.unavailable_subpartitions.discard(self.index)
                partition.recycle_buffer()
                sent_buffer = True
                channel.deliver(item)
                continue
            queue.popleft()
            channel.deliver_event(item)
            if kind is CheckpointBarrier and item.blocks:
                self.blocked = True
                break
        if sent_buffer:
            partition.check_available()

    def all_data_processed(self) -> None:
        """The consumer processed every record before the end of data (the lock is held)."""
        if not self.data_processed:
            self.data_processed = True
            self.partition._subpartition_processed()

    def resume(self) -> None:
        """The consumer resumed consumption after aligning a barrier (the lock is held)."""
        if self.blocked:
            self.blocked = False
            self.try_send()


class ResultPartition:
    """The producer side of one IntermediateResultPartition."""

    def __init__(self, partition_id: str, num_subpartitions: int, settings: NetworkSettings, blocking: bool,
                 type_info: Any = None, lock: Any = None, loop: EventLoop | None = None) -> None:
        self.partition_id = partition_id
        self.type_info = type_info  # of its records (how they cross to another TaskExecutor)
        #: the network's lock (the shuffle environment's)
        self.lock = lock if lock is not None else threading.Lock()
        self._notify = loop.call_in_thread if loop is not None else call_now
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
        self._unprocessed = num_subpartitions  # subpartitions whose consumer has not processed all data
        self._on_all_data_processed: Callable[[], None] | None = None

    def when_all_data_processed(self, callback: Callable[[], None]) -> None:
        """``callback()`` in the producer's thread once every consumer processed all the records
        before the end of data (Flink's ``getAllDataProcessedFuture``)."""
        with self.lock:
            if self._unprocessed:
                self._on_all_data_processed = callback
                return
        callback()

    def _subpartition_processed(self) -> None:
        self._unprocessed -= 1
        if not self._unprocessed and self._on_all_data_processed is not None:
            callback, self._on_all_data_processed = self._on_all_data_processed, None
            self._notify(callback)

    def take_buffer(self) -> None:
        self.in_use += 1

    def recycle_buffer(self) -> None:
        self.in_use -= 1

    def is_available(self) -> bool:
        return self.in_use < self.capacity and not self.unavailable_subpartitions

    def when_available(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, as soon as the partition is available again (at once if
        it already is: a consumer may have taken buffers meanwhile)."""
        with self.lock:
            if self.is_available():
                callback()
            else:
                self._waiters.append(callback)

    def check_available(self) -> None:
        if self._waiters and self.is_available():
            waiters, self._waiters = self._waiters, []
            for callback in waiters:
                self._notify(callback)

    def flush_all(self) -> None:
        with self.lock:
            for subpartition in self.subpartitions:
                subpartition._flush()

    def broadcast_event(self, event: Any) -> None:
        """An event (checkpoint barrier, end of data): it finishes the open buffers and goes
        out at once, behind them."""
        with self.lock:
            for subpartition in self.subpartitions:
                subpartition._add_event(event)

    def broadcast_in_band(self, element: Any) -> None:
        """A watermark or watermark status to every subpartition, behind the records written
        before it: it waits for the flush with them (:meth:`Subpartition._add_in_band`)."""
        with self.lock:
            for subpartition in self.subpartitions:
                subpartition._add_in_band(element)

    def broadcast_priority_event(self, event: Any) -> list[list[bytes]]:
        """``event`` to every subpartition ahead of its queue: per subpartition, the persisted
        forms of the data it overtook."""
        with self.lock:
            return [subpartition._add_priority_event(event) for subpartition in self.subpartitions]

    def finish(self) -> None:
        """End of this producer: flush and append the end of partition everywhere."""
        with self.lock:
            for subpartition in self.subpartitions:
                subpartition._flush()
                subpartition.queue.append(END_OF_PARTITION)
            self.finished = True
            for subpartition in self.subpartitions:
                subpartition.try_send()

    def release(self) -> None:
        """Drop everything (the producer failed or was cancelled)."""
        with self.lock:
            for subpartition in self.subpartitions:
                subpartition.queue.clear()
                subpartition.priority.clear()
                subpartition.values = subpartition.timestamps = subpartition.held = None
                subpartition.held_size = 0
                subpartition.blocked = False
            self._waiters.clear()

"""Stream elements: what travels between operators besides records.

Records travel in :class:`RecordBatch` buffers (values plus their timestamps, or None when no
record of the batch has one); watermarks, watermark statuses, latency markers, checkpoint
barriers and their cancellation, the end of data and the end of a partition travel in order
between batches (events: they need no credit, and never overtake a buffer). Priority events
— unaligned barriers and barrier announcements — overtake everything queued before them.
"""

from __future__ import annotations


class RecordBatch:
    """A buffer of records. ``timestamps`` is parallel to ``values`` or None (no timestamps)."""

    __slots__ = ("values", "timestamps")

    def __init__(self, values: list, timestamps: list | None) -> None:
        self.values = values
        self.timestamps = timestamps

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"RecordBatch({len(self.values)} records)"


class Watermark:
    __slots__ = ("timestamp",)

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Watermark) and other.timestamp == self.timestamp

    def __repr__(self) -> str:
        return f"Watermark({self.timestamp})"


class WatermarkStatus:
    __slots__ = ("idle",)

    def __init__(self, idle: bool) -> None:
        self.idle = idle

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WatermarkStatus) and other.idle == self.idle

    def __repr__(self) -> str:
        return "WatermarkStatus(IDLE)" if self.idle else "WatermarkStatus(ACTIVE)"


class LatencyMarker:
    """Emitted by sources every ``metrics.latency.interval``; never overtakes records."""

    __slots__ = ("marked_time", "operator_id", "subtask")

    def __init__(self, marked_time: int, operator_id: str, subtask: int) -> None:
        self.marked_time = marked_time
        self.operator_id = operator_id
        self.subtask = subtask

    def __repr__(self) -> str:
        return f"LatencyMarker({self.marked_time}, {self.operator_id[:8]}, {self.subtask})"


class EndOfPartition:
    """The producer finished: no more elements on this channel."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EndOfPartition"


END_OF_PARTITION = EndOfPartition()


class CheckpointBarrier:
    """Checkpoint ``checkpoint_id`` (triggered at ``timestamp``, clock ms): what a task sent
    before it is in the snapshot, what comes after is not.

    ``aligned``: an EXACTLY_ONCE barrier; unless ``unaligned`` it blocks its subpartition once
    sent, until the consumer, aligned, resumes it. ``unaligned``: a priority barrier that
    overtakes the data queued before it (which goes into the snapshot as in-flight data).
    ``alignment_timeout`` (ms, aligned barriers only): once that long has passed since the
    checkpoint was triggered, its alignment switches to unaligned (0: never). ``location``
    (Flink's CheckpointStorageLocationReference): where the tasks write their state — "" for
    the checkpoint's default location, else a savepoint's directory."""

    __slots__ = ("checkpoint_id", "timestamp", "aligned", "unaligned", "alignment_timeout", "location")

    def __init__(self, checkpoint_id: int, timestamp: int, aligned: bool, unaligned: bool = False,
                 alignment_timeout: int = 0, location: str = "") -> None:
        self.checkpoint_id = checkpoint_id
        self.timestamp = timestamp
        self.aligned = aligned
        self.unaligned = unaligned
        self.alignment_timeout = alignment_timeout
        self.location = location

    @property
    def blocks(self) -> bool:
        """Whether its subpartition sends nothing more once it went out (an aligned barrier)."""
        return self.aligned and not self.unaligned

    def as_unaligned(self) -> CheckpointBarrier:
        """The same checkpoint's barrier, unaligned."""
        return CheckpointBarrier(self.checkpoint_id, self.timestamp, True, True, location=self.location)

    def __repr__(self) -> str:
        kind = ", unaligned" if self.unaligned else ", aligned" if self.aligned else ""
        timeout = f", timeout {self.alignment_timeout} ms" if self.alignment_timeout else ""
        return f"CheckpointBarrier({self.checkpoint_id}{kind}{timeout})"


class BarrierAnnouncement:
    """A priority event announcing that ``barrier`` (aligned, with an alignment timeout) is
    queued on this channel (Flink's EventAnnouncement): the consumer starts the alignment
    timer at once, and may ask for the barrier to overtake the data before it."""

    __slots__ = ("barrier",)

    def __init__(self, barrier: CheckpointBarrier) -> None:
        self.barrier = barrier

    def __repr__(self) -> str:
        return f"BarrierAnnouncement({self.barrier.checkpoint_id})"


class CancelCheckpointMarker:
    """Checkpoint ``checkpoint_id`` was aborted upstream: downstream aborts it too."""

    __slots__ = ("checkpoint_id",)

    def __init__(self, checkpoint_id: int) -> None:
        self.checkpoint_id = checkpoint_id

    def __repr__(self) -> str:
        return f"CancelCheckpointMarker({self.checkpoint_id})"


class EndOfData:
    """The producer ended its data (FLIP-147): no more records, but barriers may still come
    until its final checkpoint completes and the partition ends. ``drain`` (Flink's StopMode):
    its operators finished — at the end of its input, or stopped with a draining savepoint;
    without, a stop-with-savepoint left them unfinished, their state in the savepoint.
    ``stop``: a stop-with-savepoint ended it: consumers finish once that savepoint completed."""

    __slots__ = ("drain", "stop")

    def __init__(self, drain: bool = True, stop: bool = False) -> None:
        self.drain = drain
        self.stop = stop

    def __repr__(self) -> str:
        return "EndOfData" if self.drain and not self.stop else f"EndOfData(drain={self.drain}, stop={self.stop})"


END_OF_DATA = EndOfData()

"""Stream elements: what travels between operators besides records.

Records travel in :class:`RecordBatch` buffers (values plus their timestamps, or None when no
record of the batch has one); watermarks, watermark statuses, latency markers, checkpoint
barriers and their cancellation, the end of data and the end of a partition travel in order
between batches (events: they need no credit, and never overtake a buffer).
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
    before it is in the snapshot, what comes after is not. ``aligned``: an EXACTLY_ONCE
    barrier, which blocks its subpartition once sent until the consumer, aligned, resumes it."""

    __slots__ = ("checkpoint_id", "timestamp", "aligned")

    def __init__(self, checkpoint_id: int, timestamp: int, aligned: bool) -> None:
        self.checkpoint_id = checkpoint_id
        self.timestamp = timestamp
        self.aligned = aligned

    def __repr__(self) -> str:
        return f"CheckpointBarrier({self.checkpoint_id}{', aligned' if self.aligned else ''})"


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

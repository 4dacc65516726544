"""Stream elements: what travels between operators besides records.

Records travel in :class:`RecordBatch` buffers (values plus their timestamps, or None when no
record of the batch has one); watermarks, watermark statuses, latency markers and the end
of a partition travel in order between batches.
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

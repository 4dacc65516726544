"""In-flight data of unaligned checkpoints (Flink's channel state).

An unaligned barrier overtakes the data queued before it: buffers a producer had not sent yet
(output channel state, by partition and subpartition) and buffers a consumer had received but
not processed, or received from a channel whose barrier had not come yet (input channel
state, by input gate and channel). That data belongs before the barrier, so it is persisted
with the snapshot — records, watermarks and watermark statuses, in order, each pickled when
it is persisted (later changes to a record do not reach the checkpoint) — and put back into
the same channels, before anything else, when a task restores the checkpoint. Events
(barriers, cancellation markers, end of data or partition) and latency markers are not
persisted: the restored producers send them again.
"""

from __future__ import annotations

import pickle
from typing import Any

from kernel.runtime.streaming.elements import RecordBatch, Watermark, WatermarkStatus

#: kinds of channel state: what a consumer had in its input channels, a producer in its subpartitions
INPUT = "input"
OUTPUT = "output"


def persist(item: Any) -> bytes | None:
    """The persisted form of a stream element (None for what is not persisted)."""
    kind = type(item)
    if kind is RecordBatch:
        return pickle.dumps(("records", item.values, item.timestamps), protocol=pickle.HIGHEST_PROTOCOL)
    if kind is Watermark:
        return pickle.dumps(("watermark", item.timestamp), protocol=pickle.HIGHEST_PROTOCOL)
    if kind is WatermarkStatus:
        return pickle.dumps(("status", item.idle), protocol=pickle.HIGHEST_PROTOCOL)
    return None


def persist_all(items: Any) -> list[bytes]:
    """The persisted forms of ``items`` that are persisted, in order."""
    return [data for data in map(persist, items) if data is not None]


def restore(data: bytes) -> Any:
    """The stream element a persisted form stands for."""
    kind, *fields = pickle.loads(data)
    if kind == "records":
        return RecordBatch(*fields)
    if kind == "watermark":
        return Watermark(*fields)
    return WatermarkStatus(*fields)

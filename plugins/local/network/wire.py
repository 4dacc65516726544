"""What crosses a TCP connection between TaskExecutors: buffers of records and the events that
travel in band with them (watermarks, watermark statuses, latency markers, checkpoint
barriers — aligned, unaligned, with their alignment timeout and storage location — barrier
announcements, cancellation markers, end of data with its stop mode, end of partition).

A buffer's records are serialised together, with the edge's declared ``Types`` where they
map onto MessagePack (basic types, tuples, lists, maps of them; msgspec decodes them back to
exactly those Python types), with pickle otherwise — PyFlink's pickled byte arrays. Both ends
derive the codec from the same edge of the job graph.
"""

from __future__ import annotations

import decimal
import pickle
from typing import Any, Optional

import msgspec

from kernel.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    TupleTypeInfo,
)
from kernel.runtime.streaming.elements import (
    END_OF_DATA,
    END_OF_PARTITION,
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfData,
    EndOfPartition,
    LatencyMarker,
    Watermark,
    WatermarkStatus,
)

_BASIC: dict[BasicType, type] = {
    BasicType.STRING: str, BasicType.CHAR: str, BasicType.BOOLEAN: bool, BasicType.BYTE: int, BasicType.SHORT: int,
    BasicType.INT: int, BasicType.LONG: int, BasicType.BIG_INT: int, BasicType.FLOAT: float,
    BasicType.DOUBLE: float, BasicType.BIG_DEC: decimal.Decimal,
}


def wire_type(type_info: Any) -> Any:
    """The msgspec type of values of ``type_info`` (every value may be None), or None when
    they are pickled."""
    if isinstance(type_info, BasicTypeInfo):
        basic = _BASIC.get(type_info._basic_type)
        return Optional[basic] if basic is not None else None
    if isinstance(type_info, TupleTypeInfo):
        fields = [wire_type(field) for field in type_info.get_field_types()]
        return None if any(f is None for f in fields) else Optional[tuple[tuple(fields)]]  # type: ignore[misc]
    if isinstance(type_info, MapTypeInfo):
        key, value = wire_type(type_info._key_type_info), wire_type(type_info._value_type_info)
        return None if key is None or value is None else Optional[dict[key, value]]  # type: ignore[valid-type]
    if isinstance(type_info, (ListTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo)) and not isinstance(
            type_info, PrimitiveArrayTypeInfo):
        element = wire_type(type_info.elem_type)
        return None if element is None else Optional[list[element]]  # type: ignore[valid-type]
    return None


class RecordCodec:
    """Serialises the records of one edge, a buffer at a time."""

    def __init__(self, type_info: Any) -> None:
        element = wire_type(type_info)
        self.typed = element is not None
        if self.typed:
            self._encode = msgspec.msgpack.Encoder().encode
            self._decode = msgspec.msgpack.Decoder(list[element]).decode  # type: ignore[valid-type]

    def encode(self, values: list) -> bytes:
        if self.typed:
            return self._encode(values)
        return pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL)

    def decode(self, data: bytes) -> list:
        return self._decode(data) if self.typed else pickle.loads(data)


def edge_type(stream_graph: Any, edge: Any) -> Any:
    """The declared type of what flows on a StreamEdge (its side output's, else its source's)."""
    if edge.output_tag is not None:
        return edge.output_tag.type_info
    return stream_graph.nodes[edge.source_id].output_type


def _barrier(barrier: CheckpointBarrier) -> list:
    return [barrier.checkpoint_id, barrier.timestamp, barrier.aligned, barrier.unaligned, barrier.alignment_timeout,
            barrier.location]


def encode_event(event: Any) -> list:
    kind = type(event)
    if kind is Watermark:
        return ["w", event.timestamp]
    if kind is WatermarkStatus:
        return ["s", event.idle]
    if kind is LatencyMarker:
        return ["l", event.marked_time, event.operator_id, event.subtask]
    if kind is CheckpointBarrier:
        return ["b", *_barrier(event)]
    if kind is BarrierAnnouncement:
        return ["a", *_barrier(event.barrier)]
    if kind is CancelCheckpointMarker:
        return ["c", event.checkpoint_id]
    if kind is EndOfData:
        return ["d", event.drain, event.stop]
    if kind is EndOfPartition:
        return ["e"]
    raise TypeError(f"cannot send {event!r} between TaskExecutors")


def decode_event(fields: list) -> Any:
    kind = fields[0]
    if kind == "w":
        return Watermark(fields[1])
    if kind == "s":
        return WatermarkStatus(fields[1])
    if kind == "l":
        return LatencyMarker(fields[1], fields[2], fields[3])
    if kind == "b":
        return CheckpointBarrier(*fields[1:])
    if kind == "a":
        return BarrierAnnouncement(CheckpointBarrier(*fields[1:]))
    if kind == "c":
        return CancelCheckpointMarker(fields[1])
    if kind == "d":
        drain, stop = fields[1], fields[2]
        return END_OF_DATA if drain and not stop else EndOfData(drain, stop)
    if kind == "e":
        return END_OF_PARTITION
    raise ValueError(f"unknown network event {fields!r}")

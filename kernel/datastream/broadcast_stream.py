"""``BroadcastStream`` and ``BroadcastConnectedStream`` (PyFlink's ``data_stream`` module).

``DataStream.broadcast(descriptor, ...)`` gives a BroadcastStream: the stream partitioned
BROADCAST plus the MapStateDescriptors of its broadcast states. Connecting a stream (keyed or
not) to it gives a BroadcastConnectedStream, whose ``process`` records a two-input operator —
the stream as input 1, the broadcast stream as input 2 — named as PyFlink names it
("Co-Process-Broadcast", "Keyed-Co-Process-Broadcast").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.common.typeinfo import TypeInformation, resolve_type
from kernel.datastream import functions as fn
from kernel.datastream.data_stream import DataStream
from kernel.datastream.transformations import OperatorSpec, TwoInputTransformation

if TYPE_CHECKING:
    from kernel.datastream.state import MapStateDescriptor


class BroadcastStream:
    """A stream with broadcast state; it can only be connected to another stream."""

    def __init__(self, input_stream: DataStream, broadcast_state_descriptors: list[MapStateDescriptor]) -> None:
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors


class BroadcastConnectedStream:
    """A keyed or non-keyed stream connected to a :class:`BroadcastStream`."""

    def __init__(self, non_broadcast_stream: DataStream, broadcast_stream: BroadcastStream,
                 broadcast_state_descriptors: list[MapStateDescriptor]) -> None:
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors

    def _is_keyed_stream(self) -> bool:
        from kernel.datastream.keyed_stream import KeyedStream

        return isinstance(self.non_broadcast_stream, KeyedStream)

    def process(self, func: fn.BroadcastProcessFunction | fn.KeyedBroadcastProcessFunction,
                output_type: TypeInformation | None = None) -> DataStream:
        """Apply ``func``: ``process_element`` to the stream's elements (read-only broadcast
        state), ``process_broadcast_element`` to the broadcast stream's (read-write)."""
        keyed = self._is_keyed_stream()
        if isinstance(func, fn.BroadcastProcessFunction) and keyed:
            raise TypeError("BroadcastProcessFunction should be applied to non-keyed DataStream")
        if isinstance(func, fn.KeyedBroadcastProcessFunction) and not keyed:
            raise TypeError("KeyedBroadcastProcessFunction should be applied to keyed DataStream")
        if not isinstance(func, (fn.BroadcastProcessFunction, fn.KeyedBroadcastProcessFunction)):
            raise TypeError("The input must be a BroadcastProcessFunction or a KeyedBroadcastProcessFunction!")
        if output_type is not None and not isinstance(output_type, (list, TypeInformation)):
            raise TypeError("output_type must be None, list or TypeInformation")
        stream = self.non_broadcast_stream
        env = stream.get_execution_environment()
        key = stream.get_key_spec() if keyed else None  # type: ignore[attr-defined]
        operator = OperatorSpec(
            "keyed_co_broadcast_process" if keyed else "co_broadcast_process", func,
            {"broadcast_state_descriptors": tuple(self.broadcast_state_descriptors)}, keys=(key, None),
        )
        t = TwoInputTransformation(
            env, stream.get_transformation(), self.broadcast_stream.input_stream.get_transformation(),
            "Keyed-Co-Process-Broadcast" if keyed else "Co-Process-Broadcast", operator, resolve_type(output_type),
            env.get_parallelism(),
        )
        env._add_operator(t)
        return DataStream(env, t)

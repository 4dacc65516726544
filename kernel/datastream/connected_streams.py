"""``ConnectedStreams``: two streams feeding one two-input operator."""

from __future__ import annotations

from typing import Any

from kernel.common.typeinfo import TypeInformation, resolve_type
from kernel.datastream import functions as fn
from kernel.datastream.data_stream import DataStream
from kernel.datastream.transformations import OperatorSpec, TwoInputTransformation


class ConnectedStreams:
    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def _keys(self) -> tuple[Any, Any]:
        from kernel.datastream.keyed_stream import KeyedStream

        s1, s2 = self.stream1, self.stream2
        if isinstance(s1, KeyedStream) and isinstance(s2, KeyedStream):
            return s1.get_key_spec(), s2.get_key_spec()
        return None, None

    def _is_keyed(self) -> bool:
        return self._keys()[0] is not None

    def key_by(self, key_selector1: Any, key_selector2: Any, key_type: TypeInformation | None = None) -> ConnectedStreams:
        from kernel.datastream.keyed_stream import KeyedStream

        def origin(stream: DataStream) -> DataStream:
            return stream._origin_stream if isinstance(stream, KeyedStream) else stream

        return ConnectedStreams(
            origin(self.stream1).key_by(key_selector1, key_type), origin(self.stream2).key_by(key_selector2, key_type)
        )

    def _key_rows(self) -> tuple[Any, Any]:
        """A non-keyed operator reads a KeyedStream input as PyFlink's rows of key and value."""
        from kernel.datastream.keyed_stream import KeyedStream

        if self._is_keyed():
            return None, None
        return tuple(s.get_key_spec() if isinstance(s, KeyedStream) else None  # type: ignore[return-value]
                     for s in (self.stream1, self.stream2))

    def _two_input(self, name: str, kind: str, function: Any, output_type: TypeInformation | None) -> DataStream:
        env = self.stream1.get_execution_environment()
        operator = OperatorSpec(kind, function, keys=self._keys(), key_rows=self._key_rows())
        t = TwoInputTransformation(
            env, self.stream1.get_transformation(), self.stream2.get_transformation(), name, operator,
            resolve_type(output_type), env.get_parallelism(),
        )
        env._add_operator(t)
        return DataStream(env, t)

    def map(self, func: fn.CoMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, fn.CoMapFunction):
            raise TypeError("The input function must be a CoMapFunction!")
        return self._two_input("Co-Map", "co_map", func, output_type)

    def flat_map(self, func: fn.CoFlatMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, fn.CoFlatMapFunction):
            raise TypeError("The input must be a CoFlatMapFunction!")
        return self._two_input("Co-Flat Map", "co_flat_map", func, output_type)

    def process(self, func: fn.CoProcessFunction | fn.KeyedCoProcessFunction,
                output_type: TypeInformation | None = None) -> DataStream:
        if isinstance(func, fn.KeyedCoProcessFunction):
            if not self._is_keyed():
                raise TypeError("KeyedCoProcessFunction needs both connected streams keyed (ConnectedStreams.key_by)")
            return self._two_input("Co-Keyed-Process", "keyed_co_process", func, output_type)
        if isinstance(func, fn.CoProcessFunction):
            return self._two_input("Co-Process", "co_process", func, output_type)
        raise TypeError("The input must be a CoProcessFunction or KeyedCoProcessFunction!")

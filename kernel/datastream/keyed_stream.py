"""``KeyedStream``: a stream partitioned by key; its operators may use keyed state and timers.

As in PyFlink, where ``key_by`` turns the stream into a Java stream of ``Row(key, value)``: the
stream's type is ``ROW([key_type, value type])`` (key type ``PICKLED_BYTE_ARRAY`` without one),
and what is applied to the Java stream itself reads those rows (``execute_and_collect``,
``sink_to``, ``assign_timestamps_and_watermarks`` without a timestamp assigner, a non-keyed
operator of connected streams, async I/O). ``print``, ``union``, ``project`` and ``add_sink``
take the values first, through a keyed map named ``_keyed_stream_values_operator``
(PyFlink's ``_values()``): it shows in the plan, reads its input sorted in BATCH, and
``print``'s sink identifier is not passed on (PyFlink drops it).
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from kernel.common.types import Row
from kernel.common.typeinfo import PickledBytesTypeInfo, RowTypeInfo, TypeInformation, resolve_type
from kernel.datastream import functions as fn
from kernel.datastream.data_stream import DataStream, DataStreamSink, check_function
from kernel.datastream.transformations import KeySpec, OperatorSpec, PartitionTransformation, ReduceTransformation

if TYPE_CHECKING:
    from kernel.common.watermark_strategy import WatermarkStrategy
    from kernel.datastream.windowed_stream import WindowedStream

#: the name of the map that takes a KeyedStream's values (PyFlink's
#: ``PythonConfigUtil.KEYED_STREAM_VALUE_OPERATOR_NAME``)
KEYED_STREAM_VALUE_OPERATOR_NAME = "_keyed_stream_values_operator"


class AccumulateType(Enum):
    MIN = 1
    MAX = 2
    MIN_BY = 3
    MAX_BY = 4
    SUM = 5


class AccumulateReduceFunction(fn.ReduceFunction):
    """``sum``/``min``/``max``/``min_by``/``max_by`` as PyFlink computes them: a field of tuples,
    lists and rows (by index or, for named rows, by name), or the value itself for scalars.
    For min/max/sum the other fields come from the first record of the key."""

    def __init__(self, position: int | str, kind: AccumulateType) -> None:
        if not isinstance(position, (int, str)):
            raise TypeError("The field position must be of int or str type to locate the value to calculate for "
                            f"min, max, min_by, max_by and sum.The given type is: {type(position)}")
        self.position = position
        self.kind = kind

    def _op(self, a: Any, b: Any) -> Any:
        if self.kind is AccumulateType.MIN:
            return min(a, b)
        if self.kind is AccumulateType.MAX:
            return max(a, b)
        return a + b

    def reduce(self, value1: Any, value2: Any) -> Any:
        pos = self.position
        structured = isinstance(value2, (tuple, list, Row))
        if self.kind in (AccumulateType.MIN_BY, AccumulateType.MAX_BY):
            a, b = (value1[pos], value2[pos]) if structured else (value1, value2)
            if self.kind is AccumulateType.MIN_BY:
                return value2 if b < a else value1
            return value2 if b > a else value1
        if isinstance(value2, tuple):
            fields = list(value1)
            fields[pos] = self._op(value1[pos], value2[pos])  # type: ignore[index]
            return tuple(fields)
        if isinstance(value2, Row):
            result = Row(*value1._values)
            if hasattr(value1, "_fields"):
                result.set_field_names(value1._fields)
            result.set_row_kind(value1.get_row_kind())
            result[pos] = self._op(value1[pos], value2[pos])
            return result
        if isinstance(value2, list):
            result = list(value1)
            result[pos] = self._op(value1[pos], value2[pos])  # type: ignore[index]
            return result
        if pos != 0:
            raise TypeError(f"The {pos} field selected on a basic type. A field expression on a basic type can only select the 0th field.")
        return self._op(value1, value2)


def _unsupported(what: str) -> Callable[..., Any]:
    def refuse(self: KeyedStream, *args: Any, **kwargs: Any) -> Any:
        raise Exception(f"{what} for KeyedStream is not supported.")

    return refuse


class KeyedStream(DataStream):
    AccumulateType = AccumulateType

    def __init__(self, env: Any, transformation: PartitionTransformation, key: KeySpec, origin: DataStream) -> None:
        super().__init__(env, transformation)
        self._key = key
        self._origin_stream = origin
        #: the values' type (PyFlink's ``_original_data_type_info``)
        self._original_data_type_info = transformation.output_type
        #: the parallelism of PyFlink's key_by operator (the environment's when it was added):
        #: what operators taking their input's parallelism get (``assign_timestamps_and_watermarks``)
        self._key_by_parallelism = env.get_parallelism()

    def get_type(self) -> TypeInformation:
        """``ROW([key_type, value type])``: the Java stream PyFlink's ``key_by`` makes."""
        key_type = self._key.key_type if self._key.key_type is not None else PickledBytesTypeInfo()
        return RowTypeInfo([key_type, self._original_data_type_info], ["f0", "f1"])

    def get_name(self) -> str:
        raise Exception("Get name of KeyedStream is not supported.")

    def _values(self) -> DataStream:
        """The values (PyFlink's ``_values()``: an identity map on the keyed stream)."""
        values = self.map(lambda value: value, output_type=self._original_data_type_info)
        values.name(KEYED_STREAM_VALUE_OPERATOR_NAME)
        return values

    def _reads(self, operator: OperatorSpec) -> OperatorSpec:
        operator.key_rows = (self._key,)
        return operator

    set_parallelism = _unsupported("Set parallelism")
    set_max_parallelism = _unsupported("Set max parallelism")
    name = _unsupported("Set name")
    uid = _unsupported("Set uid")
    set_uid_hash = _unsupported("Set uid hash")
    force_non_parallel = _unsupported("Set force non-parallel")
    set_buffer_timeout = _unsupported("Set buffer timeout")
    start_new_chain = _unsupported("Start new chain")
    disable_chaining = _unsupported("Disable chaining")
    slot_sharing_group = _unsupported("Setting slot sharing group")
    cache = _unsupported("Cache")

    def _refuse_partitioning(self, *args: Any) -> DataStream:
        raise Exception("Cannot override partitioning for KeyedStream.")

    shuffle = rescale = rebalance = forward = broadcast = global_ = partition_custom = _refuse_partitioning

    def get_key_spec(self) -> KeySpec:
        return self._key

    def key_by(self, key_selector: Any, key_type: TypeInformation | None = None) -> KeyedStream:
        return self._origin_stream.key_by(key_selector, key_type)

    # -- what PyFlink applies to the values ----------------------------------------------------

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        return self._values().print()

    def union(self, *streams: DataStream) -> DataStream:
        return self._values().union(*streams)

    def project(self, *field_indexes: int) -> DataStream:
        return self._values().project(*field_indexes)

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        return self._values().add_sink(sink_func)

    # -- what PyFlink applies to the rows of keys and values ----------------------------------

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        if watermark_strategy._timestamp_assigner is not None:  # PyFlink applies KeyedStream.process
            raise TypeError("KeyedProcessFunction is required for KeyedStream.")
        return self._timestamps(watermark_strategy, self._key_by_parallelism)

    def map(self, func: Callable | fn.MapFunction, output_type: TypeInformation | None = None) -> DataStream:
        check_function(func, fn.MapFunction, "The input must be a MapFunction or a callable function")
        return self._one_input("Map", "map", func, resolve_type(output_type), self._key)

    def flat_map(self, func: Callable | fn.FlatMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        check_function(func, fn.FlatMapFunction, "The input must be a FlatMapFunction or a callable function")
        return self._one_input("Flat Map", "flat_map", func, resolve_type(output_type), self._key)

    def filter(self, func: Callable | fn.FilterFunction) -> DataStream:
        check_function(func, fn.FilterFunction, "The input must be a FilterFunction or a callable function")
        return self._one_input("Filter", "filter", func, self._original_data_type_info, self._key)

    def process(self, func: fn.KeyedProcessFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, fn.KeyedProcessFunction):
            raise TypeError("KeyedProcessFunction is required for KeyedStream.")
        return self._one_input("KeyedProcess", "keyed_process", func, resolve_type(output_type), self._key)

    def reduce(self, func: Callable | fn.ReduceFunction) -> DataStream:
        """Rolling reduce: every record emits the reduced value of its key so far (in BATCH
        execution mode only the final value per key)."""
        check_function(func, fn.ReduceFunction, "The input must be a ReduceFunction or a callable function")
        return self._reduce("Keyed Reduce", func)

    def _reduce(self, name: str, func: Any) -> DataStream:
        operator = OperatorSpec("reduce", func, keys=(self._key,))
        t = ReduceTransformation(self._env, self._transformation, name, operator, self._original_data_type_info,
                                 self._env.get_parallelism())
        self._env._add_operator(t)
        return DataStream(self._env, t)

    def _accumulate(self, position: int | str, kind: AccumulateType) -> DataStream:
        return self._reduce("Keyed Aggregation", AccumulateReduceFunction(position, kind))

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self._accumulate(position_to_sum, AccumulateType.SUM)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self._accumulate(position_to_min, AccumulateType.MIN)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self._accumulate(position_to_max, AccumulateType.MAX)

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        return self._accumulate(position_to_min_by, AccumulateType.MIN_BY)

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self._accumulate(position_to_max_by, AccumulateType.MAX_BY)

    def window(self, window_assigner: Any) -> WindowedStream:
        from kernel.datastream.windowed_stream import WindowedStream

        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        from kernel.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        if slide == 0:
            return self.window(CountTumblingWindowAssigner(size))
        return self.window(CountSlidingWindowAssigner(size, slide))


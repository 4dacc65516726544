"""``DataStream`` and ``DataStreamSink`` (``pyflink.datastream.data_stream``).

Every method records a Transformation; nothing runs until ``env.execute()``. Operator
names are Flink's ("Map", "Flat Map", "Filter", "Process", "Sink: Print to Std. Out").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.pyflink import unsupported
from kernel.jvm.keyhash import check_key_type
from kernel.common.typeinfo import TupleTypeInfo, TypeInformation, resolve_type
from kernel.datastream import functions as fn
from kernel.datastream.output_tag import OutputTag
from kernel.datastream.slot_sharing_group import SlotSharingGroup
from kernel.datastream.transformations import (
    KeySpec,
    LegacySinkTransformation,
    OneInputTransformation,
    OperatorSpec,
    PartitionTransformation,
    PhysicalTransformation,
    SideOutputTransformation,
    SinkTransformation,
    TimestampsAndWatermarksTransformation,
    Transformation,
    UnionTransformation,
)
from kernel.runtime.graph import partitioner as p
from kernel.runtime.graph.stream import ChainingStrategy

if TYPE_CHECKING:
    from kernel.common.execution_config import ExecutionConfig
    from kernel.common.watermark_strategy import WatermarkStrategy
    from kernel.datastream.broadcast_stream import BroadcastConnectedStream, BroadcastStream
    from kernel.datastream.connected_streams import ConnectedStreams
    from kernel.datastream.keyed_stream import KeyedStream
    from kernel.datastream.state import MapStateDescriptor
    from kernel.datastream.stream_execution_environment import StreamExecutionEnvironment
    from kernel.datastream.windowed_stream import AllWindowedStream


#: the job name of ``execute_and_collect`` when none is given (Flink's)
COLLECT_JOB_NAME = "DataStream Collect"


def check_function(func: Any, base: type, message: str) -> Any:
    """A Function instance of ``base`` or a plain callable, else PyFlink's TypeError."""
    if isinstance(func, base) or (callable(func) and not isinstance(func, fn.Function)):
        return func
    raise TypeError(message)


def as_key_selector(selector: Any) -> Callable[[Any], Any]:
    if isinstance(selector, fn.KeySelector):
        return selector.get_key
    if callable(selector):
        return selector
    raise TypeError("Parameter key_selector should be type of KeySelector or a callable function.")


@unsupported.members("pyflink.datastream.data_stream:DataStream")
class DataStream:
    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._transformation = transformation

    # -- properties of the operator that produced this stream ---------------------------------

    def _operator(self, what: str) -> PhysicalTransformation:
        t = self._transformation
        if not isinstance(t, PhysicalTransformation):
            raise TypeError(f"{what} is only supported on the stream of an operator, not after {t.name.lower()}()")
        return t

    def get_name(self) -> str:
        return self._transformation.name

    def name(self, name: str) -> DataStream:
        self._operator("name()").name = name
        return self

    def uid(self, uid: str) -> DataStream:
        self._operator("uid()").uid = uid
        return self

    def set_uid_hash(self, uid_hash: str) -> DataStream:
        self._operator("set_uid_hash()").set_uid_hash(uid_hash)
        return self

    def set_description(self, description: str) -> DataStream:
        self._operator("set_description()").description = description
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        self._operator("set_parallelism()").set_parallelism(parallelism)
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        self._operator("set_max_parallelism()").set_max_parallelism(max_parallelism)
        return self

    def force_non_parallel(self) -> DataStream:
        t = self._operator("force_non_parallel()")
        t.set_parallelism(1)
        t.set_max_parallelism(1)
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        """How long this operator's output may wait in a partially filled buffer (ms): -1 the
        job's default, 0 none (each batch is sent at once)."""
        if timeout_millis < -1:
            raise ValueError("timeout must be >= -1")
        self._operator("set_buffer_timeout()").buffer_timeout = timeout_millis
        return self

    def start_new_chain(self) -> DataStream:
        self._operator("start_new_chain()").chaining_strategy = ChainingStrategy.HEAD
        return self

    def disable_chaining(self) -> DataStream:
        self._operator("disable_chaining()").chaining_strategy = ChainingStrategy.NEVER
        return self

    def slot_sharing_group(self, slot_sharing_group: str | SlotSharingGroup) -> DataStream:
        name = slot_sharing_group.get_name() if isinstance(slot_sharing_group, SlotSharingGroup) else slot_sharing_group
        self._operator("slot_sharing_group()").slot_sharing_group = name
        return self

    def get_type(self) -> TypeInformation:
        return self._transformation.output_type

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def get_execution_config(self) -> ExecutionConfig:
        return self._env.get_config()

    def get_transformation(self) -> Transformation:
        return self._transformation

    # -- operators ----------------------------------------------------------------------------

    def _one_input(
        self, name: str, kind: str, function: Any, output_type: TypeInformation, key: KeySpec | None = None,
        **params: Any,
    ) -> DataStream:
        operator = OperatorSpec(kind, function, params, keys=(key,))
        t = OneInputTransformation(self._env, self._transformation, name, operator, output_type, self._env.get_parallelism())
        self._env._add_operator(t)
        return DataStream(self._env, t)

    def map(self, func: Callable | fn.MapFunction, output_type: TypeInformation | None = None) -> DataStream:
        check_function(func, fn.MapFunction, "The input must be a MapFunction or a callable function")
        return self._one_input("Map", "map", func, resolve_type(output_type))

    def flat_map(self, func: Callable | fn.FlatMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        check_function(func, fn.FlatMapFunction, "The input must be a FlatMapFunction or a callable function")
        return self._one_input("Flat Map", "flat_map", func, resolve_type(output_type))

    def filter(self, func: Callable | fn.FilterFunction) -> DataStream:
        check_function(func, fn.FilterFunction, "The input must be a FilterFunction or a callable function")
        return self._one_input("Filter", "filter", func, self.get_type())

    def process(self, func: fn.ProcessFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, fn.ProcessFunction):
            raise TypeError("The input must be a ProcessFunction!")
        return self._one_input("Process", "process", func, resolve_type(output_type))

    def project(self, *field_indexes: int) -> DataStream:
        if not isinstance(self.get_type(), TupleTypeInfo):
            raise Exception("Only supports projecting a stream of tuples (Types.TUPLE).")
        types = self.get_type().get_field_types()
        out = TupleTypeInfo([types[i] for i in field_indexes])
        return self._one_input("Projection", "map", lambda v: tuple(v[i] for i in field_indexes), out,
                               projection=field_indexes)

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        return self._timestamps(watermark_strategy, self._transformation.parallelism)

    def _timestamps(self, watermark_strategy: WatermarkStrategy, parallelism: int) -> DataStream:
        params = {"strategy": watermark_strategy, "python_parallelism": self._env.get_parallelism()}
        operator = self._reads(OperatorSpec("timestamps_watermarks", None, params, keys=(None,)))
        t = TimestampsAndWatermarksTransformation(
            self._env, self._transformation, "Timestamps/Watermarks", operator, self.get_type(), parallelism,
            watermark_strategy,
        )
        self._env._add_operator(t)
        return DataStream(self._env, t)

    def _reads(self, operator: OperatorSpec) -> OperatorSpec:
        """An operator applied to this stream as it is (a KeyedStream's: its rows of key and value)."""
        return operator

    # -- partitioning -------------------------------------------------------------------------

    def _partition(self, partitioner: p.StreamPartitioner) -> DataStream:
        return DataStream(self._env, PartitionTransformation(self._env, self._transformation, partitioner))

    def key_by(self, key_selector: Callable | fn.KeySelector, key_type: TypeInformation | None = None) -> KeyedStream:
        from kernel.datastream.keyed_stream import KeyedStream

        as_key_selector(key_selector)
        if key_type is not None and not isinstance(key_type, TypeInformation):
            raise TypeError("key_type must be a TypeInformation")
        check_key_type(key_type)
        spec = KeySpec.of(key_selector, key_type)
        t = PartitionTransformation(self._env, self._transformation,
                                    p.KeyGroupStreamPartitioner(spec.selector, key_type, spec.keys_of, spec.function))
        return KeyedStream(self._env, t, spec, origin=self)

    def shuffle(self) -> DataStream:
        return self._partition(p.ShufflePartitioner())

    def rescale(self) -> DataStream:
        return self._partition(p.RescalePartitioner())

    def rebalance(self) -> DataStream:
        return self._partition(p.RebalancePartitioner())

    def forward(self) -> DataStream:
        return self._partition(p.ForwardPartitioner())

    def broadcast(self, broadcast_state_descriptor: MapStateDescriptor | None = None,
                  *other_broadcast_state_descriptors: MapStateDescriptor) -> DataStream | BroadcastStream:
        """Every record to every downstream subtask; with MapStateDescriptors, a BroadcastStream
        whose broadcast states the descriptors name (connect a stream to it)."""
        if broadcast_state_descriptor is not None:
            from kernel.datastream.broadcast_stream import BroadcastStream
            from kernel.datastream.state import MapStateDescriptor

            descriptors = [broadcast_state_descriptor, *other_broadcast_state_descriptors]
            if not all(isinstance(d, MapStateDescriptor) for d in descriptors):
                raise TypeError("broadcast_state_descriptor must be MapStateDescriptor")
            return BroadcastStream(self.broadcast(), descriptors)
        return self._partition(p.BroadcastPartitioner())

    def global_(self) -> DataStream:
        """``global()`` (a Python keyword): every record to the first downstream subtask."""
        return self._partition(p.GlobalPartitioner())

    def partition_custom(self, partitioner: Callable | fn.Partitioner, key_selector: Callable | fn.KeySelector) -> DataStream:
        if isinstance(partitioner, fn.Partitioner):
            partition = partitioner.partition
        elif callable(partitioner):
            partition = partitioner
        else:
            raise TypeError("Parameter partitioner should be type of Partitioner or a callable function.")
        return self._partition(p.CustomPartitionerWrapper(partition, as_key_selector(key_selector)))

    # -- combining ----------------------------------------------------------------------------

    def union(self, *streams: DataStream) -> DataStream:
        """As PyFlink: a KeyedStream among ``streams`` gives its values (``KeyedStream._values``)."""
        from kernel.datastream.keyed_stream import KeyedStream

        streams = tuple(s._values() if isinstance(s, KeyedStream) else s for s in streams)
        inputs = [self._transformation] + [s._transformation for s in streams]
        for other in streams:
            if other.get_type() != self.get_type():
                raise TypeError(
                    f"Cannot union streams of different types: {self.get_type()!r} and {other.get_type()!r}"
                )
        return DataStream(self._env, UnionTransformation(self._env, inputs))

    def connect(self, ds: DataStream | BroadcastStream) -> ConnectedStreams | BroadcastConnectedStream:
        """With a DataStream, ConnectedStreams (CoFunctions); with a BroadcastStream, a
        BroadcastConnectedStream (broadcast process functions)."""
        from kernel.datastream.broadcast_stream import BroadcastConnectedStream, BroadcastStream
        from kernel.datastream.connected_streams import ConnectedStreams

        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        return ConnectedStreams(self, ds)

    def window_all(self, window_assigner: Any) -> AllWindowedStream:
        from kernel.datastream.windowed_stream import AllWindowedStream

        return AllWindowedStream(self, window_assigner)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        operator = self._operator("get_side_output()").operator
        known = operator.side_outputs.get(output_tag.tag_id)
        if known is not None and known.type_info != output_tag.type_info:
            raise TypeError(
                f"The output tag {output_tag.tag_id!r} was already used with type {known.type_info!r}"
            )
        operator.side_outputs[output_tag.tag_id] = output_tag
        return DataStream(self._env, SideOutputTransformation(self._env, self._transformation, output_tag))

    # -- sinks --------------------------------------------------------------------------------

    def _sink(self, t: PhysicalTransformation) -> DataStreamSink:
        self._env._add_operator(t)
        return DataStreamSink(t)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Print every record to stdout (``N> `` prefix per subtask when parallel)."""
        params = {"identifier": sink_identifier, "type": self.get_type(), "python_parallelism": self._env.get_parallelism()}
        operator = OperatorSpec("print", None, params, keys=(None,))
        return self._sink(LegacySinkTransformation(
            self._env, self._transformation, "Print to Std. Out", operator, self._env.get_parallelism()
        ))

    def add_sink(self, sink_func: fn.SinkFunction | Callable[[Any], Any]) -> DataStreamSink:
        if not (isinstance(sink_func, fn.SinkFunction) or callable(sink_func)):
            raise TypeError("add_sink needs a SinkFunction (invoke(value, context)) or a callable")
        operator = OperatorSpec("sink_function", sink_func, keys=(None,))
        return self._sink(LegacySinkTransformation(
            self._env, self._transformation, "Unnamed", operator, self._env.get_parallelism()
        ))

    def sink_to(self, sink: Any) -> DataStreamSink:
        operator = self._reads(OperatorSpec("sink_writer", sink, {"type": self.get_type()}, keys=(None,)))
        return self._sink(SinkTransformation(self._env, self._transformation, "Sink", operator, self._env.get_parallelism()))


    def execute_and_collect(self, job_execution_name: str | None = None, limit: int | None = None) -> Any:
        """Run the job and return this stream's records as they arrive: an iterator (PyFlink's
        CloseableIterator: closing it cancels the job), or with ``limit`` a list of the first
        ``limit`` records (the job is cancelled once they arrived)."""
        from kernel.datastream.collect import CloseableIterator, CollectedRecords

        records = CollectedRecords()
        operator = self._reads(OperatorSpec("collect", None, {"target": records}, keys=(None,)))
        t = LegacySinkTransformation(self._env, self._transformation, "Data stream collect sink", operator, 1)
        self._env._add_operator(t)
        client = self._env.execute_async(job_execution_name or COLLECT_JOB_NAME)
        iterator = CloseableIterator(client, records, self.get_type())
        if limit is None:
            return iterator
        with iterator:
            return [value for value, _ in zip(iterator, range(limit))]


class DataStreamSink:
    """The end of a stream: configure the sink operator."""

    def __init__(self, transformation: PhysicalTransformation) -> None:
        self._transformation = transformation

    def name(self, name: str) -> DataStreamSink:
        self._transformation.name = name
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._transformation.uid = uid
        return self

    def set_uid_hash(self, uid_hash: str) -> DataStreamSink:
        self._transformation.set_uid_hash(uid_hash)
        return self

    def set_description(self, description: str) -> DataStreamSink:
        self._transformation.description = description
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        self._transformation.set_parallelism(parallelism)
        return self

    def disable_chaining(self) -> DataStreamSink:
        self._transformation.chaining_strategy = ChainingStrategy.NEVER
        return self

    def slot_sharing_group(self, slot_sharing_group: str | SlotSharingGroup) -> DataStreamSink:
        name = slot_sharing_group.get_name() if isinstance(slot_sharing_group, SlotSharingGroup) else slot_sharing_group
        self._transformation.slot_sharing_group = name
        return self

    def get_transformation(self) -> PhysicalTransformation:
        return self._transformation


setattr(DataStream, "global", DataStream.global_)


def __getattr__(name: str) -> Any:
    """PyFlink's ``data_stream`` module also holds the keyed, windowed and connected streams."""
    if name == "KeyedStream":
        from kernel.datastream.keyed_stream import KeyedStream

        return KeyedStream
    if name in ("WindowedStream", "AllWindowedStream"):
        from kernel.datastream import windowed_stream

        return getattr(windowed_stream, name)
    if name == "ConnectedStreams":
        from kernel.datastream.connected_streams import ConnectedStreams

        return ConnectedStreams
    if name in ("BroadcastStream", "BroadcastConnectedStream"):
        from kernel.datastream import broadcast_stream

        return getattr(broadcast_stream, name)
    if name == "CloseableIterator":
        from kernel.datastream.collect import CloseableIterator

        return CloseableIterator
    return _unsupported_names(name)


_unsupported_names = unsupported.module_getattr(__name__)

"""PyFlink's ``pyflink.datastream`` for rill: rewrite ``pyflink.`` to ``kernel.`` in imports.

Every name of PyFlink's module is here; those rill does not support (state backend objects,
savepoints) are refused when used (``kernel.unsupported``).
"""

from kernel.datastream.async_data_stream import AsyncDataStream
from kernel.datastream.checkpoint_config import CheckpointConfig
from kernel.datastream.checkpoint_storage import (
    CheckpointStorage,
    CustomCheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from kernel.datastream.checkpointing_mode import CheckpointingMode
from kernel.datastream.connected_streams import ConnectedStreams
from kernel.datastream.data_stream import BroadcastConnectedStream, BroadcastStream, DataStream, DataStreamSink
from kernel.datastream.execution_mode import RuntimeExecutionMode
from kernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from kernel.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
    WindowFunction,
)
from kernel.datastream.keyed_stream import KeyedStream
from kernel.datastream.output_tag import OutputTag
from kernel.datastream.slot_sharing_group import MemorySize, SlotSharingGroup
from kernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from kernel.datastream.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    PredefinedOptions,
    StateBackend,
)
from kernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from kernel.datastream.time_domain import TimeDomain
from kernel.datastream.timerservice import TimerService
from kernel.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    CountWindow,
    EventTimeSessionWindows,
    GlobalWindow,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    Window,
    WindowAssigner,
)
from kernel.common.execution_config import ExecutionConfig
from kernel.datastream.windowed_stream import AllWindowedStream, WindowedStream

__all__ = [
    "AggregateFunction", "AggregatingStateDescriptor", "AllWindowFunction", "AllWindowedStream", "AsyncDataStream",
    "AsyncFunction", "AsyncRetryPredicate", "AsyncRetryStrategy", "BroadcastConnectedStream",
    "BroadcastProcessFunction", "BroadcastStream", "CheckpointConfig", "CheckpointStorage", "CheckpointingMode",
    "CoFlatMapFunction", "CoMapFunction", "CoProcessFunction", "ConnectedStreams", "CountSlidingWindowAssigner",
    "CountTumblingWindowAssigner", "CountWindow", "CustomCheckpointStorage", "CustomStateBackend", "DataStream",
    "DataStreamSink", "EmbeddedRocksDBStateBackend", "EventTimeSessionWindows", "ExecutionConfig",
    "ExternalizedCheckpointRetention", "FileSystemCheckpointStorage", "FilterFunction", "FlatMapFunction", "Function",
    "GlobalWindow", "GlobalWindows", "HashMapStateBackend", "JobManagerCheckpointStorage", "KeySelector",
    "KeyedBroadcastProcessFunction", "KeyedCoProcessFunction", "KeyedProcessFunction", "KeyedStream",
    "ListStateDescriptor", "MapFunction", "MapStateDescriptor", "MemorySize", "MergingWindowAssigner", "OutputTag",
    "Partitioner", "PredefinedOptions", "ProcessAllWindowFunction", "ProcessFunction", "ProcessWindowFunction",
    "ProcessingTimeSessionWindows", "ReduceFunction", "ReducingStateDescriptor", "RuntimeContext",
    "RuntimeExecutionMode", "SinkFunction", "SlidingEventTimeWindows", "SlidingProcessingTimeWindows",
    "SlotSharingGroup", "SourceFunction", "StateBackend", "StreamExecutionEnvironment", "TimeDomain", "TimeWindow",
    "TimerService", "Trigger", "TriggerResult", "TumblingEventTimeWindows", "TumblingProcessingTimeWindows",
    "ValueStateDescriptor", "Window", "WindowAssigner", "WindowFunction", "WindowedStream",
]

"""PyFlink's ``pyflink.datastream`` for rill: rewrite ``pyflink.`` to ``kernel.`` in imports."""

from kernel.datastream.connected_streams import ConnectedStreams
from kernel.datastream.data_stream import DataStream, DataStreamSink, SlotSharingGroup
from kernel.datastream.execution_mode import RuntimeExecutionMode
from kernel.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
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
from kernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from kernel.datastream.stream_execution_environment import ExecutionConfig, StreamExecutionEnvironment
from kernel.datastream.time_domain import TimeDomain
from kernel.datastream.timerservice import TimerService
from kernel.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    CountWindow,
    EventTimeSessionWindows,
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
from kernel.datastream.windowed_stream import AllWindowedStream, WindowedStream

__all__ = [
    "AggregateFunction", "AggregatingStateDescriptor", "AllWindowFunction", "AllWindowedStream", "CoFlatMapFunction",
    "CoMapFunction", "CoProcessFunction", "ConnectedStreams", "CountSlidingWindowAssigner",
    "CountTumblingWindowAssigner", "CountWindow", "DataStream", "DataStreamSink", "EventTimeSessionWindows",
    "ExecutionConfig", "FilterFunction", "FlatMapFunction", "Function", "GlobalWindows", "KeySelector",
    "KeyedCoProcessFunction", "KeyedProcessFunction", "KeyedStream", "ListStateDescriptor", "MapFunction",
    "MapStateDescriptor", "MergingWindowAssigner", "OutputTag", "Partitioner", "ProcessAllWindowFunction",
    "ProcessFunction", "ProcessWindowFunction", "ProcessingTimeSessionWindows", "ReduceFunction",
    "ReducingStateDescriptor", "RuntimeContext", "RuntimeExecutionMode", "SinkFunction", "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows", "SlotSharingGroup", "SourceFunction", "StreamExecutionEnvironment",
    "TimeDomain", "TimeWindow", "TimerService", "Trigger", "TriggerResult", "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows", "ValueStateDescriptor", "Window", "WindowAssigner", "WindowFunction",
    "WindowedStream",
]

"""PyFlink's ``pyflink.datastream`` for rill: rewrite ``pyflink.`` to ``kernel.`` in imports.

Every name of PyFlink's module is here; those rill does not support (state backend objects,
savepoints) are refused when used (``kernel.pyflink.unsupported``).

Names are imported from their modules when first used (a job importing the environment
does not load every module of the package)."""

from __future__ import annotations

from kernel.pyflink.lazynames import lazy_names

#: the module defining each public name (imported when one of its names is first used)
_NAMES = {
    "kernel.common.execution_config": ("ExecutionConfig",),
    "kernel.datastream.async_data_stream": ("AsyncDataStream",),
    "kernel.datastream.checkpoint_config": ("CheckpointConfig",),
    "kernel.datastream.checkpoint_storage": (
        "CheckpointStorage", "CustomCheckpointStorage", "FileSystemCheckpointStorage", "JobManagerCheckpointStorage",
    ),
    "kernel.datastream.checkpointing_mode": ("CheckpointingMode",),
    "kernel.datastream.connected_streams": ("ConnectedStreams",),
    "kernel.datastream.data_stream": ("BroadcastConnectedStream", "BroadcastStream", "DataStream", "DataStreamSink"),
    "kernel.datastream.execution_mode": ("RuntimeExecutionMode",),
    "kernel.datastream.externalized_checkpoint_retention": ("ExternalizedCheckpointRetention",),
    "kernel.datastream.functions": (
        "AggregateFunction", "AllWindowFunction", "AsyncFunction", "AsyncRetryPredicate", "AsyncRetryStrategy",
        "BroadcastProcessFunction", "CoFlatMapFunction", "CoMapFunction", "CoProcessFunction", "FilterFunction",
        "FlatMapFunction", "Function", "KeySelector", "KeyedBroadcastProcessFunction", "KeyedCoProcessFunction",
        "KeyedProcessFunction", "MapFunction", "Partitioner", "ProcessAllWindowFunction", "ProcessFunction",
        "ProcessWindowFunction", "ReduceFunction", "RuntimeContext", "SinkFunction", "SourceFunction",
        "WindowFunction",
    ),
    "kernel.datastream.keyed_stream": ("KeyedStream",),
    "kernel.datastream.output_tag": ("OutputTag",),
    "kernel.datastream.slot_sharing_group": ("MemorySize", "SlotSharingGroup"),
    "kernel.datastream.state": (
        "AggregatingStateDescriptor", "ListStateDescriptor", "MapStateDescriptor", "ReducingStateDescriptor",
        "ValueStateDescriptor",
    ),
    "kernel.datastream.state_backend": (
        "CustomStateBackend", "EmbeddedRocksDBStateBackend", "HashMapStateBackend", "PredefinedOptions",
        "StateBackend",
    ),
    "kernel.datastream.stream_execution_environment": ("StreamExecutionEnvironment",),
    "kernel.datastream.time_domain": ("TimeDomain",),
    "kernel.datastream.timerservice": ("TimerService",),
    "kernel.datastream.window": (
        "CountSlidingWindowAssigner", "CountTumblingWindowAssigner", "CountWindow", "EventTimeSessionWindows",
        "GlobalWindow", "GlobalWindows", "MergingWindowAssigner", "ProcessingTimeSessionWindows",
        "SlidingEventTimeWindows", "SlidingProcessingTimeWindows", "TimeWindow", "Trigger", "TriggerResult",
        "TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "Window", "WindowAssigner",
    ),
    "kernel.datastream.windowed_stream": ("AllWindowedStream", "WindowedStream"),
}

__all__, __getattr__, __dir__ = lazy_names(__name__, globals(), _NAMES)

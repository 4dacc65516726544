"""Stream operators, created from the OperatorSpec of a StreamNode by kind."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

from kernel.datastream.functions import Function
from kernel.datastream.transformations import OperatorSpec
from kernel.graph.stream import StreamNode
from kernel.streaming.operators.async_wait import AsyncWaitOperator
from kernel.streaming.operators.base import StreamOperator, TwoInputStreamOperator
from kernel.streaming.operators.broadcast import CoBroadcastWithKeyedOperator, CoBroadcastWithNonKeyedOperator
from kernel.streaming.operators.basic import (
    FilterOperator,
    FlatMapOperator,
    MapOperator,
    ProcessOperator,
)
from kernel.streaming.operators.keyed import KeyedProcessOperator, ReduceOperator
from kernel.streaming.operators.sinks import (
    CollectSinkOperator,
    FileSinkWriterOperator,
    PrintSinkOperator,
    SinkFunctionOperator,
)
from kernel.streaming.operators.timestamps import TimestampsAndWatermarksOperator
from kernel.streaming.operators.twoinput import (
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
    KeyedCoProcessOperator,
)
from kernel.streaming.operators.aligned_window import window_operator
from kernel.streaming.runtime import OperatorRuntime

OPERATORS: dict[str, Callable[[OperatorSpec, StreamNode, OperatorRuntime], StreamOperator]] = {
    "map": MapOperator,
    "flat_map": FlatMapOperator,
    "filter": FilterOperator,
    "process": ProcessOperator,
    "keyed_process": KeyedProcessOperator,
    "reduce": ReduceOperator,
    "co_map": CoMapOperator,
    "co_flat_map": CoFlatMapOperator,
    "co_process": CoProcessOperator,
    "keyed_co_process": KeyedCoProcessOperator,
    "co_broadcast_process": CoBroadcastWithNonKeyedOperator,
    "keyed_co_broadcast_process": CoBroadcastWithKeyedOperator,
    "print": PrintSinkOperator,
    "sink_function": SinkFunctionOperator,
    "sink_writer": FileSinkWriterOperator,
    "collect": CollectSinkOperator,
    "window": window_operator,
    "timestamps_watermarks": TimestampsAndWatermarksOperator,
    "async_wait": AsyncWaitOperator,
}


def create_operator(node: StreamNode, runtime: OperatorRuntime) -> StreamOperator:
    """The operator a stream node runs (sources: ``kernel.streaming.sources.SourceOperator``)."""
    from kernel.streaming.sources import SourceOperator

    spec = node.operator
    if spec.kind in ("collection", "source"):
        return SourceOperator(spec, node, runtime)
    operator_class = OPERATORS.get(spec.kind)
    if operator_class is None:
        raise ValueError(f"operator {node.name!r}: unknown operator kind {spec.kind!r}")
    return operator_class(subtask_copy(spec), node, runtime)


def subtask_copy(spec: OperatorSpec) -> OperatorSpec:
    """The spec with the subtask's own copies of the user's function objects: Flink
    deserialises the functions once per subtask, so what ``open()`` stores on ``self`` (state
    handles, counters) is the subtask's own. Plain callables are shared (they hold no state of
    the subtask); a function object that cannot be deep-copied is copied shallowly."""
    function = _own_copy(spec.function)
    params = {name: _own_copy(value) for name, value in spec.params.items()}
    if function is spec.function and all(params[name] is value for name, value in spec.params.items()):
        return spec
    return dataclasses.replace(spec, function=function, params=params)


def _own_copy(value: Any) -> Any:
    if not isinstance(value, Function):
        return value
    try:
        return copy.deepcopy(value)
    except Exception:  # holds something that cannot be copied (a lock, a connection)
        return copy.copy(value)


__all__ = ["OPERATORS", "StreamOperator", "TwoInputStreamOperator", "create_operator"]

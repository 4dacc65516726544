"""Stream operators, created from the OperatorSpec of a StreamNode by kind."""

from __future__ import annotations

import copy
import dataclasses
from importlib import import_module
from typing import TYPE_CHECKING, Any

from kernel.datastream.functions import Function
from kernel.datastream.transformations import KeySpec, OperatorSpec
from kernel.runtime.streaming.operators.base import StreamOperator, TwoInputStreamOperator

if TYPE_CHECKING:
    from kernel.runtime.graph.stream import StreamNode
    from kernel.runtime.streaming.runtime import OperatorRuntime

#: the operator (class or factory) of each kind, as ``module:attribute`` (a job imports the
#: modules of the operators it runs)
OPERATORS: dict[str, str] = {
    "map": "basic:MapOperator",
    "flat_map": "basic:FlatMapOperator",
    "filter": "basic:FilterOperator",
    "process": "basic:ProcessOperator",
    "keyed_process": "keyed:KeyedProcessOperator",
    "reduce": "keyed:ReduceOperator",
    "co_map": "twoinput:CoMapOperator",
    "co_flat_map": "twoinput:CoFlatMapOperator",
    "co_process": "twoinput:CoProcessOperator",
    "keyed_co_process": "twoinput:KeyedCoProcessOperator",
    "co_broadcast_process": "broadcast:CoBroadcastWithNonKeyedOperator",
    "keyed_co_broadcast_process": "broadcast:CoBroadcastWithKeyedOperator",
    "print": "sinks:PrintSinkOperator",
    "sink_function": "sinks:SinkFunctionOperator",
    "sink_writer": "sinks:FileSinkWriterOperator",
    "collect": "sinks:CollectSinkOperator",
    "window": "aligned_window:window_operator",
    "timestamps_watermarks": "timestamps:TimestampsAndWatermarksOperator",
    "async_wait": "async_wait:AsyncWaitOperator",
}


def create_operator(node: StreamNode, runtime: OperatorRuntime) -> StreamOperator:
    """The operator a stream node runs (sources: ``kernel.runtime.streaming.sources.SourceOperator``)."""
    from kernel.runtime.streaming.sources import SourceOperator

    spec = node.operator
    if spec.kind in ("collection", "source"):
        return SourceOperator(spec, node, runtime)
    target = OPERATORS.get(spec.kind)
    if target is None:
        raise ValueError(f"operator {node.name!r}: unknown operator kind {spec.kind!r}")
    module, attribute = target.split(":")
    operator_class = getattr(import_module(f"{__name__}.{module}"), attribute)
    operator = operator_class(subtask_copy(spec), node, runtime)
    if any(key is not None for key in spec.key_rows):
        _read_key_rows(operator, spec.key_rows)
    return operator


def _read_key_rows(operator: StreamOperator, key_rows: tuple) -> None:
    """Make the operator read each input ``key_rows`` names as the Java stream PyFlink's
    ``key_by`` makes: every record a ``Row(f0=key, f1=value)`` (the key as ``key_type`` reads it)."""
    from kernel.common.types import Row

    for index, key in enumerate(key_rows):
        if key is None:
            continue
        name = "process_batch" if len(key_rows) == 1 else f"process_batch{index + 1}"
        process, keys_of = getattr(operator, name), key.keys_of

        def rows(values: list, timestamps: list | None, process: Any = process, keys_of: Any = keys_of) -> None:
            process([Row(f0=k, f1=v) for k, v in zip(keys_of(values), values)], timestamps)

        setattr(operator, name, rows)


def subtask_copy(spec: OperatorSpec) -> OperatorSpec:
    """The spec with the subtask's own copies of the user's function objects (key selectors
    too): Flink deserialises the functions once per subtask, so what ``open()`` stores on
    ``self`` (state handles, counters) is the subtask's own. Plain callables are shared (they
    hold no state of the subtask). (A window operator copies its assigner and trigger itself,
    the same way.)"""
    function = own_copy(spec.function)
    params = {name: own_copy(value) for name, value in spec.params.items()}
    keys = tuple(key if key is None or key.function is None else KeySpec.of(own_copy(key.function), key.key_type)
                 for key in spec.keys)
    if function is spec.function and all(params[name] is value for name, value in spec.params.items()) \
            and all(a is b for a, b in zip(keys, spec.keys)):
        return spec
    return dataclasses.replace(spec, function=function, params=params, keys=keys)


def own_copy(value: Any) -> Any:
    """A subtask's own copy of a Function object (anything else as it is)."""
    return subtask_own(value) if isinstance(value, Function) else value


def subtask_own(value: Any) -> Any:
    """A subtask's own copy of ``value``; one that cannot be deep-copied (it holds a lock, a
    connection) is copied shallowly."""
    try:
        return copy.deepcopy(value)
    except Exception:
        return copy.copy(value)


__all__ = ["OPERATORS", "StreamOperator", "TwoInputStreamOperator", "create_operator", "subtask_own"]

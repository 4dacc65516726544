"""Creating the operator of a StreamNode from its OperatorSpec, by kind.

Each kind names its operator with an import of its own, made when a subtask first creates
one: a job loads the modules of the operators it runs, and no others."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.runtime.streaming.subtask_copies import subtask_copy

if TYPE_CHECKING:
    from kernel.runtime.graph.stream import StreamNode
    from kernel.runtime.streaming.operators.base import StreamOperator
    from kernel.runtime.streaming.runtime import OperatorRuntime


def create_operator(node: StreamNode, runtime: OperatorRuntime) -> StreamOperator:
    """The operator a stream node runs, with the subtask's own copies of the user's functions
    (a source's reads its spec as it is)."""
    spec = node.operator
    if spec.kind in ("collection", "source"):
        from kernel.runtime.streaming.sources import SourceOperator

        return SourceOperator(spec, node, runtime)
    operator = operator_class(spec.kind, node.name)(subtask_copy(spec), node, runtime)
    if any(key is not None for key in spec.key_rows):
        _read_key_rows(operator, spec.key_rows)
    return operator


def operator_class(kind: str, name: str) -> Callable[..., StreamOperator]:
    """The operator class (or factory) of an OperatorSpec's ``kind``; ``name`` names the
    operator in the error for an unknown kind."""
    match kind:
        case "map":
            from kernel.runtime.streaming.operators.basic import MapOperator as operator
        case "flat_map":
            from kernel.runtime.streaming.operators.basic import FlatMapOperator as operator
        case "filter":
            from kernel.runtime.streaming.operators.basic import FilterOperator as operator
        case "process":
            from kernel.runtime.streaming.operators.basic import ProcessOperator as operator
        case "keyed_process":
            from kernel.runtime.streaming.operators.keyed import KeyedProcessOperator as operator
        case "reduce":
            from kernel.runtime.streaming.operators.keyed import ReduceOperator as operator
        case "co_map":
            from kernel.runtime.streaming.operators.twoinput import CoMapOperator as operator
        case "co_flat_map":
            from kernel.runtime.streaming.operators.twoinput import CoFlatMapOperator as operator
        case "co_process":
            from kernel.runtime.streaming.operators.twoinput import CoProcessOperator as operator
        case "keyed_co_process":
            from kernel.runtime.streaming.operators.twoinput import KeyedCoProcessOperator as operator
        case "co_broadcast_process":
            from kernel.runtime.streaming.operators.broadcast import CoBroadcastWithNonKeyedOperator as operator
        case "keyed_co_broadcast_process":
            from kernel.runtime.streaming.operators.broadcast import CoBroadcastWithKeyedOperator as operator
        case "print":
            from kernel.runtime.streaming.operators.sinks import PrintSinkOperator as operator
        case "sink_function":
            from kernel.runtime.streaming.operators.sinks import SinkFunctionOperator as operator
        case "sink_writer":
            operator = sink_writer
        case "collect":
            from kernel.runtime.streaming.operators.sinks import CollectSinkOperator as operator
        case "window":
            from kernel.runtime.streaming.operators.aligned_window import window_operator as operator
        case "timestamps_watermarks":
            from kernel.runtime.streaming.operators.timestamps import TimestampsAndWatermarksOperator as operator
        case "async_wait":
            from kernel.runtime.streaming.operators.async_wait import AsyncWaitOperator as operator
        case _:
            raise ValueError(f"operator {name!r}: unknown operator kind {kind!r}")
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


def sink_writer(spec: Any, node: StreamNode, runtime: OperatorRuntime) -> StreamOperator:
    """The writer operator of a ``sink_to`` sink: KafkaSink's or FileSink's."""
    from kernel.datastream.connectors.kafka import KafkaSink

    if isinstance(spec.function, KafkaSink):
        from kernel.runtime.streaming.kafka.writer import KafkaWriterOperator

        return KafkaWriterOperator(spec, node, runtime)
    from kernel.runtime.streaming.operators.sinks import FileSinkWriterOperator

    return FileSinkWriterOperator(spec, node, runtime)

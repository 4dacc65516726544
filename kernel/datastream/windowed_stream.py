"""``WindowedStream`` and ``AllWindowedStream``: windows over a keyed (or the whole) stream.

The window operator is named after its assigner ("TumblingEventTimeWindows"), its
description is Flink's ``Window(assigner, trigger, function)``.
"""

from __future__ import annotations

from typing import Any, Callable

from kernel.common.time import to_millis
from kernel.common.typeinfo import TypeInformation, resolve_type
from kernel.datastream import functions as fn
from kernel.datastream.data_stream import DataStream
from kernel.datastream.output_tag import OutputTag
from kernel.datastream.transformations import KeySpec, OneInputTransformation, OperatorSpec
from kernel.datastream.window import MergingWindowAssigner, Trigger, WindowAssigner


def _function_name(function: Any) -> str:
    if isinstance(function, fn.Function):
        return type(function).__name__
    return getattr(function, "__name__", type(function).__name__)


class _Windowed:
    _description_prefix = "Window"

    def __init__(self, input_stream: DataStream, key: KeySpec, window_assigner: WindowAssigner) -> None:
        if not isinstance(window_assigner, WindowAssigner):
            raise TypeError("window_assigner must be a WindowAssigner")
        self._input = input_stream
        self._key = key
        self._assigner = window_assigner
        self._trigger: Trigger | None = None
        self._allowed_lateness = 0
        self._late_data_tag: OutputTag | None = None

    def get_execution_environment(self) -> Any:
        return self._input.get_execution_environment()

    def get_input_type(self) -> TypeInformation:
        return self._input._original_data_type_info

    def trigger(self, trigger: Trigger):
        if not isinstance(trigger, Trigger):
            raise TypeError("trigger must be a Trigger")
        if isinstance(self._assigner, MergingWindowAssigner) and not trigger.can_merge():
            raise TypeError("A merging window assigner cannot be used with a trigger that does not support merging.")
        self._trigger = trigger
        return self

    def allowed_lateness(self, time_ms: int):
        lateness = to_millis(time_ms)
        if lateness < 0:
            raise ValueError("The allowed lateness cannot be negative.")
        self._allowed_lateness = lateness
        return self

    def side_output_late_data(self, output_tag: OutputTag):
        self._late_data_tag = output_tag
        return self

    def _window_function(self, window_function: Any) -> Any:
        if window_function is None:
            return None
        if isinstance(window_function, (fn.WindowFunction, fn.ProcessWindowFunction,
                                        fn.AllWindowFunction, fn.ProcessAllWindowFunction)):
            return window_function
        raise TypeError("window_function should be a WindowFunction or ProcessWindowFunction")

    def _build(self, contents: str, function: Any, window_function: Any, output_type: TypeInformation,
               description_functions: list[Any]) -> DataStream:
        env = self._input.get_execution_environment()
        trigger = self._trigger or self._assigner.get_default_trigger(env)
        params = {
            "assigner": self._assigner,
            "trigger": trigger,
            "allowed_lateness": self._allowed_lateness,
            "late_data_tag": self._late_data_tag,
            "contents": contents,
            "window_function": window_function,
            "all_window": self._description_prefix == "AllWindow",
        }
        operator = OperatorSpec("window", function, params, keys=(self._key,))
        name = type(self._assigner).__name__
        t = OneInputTransformation(
            env, self._input.get_transformation(), name, operator, output_type, env.get_parallelism()
        )
        described = ", ".join(_function_name(f) for f in description_functions if f is not None)
        t.description = f"{self._description_prefix}({self._assigner!r}, {type(trigger).__name__}, {described})"
        env._add_operator(t)
        return DataStream(env, t)

    def reduce(self, reduce_function: Callable | fn.ReduceFunction, window_function: Any = None,
               output_type: TypeInformation | None = None) -> DataStream:
        if not (isinstance(reduce_function, fn.ReduceFunction) or callable(reduce_function)):
            raise TypeError("The input must be a ReduceFunction or a callable function!")
        window_function = self._window_function(window_function)
        out = self.get_input_type() if window_function is None and output_type is None else resolve_type(output_type)
        return self._build("reduce", reduce_function, window_function, out, [reduce_function, window_function])

    def aggregate(self, aggregate_function: fn.AggregateFunction, window_function: Any = None,
                  accumulator_type: TypeInformation | None = None,
                  output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(aggregate_function, fn.AggregateFunction):
            raise TypeError("The input must be a pyflink.datastream.functions.AggregateFunction!")
        window_function = self._window_function(window_function)
        return self._build("aggregate", aggregate_function, window_function, resolve_type(output_type),
                           [aggregate_function, window_function])

    def apply(self, window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(window_function, (fn.WindowFunction, fn.AllWindowFunction)):
            raise TypeError("The input must be a WindowFunction!")
        return self._build("list", None, window_function, resolve_type(output_type), [window_function])

    def process(self, process_window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(process_window_function, (fn.ProcessWindowFunction, fn.ProcessAllWindowFunction)):
            raise TypeError("The input must be a ProcessWindowFunction!")
        return self._build("list", None, process_window_function, resolve_type(output_type), [process_window_function])


class WindowedStream(_Windowed):
    def __init__(self, keyed_stream: Any, window_assigner: WindowAssigner) -> None:
        super().__init__(keyed_stream, keyed_stream.get_key_spec(), window_assigner)


class AllWindowedStream(_Windowed):
    """Windows over the whole stream: every record has key 0 (parallelism 1 downstream)."""

    _description_prefix = "AllWindow"

    def __init__(self, data_stream: DataStream, window_assigner: WindowAssigner) -> None:
        keyed = data_stream.key_by(fn.NullByteKeySelector())
        super().__init__(keyed, keyed.get_key_spec(), window_assigner)

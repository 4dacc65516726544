"""User function classes (``pyflink.datastream.functions``).

As in PyFlink, ``flat_map``, ``process_element``, ``on_timer`` and window functions return an
iterable of outputs (usually by ``yield``); ``None`` emits nothing. A yielded
``(OutputTag, value)`` pair goes to that side output when the stream asked for it with
``get_side_output``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, TypeVar

from kernel.pyflink import unsupported
from kernel.datastream.time_domain import TimeDomain
from kernel.datastream.timerservice import TimerService

if TYPE_CHECKING:
    from kernel.metrics import MetricGroup
    from kernel.datastream.state import BroadcastState, MapStateDescriptor, ReadOnlyBroadcastState, StateDescriptor

W = TypeVar("W")
W2 = TypeVar("W2")
IN = TypeVar("IN")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")


class KeyedStateStore(ABC):
    @abstractmethod
    def get_state(self, state_descriptor: Any) -> Any:
        """A ValueState for the current key."""

    @abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any:
        """A ListState for the current key."""

    @abstractmethod
    def get_map_state(self, state_descriptor: Any) -> Any:
        """A MapState for the current key."""

    @abstractmethod
    def get_reducing_state(self, state_descriptor: Any) -> Any:
        """A ReducingState for the current key."""

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        """An AggregatingState for the current key."""


@unsupported.members("pyflink.datastream.functions:RuntimeContext")
class RuntimeContext(KeyedStateStore):
    """What a function learns about the subtask running it (given to ``open``)."""

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    @abstractmethod
    def get_attempt_number(self) -> int: ...

    @abstractmethod
    def get_task_name_with_subtasks(self) -> str: ...

    @abstractmethod
    def get_job_parameter(self, key: str, default_value: str) -> str: ...

    @abstractmethod
    def get_metrics_group(self) -> MetricGroup:
        """The metric group of the operator running the function (:mod:`kernel.metrics`);
        None when ``python.metric.enabled`` is false."""


class Function(ABC):
    """Base of every user function: ``open(runtime_context)`` before, ``close()`` after."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function):
    @abstractmethod
    def map(self, value: Any) -> Any: ...


class FlatMapFunction(Function):
    @abstractmethod
    def flat_map(self, value: Any) -> Iterable[Any]: ...


class FilterFunction(Function):
    @abstractmethod
    def filter(self, value: Any) -> bool: ...


class KeySelector(Function):
    @abstractmethod
    def get_key(self, value: Any) -> Any: ...


class NullByteKeySelector(KeySelector):
    def get_key(self, value: Any) -> Any:
        return 0


class ReduceFunction(Function):
    @abstractmethod
    def reduce(self, value1: Any, value2: Any) -> Any: ...


class AggregateFunction(Function):
    @abstractmethod
    def create_accumulator(self) -> Any: ...

    @abstractmethod
    def add(self, value: Any, accumulator: Any) -> Any: ...

    @abstractmethod
    def get_result(self, accumulator: Any) -> Any: ...

    @abstractmethod
    def merge(self, acc_a: Any, acc_b: Any) -> Any: ...


class Partitioner(Function):
    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int: ...


class CoMapFunction(Function):
    @abstractmethod
    def map1(self, value: Any) -> Any: ...

    @abstractmethod
    def map2(self, value: Any) -> Any: ...


class CoFlatMapFunction(Function):
    @abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any]: ...

    @abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any]: ...


class BaseContext(ABC):
    @abstractmethod
    def timer_service(self) -> TimerService: ...

    @abstractmethod
    def timestamp(self) -> int | None: ...


class ProcessFunction(Function):
    class Context(BaseContext):
        pass

    @abstractmethod
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any]: ...


class KeyedProcessFunction(Function):
    class Context(BaseContext):
        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]: ...

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[Any] | None:
        pass


class CoProcessFunction(Function):
    class Context(BaseContext):
        pass

    @abstractmethod
    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any]: ...

    @abstractmethod
    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any]: ...


class KeyedCoProcessFunction(Function):
    class Context(BaseContext):
        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Iterable[Any]: ...

    @abstractmethod
    def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Iterable[Any]: ...

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Iterable[Any] | None:
        pass


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    @abstractmethod
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]: ...


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    @abstractmethod
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]: ...


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> Any: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def window_state(self) -> KeyedStateStore: ...

        @abstractmethod
        def global_state(self) -> KeyedStateStore: ...

    @abstractmethod
    def process(self, key: Any, context: ProcessWindowFunction.Context, elements: Iterable[Any]) -> Iterable[Any]: ...

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        pass


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> Any: ...

        @abstractmethod
        def window_state(self) -> KeyedStateStore: ...

        @abstractmethod
        def global_state(self) -> KeyedStateStore: ...

    @abstractmethod
    def process(self, context: ProcessAllWindowFunction.Context, elements: Iterable[Any]) -> Iterable[Any]: ...

    def clear(self, context: ProcessAllWindowFunction.Context) -> None:
        pass


class PassThroughWindowFunction(WindowFunction[IN, IN, KEY, W]):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        yield from inputs


class PassThroughAllWindowFunction(AllWindowFunction[IN, IN, W]):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        yield from inputs


class BaseBroadcastProcessFunction(Function):
    """What both broadcast process functions have: the contexts of their two sides."""

    class BaseContext(ABC):
        @abstractmethod
        def timestamp(self) -> int:
            """The element's timestamp (Long.MIN_VALUE when it has none) or the firing timer's."""

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

    class Context(BaseContext):
        """The broadcast side's context: read-write broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState: ...

    class ReadOnlyContext(BaseContext):
        """The non-broadcast side's context: read-only broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> ReadOnlyBroadcastState: ...


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """``DataStream.connect(broadcast_stream).process(...)``: ``process_element`` for the
    (non-keyed) stream's elements, ``process_broadcast_element`` for the broadcast ones."""

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        pass

    @abstractmethod
    def process_element(self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext) -> Iterable[Any]: ...

    @abstractmethod
    def process_broadcast_element(self, value: Any, ctx: BroadcastProcessFunction.Context) -> Iterable[Any]: ...


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    """``KeyedStream.connect(broadcast_stream).process(...)``: the keyed side also has keyed
    state, the current key and timers (``on_timer``). The broadcast side's context has Flink's
    ``apply_to_keyed_state`` (PyFlink 2.3's Python context lacks it)."""

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        @abstractmethod
        def apply_to_keyed_state(self, state_descriptor: StateDescriptor,
                                 function: Callable[[Any, Any], Any]) -> None:
            """``function(key, state)`` for every key with state of ``state_descriptor`` (Flink's
            ``KeyedBroadcastProcessFunction.Context.applyToKeyedState``)."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext, ABC):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

        @abstractmethod
        def get_current_key(self) -> Any: ...

    @abstractmethod
    def process_element(self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext) -> Iterable[Any]: ...

    @abstractmethod
    def process_broadcast_element(self, value: Any, ctx: KeyedBroadcastProcessFunction.Context) -> Iterable[Any]: ...

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext) -> Iterable[Any] | None:
        pass

class AsyncRetryPredicate(ABC, Generic[OUT]):
    """When an attempt of an ``AsyncFunction`` is retried: on its result, on its exception."""

    @abstractmethod
    def result_predicate(self) -> Callable[[list[OUT]], bool] | None:
        """Retry when this returns True for the result (None: never on a result)."""

    @abstractmethod
    def exception_predicate(self) -> Callable[[Exception], bool] | None:
        """Retry when this returns True for the exception (None: never on an exception)."""


class AsyncRetryStrategy(ABC, Generic[OUT]):
    """Whether and when an async request is attempted again
    (:mod:`kernel.datastream.async_retry_strategies`)."""

    @abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow ``current_attempts`` (counted from 1)."""

    @abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The delay before the next attempt (ms)."""

    @abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """The predicate deciding which results and exceptions are retried."""

    @staticmethod
    def no_restart() -> AsyncRetryStrategy:
        from kernel.datastream import async_retry_strategies

        return async_retry_strategies.NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(max_attempts: int, backoff_time_millis: int,
                    result_predicate: Callable[[list[OUT]], bool] | None,
                    exception_predicate: Callable[[Exception], bool] | None) -> AsyncRetryStrategy:
        from kernel.datastream.async_retry_strategies import FixedDelayRetryStrategy

        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate, exception_predicate)

    @staticmethod
    def exponential_backoff(max_attempts: int, initial_delay: int, max_retry_delay: int, multiplier: float,
                            result_predicate: Callable[[list[OUT]], bool] | None,
                            exception_predicate: Callable[[Exception], bool] | None) -> AsyncRetryStrategy:
        from kernel.datastream.async_retry_strategies import ExponentialBackoffDelayRetryStrategy

        return ExponentialBackoffDelayRetryStrategy(max_attempts, initial_delay, max_retry_delay, multiplier,
                                                    result_predicate, exception_predicate)


class AsyncFunction(Function, Generic[IN, OUT]):
    """Async I/O (``AsyncDataStream``): ``async def async_invoke(value)`` returns the list of
    results for one input; many inputs are in flight at once."""

    @abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """The coroutine of one input; raising fails the task (unless retried)."""

    def timeout(self, value: IN) -> list[OUT]:
        """The results of an input whose request timed out; by default the task fails."""
        raise TimeoutError("Async function call has timed out for input: " + str(value))


class AsyncFunctionDescriptor:
    """What ``AsyncDataStream`` hands to the async wait operator."""

    class OutputMode(Enum):
        ORDERED = 0
        UNORDERED = 1

    def __init__(self, async_function: AsyncFunction, timeout: Any, capacity: int,
                 async_retry_strategy: AsyncRetryStrategy, output_mode: AsyncFunctionDescriptor.OutputMode) -> None:
        self.async_function = async_function
        self.timeout = timeout
        self.capacity = capacity
        self.async_retry_strategy = async_retry_strategy
        self.output_mode = output_mode


@unsupported.members("pyflink.datastream.functions:SinkFunction")
class SinkFunction(Function):
    """A sink for ``add_sink``: ``invoke(value, context)`` per record (rill's Python sink)."""

    @abstractmethod
    def invoke(self, value: Any, context: Any) -> None: ...



__getattr__ = unsupported.module_getattr(__name__)

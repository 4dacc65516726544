"""PyFlink's ``pyflink.datastream.async_data_stream``: async I/O on a DataStream.

``ordered_wait`` / ``unordered_wait`` (and their ``_with_retry`` forms) add the "async wait
operator": for every input it awaits ``AsyncFunction.async_invoke(value)`` — up to
``capacity`` inputs in flight at once — and emits each element of the returned list with the
input's timestamp; ordered in input order, unordered in completion order without crossing a
watermark (:mod:`kernel.runtime.streaming.operators.async_wait`). The checks at definition and their
messages are PyFlink's.
"""

from __future__ import annotations

import inspect
from typing import Any

from kernel.common.typeinfo import TypeInformation, resolve_type
from kernel.datastream import async_retry_strategies
from kernel.datastream.data_stream import DataStream
from kernel.datastream.functions import AsyncFunction, AsyncFunctionDescriptor, AsyncRetryStrategy
from kernel.datastream.transformations import OneInputTransformation, OperatorSpec

#: the operator's name (PyFlink's, as its ``get_execution_plan()`` shows it)
OPERATOR_NAME = "async wait operator"


class AsyncDataStream:
    """A helper class to apply an :class:`AsyncFunction` to a data stream."""

    @staticmethod
    def unordered_wait(data_stream: DataStream, async_function: AsyncFunction, timeout: Any, capacity: int = 100,
                       output_type: TypeInformation | None = None) -> DataStream:
        """Results in the order their requests complete (never across a watermark)."""
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream, async_function, timeout, async_retry_strategies.NO_RETRY_STRATEGY, capacity, output_type)

    @staticmethod
    def unordered_wait_with_retry(data_stream: DataStream, async_function: AsyncFunction, timeout: Any,
                                  async_retry_strategy: AsyncRetryStrategy, capacity: int = 100,
                                  output_type: TypeInformation | None = None) -> DataStream:
        AsyncDataStream._validate(data_stream, async_function, timeout, async_retry_strategy)
        return _async_wait(data_stream, AsyncFunctionDescriptor(
            async_function, timeout, capacity, async_retry_strategy, AsyncFunctionDescriptor.OutputMode.UNORDERED),
            output_type)

    @staticmethod
    def ordered_wait(data_stream: DataStream, async_function: AsyncFunction, timeout: Any, capacity: int = 100,
                     output_type: TypeInformation | None = None) -> DataStream:
        """Results in the order of their inputs."""
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream, async_function, timeout, async_retry_strategies.NO_RETRY_STRATEGY, capacity, output_type)

    @staticmethod
    def ordered_wait_with_retry(data_stream: DataStream, async_function: AsyncFunction, timeout: Any,
                                async_retry_strategy: AsyncRetryStrategy, capacity: int = 100,
                                output_type: TypeInformation | None = None) -> DataStream:
        AsyncDataStream._validate(data_stream, async_function, timeout, async_retry_strategy)
        return _async_wait(data_stream, AsyncFunctionDescriptor(
            async_function, timeout, capacity, async_retry_strategy, AsyncFunctionDescriptor.OutputMode.ORDERED),
            output_type)

    @staticmethod
    def _validate(data_stream: DataStream, async_function: AsyncFunction, timeout: Any,
                  async_retry_strategy: AsyncRetryStrategy) -> None:
        if not inspect.iscoroutinefunction(async_function.async_invoke):
            raise Exception("Method 'async_invoke' of class '%s' should be declared as 'async def'."
                            % type(async_function))
        if async_retry_strategy is None:
            raise Exception("Async retry strategy should not be None.")
        if (async_retry_strategy != async_retry_strategies.NO_RETRY_STRATEGY
                and timeout.to_milliseconds() <= 0):
            raise Exception("Timeout should be configured when do async with retry.")
        if async_retry_strategy.get_retry_predicate() is None:
            raise Exception("Retry predicate of the async retry strategy '%s' is None." % type(async_retry_strategy))
        if data_stream.get_execution_environment()._configured("python.execution-mode") == "thread":
            raise Exception("AsyncFunction is still not supported for 'thread' mode.")


def _async_wait(data_stream: DataStream, descriptor: AsyncFunctionDescriptor,
                output_type: TypeInformation | None) -> DataStream:
    if descriptor.capacity <= 0:  # PyFlink's queue would wait forever; Flink's operator refuses it
        raise ValueError("The number of concurrent async operation should be greater than 0.")
    env = data_stream.get_execution_environment()
    operator = data_stream._reads(OperatorSpec("async_wait", descriptor.async_function, {
        "timeout_ms": descriptor.timeout.to_milliseconds(),
        "capacity": descriptor.capacity,
        "retry_strategy": descriptor.async_retry_strategy,
        "ordered": descriptor.output_mode is AsyncFunctionDescriptor.OutputMode.ORDERED,
    }, keys=(None,), yielding=True))
    t = OneInputTransformation(env, data_stream.get_transformation(), OPERATOR_NAME, operator,
                               resolve_type(output_type), env.get_parallelism())
    env._add_operator(t)
    return DataStream(env, t)

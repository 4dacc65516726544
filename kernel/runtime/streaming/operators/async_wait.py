"""The async wait operator (``AsyncDataStream``): many requests of one task in flight at once.

For each input the operator starts the coroutine ``async_invoke(value)`` on its task's
:class:`~kernel.runtime.streaming.async_io.AsyncExecutor` and puts an entry into its queue (ordered or
unordered, :mod:`kernel.runtime.streaming.async_queue`); watermarks go into the queue too. Completed
entries leave the queue as their order allows: each element of an input's result list is
emitted with the input's timestamp, a watermark is forwarded when it reaches the front. At most
``capacity`` inputs are in the queue; an input that finds it full waits in the operator's
backlog and the operator *yields* (the task takes no more input: back pressure) until the
backlog has entered the queue.

Results, timeouts and retries follow PyFlink's ``ResultHandler`` and ``RetryableResultHandler``
(``pyflink/fn_execution/datastream/process/async_function/operation.py``), in the task's thread
of control: the first completion of an input wins and later ones are ignored; a timeout calls
``AsyncFunction.timeout(value)`` and emits its list; a result that is not a list (an iterable)
or an exception records an error and completes the input with no results. The error fails the
task at the next input, when the operator finishes or drains, or at the latest one PyFlink
bundle time (``python.fn-execution.bundle.time``, 1 s) after it happened. Retries: while the
result matches the strategy's result predicate, or the exception its exception predicate, no
more than ``timeout`` has passed since the first attempt and ``can_retry(attempts)``, the input
is attempted again after ``get_backoff_time_millis(attempts)``; a timeout during a pending retry
cancels it.

:meth:`AsyncWaitOperator.drain` finishes everything in flight (end of input, and before a
checkpoint barrier: PyFlink finishes its bundle there, so no request is ever in a checkpoint).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable
from typing import Any, Callable

from kernel.datastream.functions import AsyncRetryStrategy
from kernel.runtime.streaming.async_queue import (
    OrderedStreamElementQueue,
    RecordEntry,
    StreamElementQueue,
    UnorderedStreamElementQueue,
    WatermarkEntry,
)
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.runtime.streaming.outputs import blame

#: PyFlink's ``python.fn-execution.bundle.time`` default: an error surfaces at the latest then
BUNDLE_TIME_MS = 1000
_RECORD, _WATERMARK = 0, 1


class ResultHandler:
    """The outcome of one input: its first completion (result, exception or timeout) wins."""

    def __init__(self, operator: AsyncWaitOperator, entry: RecordEntry) -> None:
        self.operator = operator
        self.entry = entry
        self.timer: Any = None
        self.completed = False

    def register_timeout(self, timeout_ms: int) -> None:
        self.timer = self.operator.executor.call_later(timeout_ms, self.timer_triggered)

    def complete(self, result: Any) -> None:
        if not self.completed:
            self.completed = True
            self.complete_internal(result)

    def complete_exceptionally(self, error: BaseException) -> None:
        if not self.completed:
            self.completed = True
            self.complete_exceptionally_internal(error)

    def complete_internal(self, result: Any) -> None:
        operator = self.operator
        if isinstance(result, Iterable):
            try:
                results = list(result)
            except Exception as error:  # a generator failing while its results are taken
                self.complete_exceptionally_internal(error)
                return
            self._process_results(results)
            return
        if result is None:
            operator.mark_exception(RuntimeError(
                "The result of AsyncFunction cannot be none, please check the methods 'async_invoke' and "
                "'timeout' of class '%s'." % operator.class_name))
        else:
            operator.mark_exception(RuntimeError(
                "The result of AsyncFunction should be of list type, please check the methods 'async_invoke' "
                "and 'timeout' of class '%s'." % operator.class_name))
        self._process_results([])

    def complete_exceptionally_internal(self, error: BaseException) -> None:
        operator = self.operator
        wrapped = Exception("Error happens inside the class '%s' during handling input '%s'"
                            % (operator.class_name, str(self.entry.value)), error)
        wrapped.__cause__ = error
        operator.mark_exception(wrapped)
        self._process_results([])

    def _process_results(self, results: list) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.operator.entry_completed(self.entry, results)

    def timer_triggered(self) -> None:
        if self.completed:
            return
        self.completed = True
        self.timed_out()

    def timed_out(self) -> None:
        try:
            result = self.operator.timeout_func(self.entry.value)
        except Exception as error:
            self.complete_exceptionally_internal(error)
            return
        self.complete_internal(result)


class RetryableResultHandler:
    """Attempts of one input under a retry strategy, in front of its :class:`ResultHandler`."""

    def __init__(self, handler: ResultHandler, strategy: AsyncRetryStrategy) -> None:
        self.handler = handler
        self.operator = handler.operator
        self.strategy = strategy
        predicate = strategy.get_retry_predicate()
        self.result_predicate = predicate.result_predicate() or (lambda _: False)
        self.exception_predicate = predicate.exception_predicate() or (lambda _: False)
        self.retry_awaiting = False
        self.current_attempts = 1
        self.retry_timer: Any = None
        self.start_ms = 0
        self.timeout_ms = 0

    def register_timeout(self, timeout_ms: int) -> None:
        executor = self.operator.executor
        self.handler.timer = executor.call_later(timeout_ms, self.timer_triggered)
        self.start_ms = executor.now_ms()
        self.timeout_ms = timeout_ms

    def complete(self, result: Any) -> None:
        self._process_retry(result, None)

    def complete_exceptionally(self, error: BaseException) -> None:
        self._process_retry(None, error)

    def _process_retry(self, result: Any, error: BaseException | None) -> None:
        if self.retry_awaiting:
            return
        self.retry_awaiting = True
        satisfy = ((result is not None and self.result_predicate(result))
                   or (error is not None and self.exception_predicate(error)))
        if not self._is_timeout() and satisfy and self.strategy.can_retry(self.current_attempts):
            backoff = self.strategy.get_backoff_time_millis(self.current_attempts)
            self.retry_timer = self.operator.executor.call_later(backoff, self._do_retry)
        elif error is None:
            self.handler.complete(result)
        else:
            self.handler.complete_exceptionally(error)

    def _is_timeout(self) -> bool:
        return self.operator.executor.now_ms() - self.start_ms > self.timeout_ms

    def _do_retry(self) -> None:
        if self.retry_awaiting:
            self.retry_awaiting = False
            self.current_attempts += 1
            self.operator.invoke(self.handler.entry.value, self)

    def timer_triggered(self) -> None:
        handler = self.handler
        if handler.completed:
            return
        handler.completed = True
        if self.retry_timer is not None:
            self.retry_timer.cancel()
            self.retry_timer = None
        self.retry_awaiting = False
        handler.timed_out()


class AsyncWaitOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        function = self.spec.function
        params = self.spec.params
        self.class_name = type(function)
        self.async_invoke = function.async_invoke
        self.timeout_func = function.timeout
        self.timeout_ms: int = params["timeout_ms"]
        self.capacity: int = params["capacity"]
        self.strategy: AsyncRetryStrategy = copy.deepcopy(params["retry_strategy"])  # the subtask's own
        predicate = self.strategy.get_retry_predicate()
        self.retry_enabled = predicate.result_predicate() is not None or predicate.exception_predicate() is not None
        self.queue: StreamElementQueue = OrderedStreamElementQueue() if params["ordered"] \
            else UnorderedStreamElementQueue()
        self.backlog: deque[tuple[int, Any, Any]] = deque()
        self.exception: BaseException | None = None
        self._exception_timer: Any = None
        self.executor = self.runtime.create_async_executor(self.name)

    # -- input --------------------------------------------------------------------------------

    def process_batch(self, values: list, timestamps: list | None) -> None:
        self._raise_exception_if_exists()
        backlog = self.backlog
        if timestamps is None:
            backlog.extend((_RECORD, value, None) for value in values)
        else:
            backlog.extend((_RECORD, value, ts) for value, ts in zip(values, timestamps))
        self._progress()
        if backlog:
            self.executor.yield_until(self._backlog_admitted)

    def process_watermark(self, timestamp: int) -> None:
        self.current_watermark = timestamp
        self.backlog.append((_WATERMARK, timestamp, None))
        self._progress()
        if self.backlog:
            self.executor.yield_until(self._backlog_admitted)

    def _backlog_admitted(self) -> bool:
        return not self.backlog

    def _progress(self) -> None:
        """Admit what the capacity allows from the backlog, then emit what may leave; again
        while emitting makes room."""
        queue, backlog, capacity = self.queue, self.backlog, self.capacity
        while True:
            while backlog and (backlog[0][0] == _WATERMARK or queue.records < capacity):
                kind, value, timestamp = backlog.popleft()
                if kind == _WATERMARK:
                    queue.put_watermark(value)
                else:
                    entry = RecordEntry(value, timestamp)
                    queue.put_record(entry)
                    self._start(entry)
            entry = queue.pop_completed()
            if entry is None:
                return
            if type(entry) is WatermarkEntry:
                self.output.emit_watermark(entry.timestamp)
            elif entry.results:
                results = entry.results
                self.output.collect(results, None if entry.timestamp is None else [entry.timestamp] * len(results))

    def _start(self, entry: RecordEntry) -> None:
        handler = ResultHandler(self, entry)
        if self.retry_enabled:
            retryable = RetryableResultHandler(handler, self.strategy)
            retryable.register_timeout(self.timeout_ms)
            self.invoke(entry.value, retryable)
        else:
            if self.timeout_ms > 0:
                handler.register_timeout(self.timeout_ms)
            self.invoke(entry.value, handler)

    def invoke(self, value: Any, handler: ResultHandler | RetryableResultHandler) -> None:
        """One attempt of ``async_invoke(value)``; its outcome goes to ``handler``."""
        async_invoke = self.async_invoke

        def completed(result: Any, error: BaseException | None) -> None:
            if error is None:
                handler.complete(result)
            else:
                handler.complete_exceptionally(error)

        self.executor.submit(lambda: async_invoke(value), completed)

    def entry_completed(self, entry: RecordEntry, results: list) -> None:
        entry.results = results
        self.queue.completed(entry)
        self._progress()

    # -- errors -------------------------------------------------------------------------------

    def mark_exception(self, exception: BaseException) -> None:
        """Record an error of a request (the latest one is raised, as in PyFlink)."""
        self.exception = exception
        if self._exception_timer is None:
            self._exception_timer = self.executor.call_later(BUNDLE_TIME_MS, self._raise_exception_if_exists)

    def _raise_exception_if_exists(self) -> None:
        exception = self.exception
        if exception is not None:
            blame(exception, self.name)
            raise exception

    # -- finishing ----------------------------------------------------------------------------

    def in_flight(self) -> bool:
        """Inputs or watermarks not yet emitted."""
        return bool(self.backlog) or not self.queue.is_empty()

    def drain(self, on_drained: Callable[[], None]) -> bool:
        def drained() -> None:
            self._raise_exception_if_exists()
            on_drained()

        if self.in_flight() and not self.executor.when(lambda: not self.in_flight(), drained):
            return False
        self._raise_exception_if_exists()
        return True

    def close(self) -> None:
        executor = getattr(self, "executor", None)
        if executor is not None:
            executor.close()
        super().close()

"""PyFlink's ``pyflink.datastream.async_retry_strategies``: no retry, fixed delay, exponential backoff.

A fixed-delay or exponential-backoff strategy with ``max_attempts`` N allows N retries: an input
is attempted at most N + 1 times. The exponential strategy keeps its last delay on the strategy
object (each subtask has its own copy, as PyFlink unpickles one per operator): the first retry
waits ``initial_delay``, every later one ``int(min(last * multiplier, max_retry_delay))``.
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

from kernel.datastream.functions import AsyncRetryPredicate, AsyncRetryStrategy

__all__ = ["RetryPredicate", "NoRetryStrategy", "FixedDelayRetryStrategy", "ExponentialBackoffDelayRetryStrategy"]

OUT = TypeVar("OUT")

ResultPredicate = Callable[[list], bool]
ExceptionPredicate = Callable[[Exception], bool]


class RetryPredicate(AsyncRetryPredicate, Generic[OUT]):
    def __init__(self, result_predicate: ResultPredicate | None,
                 exception_predicate: ExceptionPredicate | None) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate | None:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate | None:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


class FixedDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    def __init__(self, max_attempts: int, backoff_time_millis: int, result_predicate: ResultPredicate | None,
                 exception_predicate: ExceptionPredicate | None) -> None:
        assert max_attempts > 0, "max_attempts should be greater than zero."
        assert backoff_time_millis > 0, "backoff_time_millis should be greater than zero."
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(self._result_predicate, self._exception_predicate)


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    def __init__(self, max_attempts: int, initial_delay: int, max_retry_delay: int, multiplier: float,
                 result_predicate: ResultPredicate | None, exception_predicate: ExceptionPredicate | None) -> None:
        assert max_attempts > 0, "max_attempts should be greater than zero."
        assert initial_delay > 0, "initial_delay should be greater than zero."
        assert max_retry_delay > 0, "max_retry_delay should be greater than zero."
        assert multiplier > 0, "multiplier should be greater than zero."
        self._max_attempts = max_attempts
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate
        self._initial_delay = initial_delay
        self._last_retry_delay = initial_delay

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
            return self._last_retry_delay
        backoff = int(min(self._last_retry_delay * self._multiplier, self._max_retry_delay))
        self._last_retry_delay = backoff
        return backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(self._result_predicate, self._exception_predicate)


NO_RETRY_STRATEGY: AsyncRetryStrategy = NoRetryStrategy()

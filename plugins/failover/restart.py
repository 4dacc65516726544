"""Restart back-off strategies, as Flink's RestartBackoffTimeStrategy implementations.

``notify_failure(now_ms)`` records a failure and says whether it starts a new restart attempt
(exponential delay merges failures that arrive while a restart is pending);
``can_restart()`` says whether the job may restart; ``backoff_time_ms(now_ms)`` how long to
wait first. ``str()`` is Flink's description, used in "Recovery is suppressed by ...".
"""

from __future__ import annotations

from collections import deque
from random import Random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel.contracts.failover import RestartBackoffTimeStrategy
    from plugins.failover.options import RestartOptions


class NoRestartBackoffTimeStrategy:
    def notify_failure(self, now_ms: int) -> bool:
        return True

    def can_restart(self) -> bool:
        return False

    def backoff_time_ms(self, now_ms: int) -> int:
        return 0

    def __str__(self) -> str:
        return "NoRestartBackoffTimeStrategy"


class FixedDelayRestartBackoffTimeStrategy:
    """At most ``attempts`` restarts, each ``delay_ms`` after its failure."""

    def __init__(self, attempts: int, delay_ms: int) -> None:
        self.attempts = attempts
        self.delay_ms = delay_ms
        self.current = 0

    def notify_failure(self, now_ms: int) -> bool:
        self.current += 1
        return True

    def can_restart(self) -> bool:
        return self.current <= self.attempts

    def backoff_time_ms(self, now_ms: int) -> int:
        return self.delay_ms

    def __str__(self) -> str:
        return f"FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts={self.attempts}, backoffTimeMS={self.delay_ms})"


class FailureRateRestartBackoffTimeStrategy:
    """Restart unless more than ``max_failures`` failures fall within ``interval_ms``."""

    def __init__(self, max_failures: int, interval_ms: int, delay_ms: int) -> None:
        self.max_failures = max_failures
        self.interval_ms = interval_ms
        self.delay_ms = delay_ms
        self.failures: deque[int] = deque(maxlen=max_failures + 1)
        self.now = 0

    def notify_failure(self, now_ms: int) -> bool:
        self.failures.append(now_ms)
        self.now = now_ms
        return True

    def can_restart(self) -> bool:
        if len(self.failures) <= self.max_failures:
            return True
        return self.now - self.failures[0] > self.interval_ms

    def backoff_time_ms(self, now_ms: int) -> int:
        return self.delay_ms

    def __str__(self) -> str:
        return (f"FailureRateRestartBackoffTimeStrategy(failuresIntervalMS={self.interval_ms},"
                f"backoffTimeMS={self.delay_ms},maxFailuresPerInterval={self.max_failures})")


class ExponentialDelayRestartBackoffTimeStrategy:
    """Back-off ``min(initial · multiplier^attempt, max)`` (± jitter, between initial and max); failures
    while a restart is pending are merged into it; after ``reset_threshold_ms`` without
    failures the attempt count starts over."""

    NO_RESTART_YET = -(1 << 31)

    def __init__(self, initial_ms: int, max_ms: int, multiplier: float, reset_threshold_ms: int, jitter: float,
                 attempts: int, rng: Random) -> None:
        self.initial_ms = initial_ms
        self.max_ms = max_ms
        self.multiplier = multiplier
        self.reset_threshold_ms = reset_threshold_ms
        self.jitter = jitter
        self.attempts = attempts
        self.rng = rng
        self.current = 0
        self.next_restart = self.NO_RESTART_YET

    def notify_failure(self, now_ms: int) -> bool:
        if now_ms <= self.next_restart:
            return False  # merged into the restart already pending
        if now_ms - self.next_restart >= self.reset_threshold_ms:
            self.current = 0
        self.next_restart = now_ms + self._backoff()
        self.current += 1
        return True

    def _backoff(self) -> int:
        backoff = self.initial_ms
        for _ in range(self.current):  # as Flink grows it: never past max, so never overflowing
            if backoff >= self.max_ms:
                break
            backoff = min(int(backoff * self.multiplier), self.max_ms)
        offset = int(backoff * self.jitter)
        jitter = self.rng.randint(-offset, offset) if offset else 0
        return max(self.initial_ms, min(backoff + jitter, self.max_ms))

    def can_restart(self) -> bool:
        return self.current <= self.attempts

    def backoff_time_ms(self, now_ms: int) -> int:
        return max(0, self.next_restart - now_ms)

    def __str__(self) -> str:
        return (f"ExponentialDelayRestartBackoffTimeStrategy(initialBackoffMS={self.initial_ms}, "
                f"maxBackoffMS={self.max_ms}, backoffMultiplier={self.multiplier}, "
                f"resetBackoffThresholdMS={self.reset_threshold_ms}, jitterFactor={self.jitter}, "
                f"attemptsBeforeResetBackoff={self.attempts}, currentRestartAttempt={self.current}, "
                f"nextRestartTimestamp={self.next_restart})")


def create_restart_strategy(options: RestartOptions, rng: Random, checkpointing: bool) -> RestartBackoffTimeStrategy:
    """The configured strategy; when none is configured, Flink's default: exponential delay
    (with the option defaults) for a job that checkpoints, no restarts otherwise."""
    kind = options.restart_type if options.type or not checkpointing else "exponential-delay"
    if kind == "fixed-delay":
        return FixedDelayRestartBackoffTimeStrategy(options.fixed_delay_attempts, options.fixed_delay_delay)
    if kind == "failure-rate":
        return FailureRateRestartBackoffTimeStrategy(options.failure_rate_max_failures, options.failure_rate_interval,
                                                     options.failure_rate_delay)
    if kind == "exponential-delay":
        return ExponentialDelayRestartBackoffTimeStrategy(
            options.exponential_initial_backoff, options.exponential_max_backoff, options.exponential_multiplier,
            options.exponential_reset_threshold, options.exponential_jitter, options.exponential_attempts, rng)
    return NoRestartBackoffTimeStrategy()

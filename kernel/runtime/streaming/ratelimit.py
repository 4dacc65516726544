"""The rate limiter of a rate-limited source subtask: Flink's ``GuavaRateLimiter``, which is
Guava's ``RateLimiter.create(perSecond)`` (``SmoothBursty``, one second of burst).

A permit is asked for each record, after the previous one went through the operator chain
(``RateLimitedSourceReader.isAvailable``); the record goes when its permit is granted. Guava
reserves permits "paying later": a request is granted at the limiter's next free moment and
pushes that moment one interval on, so records follow one interval apart from the first. While
nobody asks (the task is back-pressured, or busy in a chained operator), the permits not taken
are stored, at most one second's worth, and granted at once when asked again: after a stall the
source catches up at most a second and then goes on at its rate. Times are Guava's: microseconds,
the interval truncated to whole microseconds per permit.
"""

from __future__ import annotations

US_PER_MS = 1000


class RateLimiter:
    def __init__(self, per_second: float, now_ms: int) -> None:
        self.per_second = per_second
        self.interval_us = 1_000_000.0 / per_second
        self.max_stored = per_second  # one second of burst
        self.stored = 0.0
        self.next_free_us = now_ms * US_PER_MS
        #: when the permit asked for last is granted (µs); None: no permit asked for
        self.granted_us: int | None = None

    def ask(self, now_ms: int) -> None:
        """Ask for the next record's permit now (unless it was asked for already)."""
        if self.granted_us is None:
            self.granted_us = self._reserve(now_ms * US_PER_MS)

    def take(self, most: int, now_ms: int) -> int:
        """How many of ``most`` records may go now: the one whose permit was asked for if it is
        granted by now, then those whose permits are granted at once (asked for as each goes:
        the records of one batch go at the same moment). A permit not granted at once is not
        asked for here: the next is asked for when the batch went through the chain."""
        now_us = now_ms * US_PER_MS
        taken = 0
        if self.granted_us is not None:
            if self.granted_us > now_us:
                return 0
            self.granted_us = None
            taken = 1
        while taken < most and self._granted_at(now_us) <= now_us:
            self._reserve(now_us)
            taken += 1
        return taken

    def available_at(self, now_ms: int) -> int:
        """The processing time (ms) when the next record's permit is granted."""
        self.ask(now_ms)
        return -(-self.granted_us // US_PER_MS)

    def _granted_at(self, now_us: int) -> int:
        """When a permit asked for at ``now_us`` would be granted."""
        return max(now_us, self.next_free_us)

    def _reserve(self, now_us: int) -> int:
        """Guava's ``reserveEarliestAvailable`` of one permit: the moment it is granted."""
        if now_us > self.next_free_us:
            self.stored = min(self.max_stored, self.stored + (now_us - self.next_free_us) / self.interval_us)
            self.next_free_us = now_us
        granted = self.next_free_us
        spent = min(1.0, self.stored)
        self.next_free_us += int((1.0 - spent) * self.interval_us)
        self.stored -= spent
        return granted

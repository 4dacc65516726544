"""Watermark generators of the built-in strategies.

``on_events(values, timestamps, output)`` sees each batch (timestamps None when the records
have none); ``on_periodic_emit(output)`` runs every ``pipeline.auto-watermark-interval``;
``max_event_time()`` is the largest timestamp seen (None before any).
"""

from __future__ import annotations

from typing import Any, Callable

from kernel.clock import MIN_LONG


class BoundedOutOfOrdernessWatermarks:
    """Watermark = max timestamp seen - out-of-orderness - 1 (MIN before any event)."""

    def __init__(self, out_of_orderness_ms: int) -> None:
        self.out_of_orderness = out_of_orderness_ms
        self.max_timestamp = MIN_LONG + out_of_orderness_ms + 1

    def on_events(self, values: list, timestamps: list | None, output: Any) -> None:
        if timestamps:
            latest = max(timestamps)
            if latest > self.max_timestamp:
                self.max_timestamp = latest

    def on_periodic_emit(self, output: Any) -> None:
        output.emit_watermark(self.max_timestamp - self.out_of_orderness - 1)

    def max_event_time(self) -> int | None:
        return None if self.max_timestamp == MIN_LONG + self.out_of_orderness + 1 else self.max_timestamp


class WatermarksWithIdleness:
    """Flink's WatermarksWithIdleness and IdlenessTimer: a periodic check that sees no new
    events since the previous one starts the inactivity; a later check more than
    ``idle_timeout_ms`` after that start marks the output idle instead of emitting; any event
    resets it (and the next watermark or record makes the output active again)."""

    def __init__(self, inner: Any, idle_timeout_ms: int, now_ms: Callable[[], int]) -> None:
        self.inner = inner
        self.idle_timeout = idle_timeout_ms
        self.now_ms = now_ms
        self.events = 0
        self.last_checked_events = 0
        self.inactive_since: int | None = None

    def on_events(self, values: list, timestamps: list | None, output: Any) -> None:
        self.events += len(values)
        self.inner.on_events(values, timestamps, output)

    def _check_if_idle(self) -> bool:
        if self.events != self.last_checked_events:
            self.last_checked_events = self.events
            self.inactive_since = None
            return False
        if self.inactive_since is None:
            self.inactive_since = self.now_ms()
            return False
        return self.now_ms() - self.inactive_since > self.idle_timeout

    def max_event_time(self) -> int | None:
        return self.inner.max_event_time()

    def on_periodic_emit(self, output: Any) -> None:
        if self._check_if_idle():
            output.mark_idle()
        else:
            self.inner.on_periodic_emit(output)


def create_generator(strategy: Any, now_ms: Callable[[], int]) -> Any:
    generator = BoundedOutOfOrdernessWatermarks(strategy.out_of_orderness_ms)
    if strategy.idleness_ms is not None:
        return WatermarksWithIdleness(generator, strategy.idleness_ms, now_ms)
    return generator

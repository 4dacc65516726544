"""Watermark generators of the built-in strategies.

``on_events(values, timestamps, output)`` sees each batch (timestamps None when the records
have none); ``on_periodic_emit(output)`` runs every ``pipeline.auto-watermark-interval``.
"""

from __future__ import annotations

from typing import Any, Callable

MIN_LONG = -(1 << 63)


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


class WatermarksWithIdleness:
    """Marks the output idle when no event arrived for ``idle_timeout_ms`` of processing time
    (checked at periodic emission); the next event makes it active again."""

    def __init__(self, inner: Any, idle_timeout_ms: int, now_ms: Callable[[], int]) -> None:
        self.inner = inner
        self.idle_timeout = idle_timeout_ms
        self.now_ms = now_ms
        self.events = 0
        self.last_checked_events = -1
        self.quiet_since = now_ms()

    def on_events(self, values: list, timestamps: list | None, output: Any) -> None:
        self.events += len(values)
        self.inner.on_events(values, timestamps, output)

    def on_periodic_emit(self, output: Any) -> None:
        now = self.now_ms()
        if self.events != self.last_checked_events:
            self.last_checked_events = self.events
            self.quiet_since = now
        if now - self.quiet_since >= self.idle_timeout:
            output.mark_idle()
        else:
            self.inner.on_periodic_emit(output)


def create_generator(strategy: Any, now_ms: Callable[[], int]) -> Any:
    generator = BoundedOutOfOrdernessWatermarks(strategy.out_of_orderness_ms)
    if strategy.idleness_ms is not None:
        return WatermarksWithIdleness(generator, strategy.idleness_ms, now_ms)
    return generator

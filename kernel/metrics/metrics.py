"""The metric objects user functions update per record, as Flink implements them: a counter
(``SimpleCounter``), a meter over a counter (``MeterView``), a distribution and a gauge.

Updating one is a plain attribute change — no lock, no event, no hook: the task's metrics are
sampled every second (:class:`kernel.metrics.groups.TaskMetricGroup`), from another thread
under the realtime clock, which reads the attributes as they are then (as Flink's reporters
read its unsynchronised counters). A metric is updated by the task's thread of control (or by
one other thread, as an async function's loop); two threads updating one metric may lose an
update, as in Flink.
"""

from __future__ import annotations

import decimal
import numbers
from typing import Any, Callable

from kernel.metrics.metricbase import Counter, Distribution, Gauge, Meter
from kernel.lifecycle.tracebacks import describe

#: Flink's ``View.UPDATE_INTERVAL_SECONDS``: how often a meter's rate is computed
UPDATE_INTERVAL_SECONDS = 5


class SimpleCounter(Counter):
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def dec(self, n: int = 1) -> None:
        self.count -= n

    def get_count(self) -> int:
        return self.count


class MeterView(Meter):
    """Flink's MeterView: events counted; every 5 s (:meth:`update`) the count goes into a ring
    of ``span / 5 + 1`` counts, and the rate is the difference between the newest and the
    oldest over the span (so a meter younger than its span reports the events since it was
    created over the whole span). The span is cut to a multiple of 5 s, at least 5 s."""

    __slots__ = ("count", "time_span_in_seconds", "_values", "_time", "rate")

    def __init__(self, time_span_in_seconds: int = 60) -> None:
        span = max(int(time_span_in_seconds), UPDATE_INTERVAL_SECONDS)
        self.time_span_in_seconds = span - span % UPDATE_INTERVAL_SECONDS
        self.count = 0
        self._values = [0] * (self.time_span_in_seconds // UPDATE_INTERVAL_SECONDS + 1)
        self._time = 0
        self.rate = 0.0

    def mark_event(self, value: int = 1) -> None:
        self.count += value

    def get_count(self) -> int:
        return self.count

    def get_rate(self) -> float:
        return self.rate

    def update(self) -> None:
        values = self._values
        self._time = time = (self._time + 1) % len(values)
        values[time] = self.count
        self.rate = (values[time] - values[(time + 1) % len(values)]) / self.time_span_in_seconds


class SimpleDistribution(Distribution):
    """Sum, count, minimum and maximum of the values (PyFlink's process mode reports these, its
    thread mode the last value, which is kept too)."""

    __slots__ = ("sum", "count", "min", "max", "last")

    def __init__(self) -> None:
        self.sum: Any = 0
        self.count = 0
        self.min: Any = None
        self.max: Any = None
        self.last: Any = None

    def update(self, value: int) -> None:
        self.sum += value
        self.count += 1
        self.last = value
        if self.min is None or value < self.min:
            self.min = value
        if self.max is None or value > self.max:
            self.max = value


class CallbackGauge(Gauge):
    """A gauge reading ``obj()``, the callable ``MetricGroup.gauge`` was given."""

    __slots__ = ("obj",)

    def __init__(self, obj: Callable[[], Any]) -> None:
        self.obj = obj

    def get_value(self) -> Any:
        return self.obj()


def number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (bool, int, float, Decimal, ...), else None."""
    if isinstance(value, (numbers.Real, decimal.Decimal)):
        return float(value)
    return None


def read_gauge(gauge: CallbackGauge) -> tuple[float | None, str]:
    """A gauge's value as a float, and the error when there is none: what its callable raised,
    or what it returned if that is not a number."""
    try:
        value = gauge.get_value()
    except Exception as exc:  # the user's callable: its error is recorded, the task goes on
        return None, describe(exc)
    converted = number(value)
    if converted is None:
        return None, f"returned {value!r:.200} ({type(value).__name__}), not a number"
    return converted, ""

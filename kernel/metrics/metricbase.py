"""The user-metrics API, as PyFlink's ``pyflink.metrics.metricbase``: a function registers
metrics in the :class:`MetricGroup` its runtime context gives (``get_metrics_group()``, in
``open``) and updates them per record.

PyFlink's module has no ``Gauge`` class (``MetricGroup.gauge`` takes a callable and returns
None); rill's registered gauges are :class:`Gauge` objects, so the name exists here too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable


class MetricGroup(ABC):
    """A named container of metrics and of further groups; a metric's identifier is the
    group's scope, the names of the groups added below it and the metric's name, joined by
    ``.``."""

    @abstractmethod
    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """The sub-group ``name`` (created once: asking again gives the same group). With
        ``extra``, a key group ``name`` and below it a value group ``extra``, which is returned."""

    @abstractmethod
    def counter(self, name: str) -> Counter:
        """Register a :class:`Counter` (or get the one this group registered as ``name``)."""

    @abstractmethod
    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        """Register a gauge: ``obj()`` is read each time the task's metrics are sampled."""

    @abstractmethod
    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        """Register a :class:`Meter`: the rate of its events over the last
        ``time_span_in_seconds`` (cut to a multiple of 5, at least 5), updated every 5 seconds."""

    @abstractmethod
    def distribution(self, name: str) -> Distribution:
        """Register a :class:`Distribution` (sum, count, min and max of its values)."""


class Metric(ABC):
    """Base of every metric."""


class Counter(Metric, ABC):
    """A count that is incremented and decremented."""

    @abstractmethod
    def inc(self, n: int = 1) -> None:
        """Add ``n`` to the count."""

    @abstractmethod
    def dec(self, n: int = 1) -> None:
        """Subtract ``n`` from the count."""

    @abstractmethod
    def get_count(self) -> int:
        """The current count."""


class Gauge(Metric, ABC):
    """A value read when the metrics are sampled."""

    @abstractmethod
    def get_value(self) -> int:
        """The current value."""


class Meter(Metric, ABC):
    """Throughput: events marked, and their rate."""

    @abstractmethod
    def mark_event(self, value: int = 1) -> None:
        """Mark ``value`` events."""

    @abstractmethod
    def get_count(self) -> int:
        """The number of events marked."""


class Distribution(Metric, ABC):
    """Statistics of the values it is updated with: their sum, count, minimum and maximum."""

    @abstractmethod
    def update(self, value: int) -> None:
        """Add ``value`` to the distribution."""

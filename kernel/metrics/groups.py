"""Metric groups: the operators' groups of a task, the groups users add below them, and the
task's registry of every metric they registered, sampled with the task's metrics.

As Flink's ``TaskMetricGroup`` holds an ``OperatorMetricGroup`` per operator, a
:class:`TaskMetricGroup` hands each operator of one execution attempt its group (the runtime
context's ``get_metrics_group()``) and keeps, in registration order, what was registered
under it. A metric's identity is (operator, scope, name): the scope is the names of the user
groups from the operator's group down (``add_group("k", "v")`` adds ``k`` then ``v``), joined by
``.``; Flink's identifier is ``<subtask>.<operator>.<scope>.<name>``. Registering a name again
in the same group gives the metric registered first (PyFlink's default process mode shares
one Beam cell per name; a gauge takes the newer callable), registering it as another kind of
metric is an error.

:meth:`TaskMetricGroup.sample` reads every metric at one instant: a counter's count, a gauge's
value (its callable is called then), a meter's rate and count, a distribution's sum, count,
minimum, maximum and last value. Meters are updated (Flink's ``MeterView.update``, which
Flink's view updater runs every 5 s) at every fifth periodic sample — the task's metrics are
sampled every second — before the values are read; a backend that does not sample
periodically updates them itself (:meth:`TaskMetricGroup.update_meters`).
"""

from __future__ import annotations

from typing import Any, Callable

from kernel.metrics.metricbase import MetricGroup
from kernel.metrics.metrics import (
    UPDATE_INTERVAL_SECONDS,
    CallbackGauge,
    MeterView,
    SimpleCounter,
    SimpleDistribution,
    number,
    read_gauge,
)

COUNTER, GAUGE, METER, DISTRIBUTION = "counter", "gauge", "meter", "distribution"
_CLASSES = {COUNTER: SimpleCounter, METER: MeterView, DISTRIBUTION: SimpleDistribution}


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a {what} name must be a str, not {type(value).__name__} ({value!r:.100})")
    return value


class GenericMetricGroup(MetricGroup):
    """A group of user metrics: its scope, and where it registers (``registry``: None for a
    group whose metrics work but are reported nowhere, Flink's ``UnregisteredMetricsGroup``)."""

    def __init__(self, registry: TaskMetricGroup | None, operator: OperatorKey, scope: tuple[str, ...]) -> None:
        self._registry = registry
        self._operator = operator
        self._scope = scope
        #: sub-groups by (name, kind: "generic", "key" or "value")
        self._groups: dict[tuple[str, str], GenericMetricGroup] = {}
        self._local: dict[str, Any] = {}  # metrics of an unregistered group, by name

    @property
    def scope(self) -> str:
        return ".".join(self._scope)

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        name = _name(name, "metric group")
        if extra is None:
            return self._sub_group(name, "generic")
        return self._sub_group(name, "key")._sub_group(_name(extra, "metric group"), "value")

    def _sub_group(self, name: str, kind: str) -> GenericMetricGroup:
        group = self._groups.get((name, kind))
        if group is None:
            group = self._groups[(name, kind)] = GenericMetricGroup(self._registry, self._operator, (*self._scope, name))
        return group

    def counter(self, name: str) -> SimpleCounter:
        return self._register(name, COUNTER, SimpleCounter)

    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        if not callable(obj):
            raise TypeError(f"gauge {name!r}: obj must be a callable returning the gauge's value, not "
                            f"{type(obj).__name__}")
        self._register(name, GAUGE, lambda: CallbackGauge(obj)).obj = obj

    def meter(self, name: str, time_span_in_seconds: int = 60) -> MeterView:
        if isinstance(time_span_in_seconds, bool) or not isinstance(time_span_in_seconds, int):
            raise TypeError(f"meter {name!r}: time_span_in_seconds must be an int, not "
                            f"{type(time_span_in_seconds).__name__}")
        return self._register(name, METER, lambda: MeterView(time_span_in_seconds))

    def distribution(self, name: str) -> SimpleDistribution:
        return self._register(name, DISTRIBUTION, SimpleDistribution)

    def _register(self, name: str, metric_type: str, create: Callable[[], Any]) -> Any:
        name = _name(name, "metric")
        if self._registry is not None:
            return self._registry.register(self._operator, self.scope, name, metric_type, create)
        metric = self._local.get(name)
        if metric is None:
            metric = self._local[name] = create()
        elif _type_of(metric) != metric_type:
            raise ValueError(_clash(self.scope, name, _type_of(metric), metric_type))
        return metric


OperatorKey = tuple[str, str]  # (operator name, operator id)


class _Registered:
    __slots__ = ("operator", "operator_id", "scope", "name", "metric_type", "metric")

    def __init__(self, operator: OperatorKey, scope: str, name: str, metric_type: str, metric: Any) -> None:
        self.operator, self.operator_id = operator
        self.scope = scope
        self.name = name
        self.metric_type = metric_type
        self.metric = metric


def _type_of(metric: Any) -> str:
    return GAUGE if isinstance(metric, CallbackGauge) else next(t for t, c in _CLASSES.items() if isinstance(metric, c))


def _clash(scope: str, name: str, registered: str, asked: str) -> str:
    where = f"{scope}.{name}" if scope else name
    return f"metric {where!r} is registered as a {registered}: it cannot also be a {asked}"


class TaskMetricGroup:
    """Every user metric of one execution attempt of a subtask, in registration order.

    Operators register from the task's thread (in ``open`` or later); the sampler reads from
    its own thread under the realtime clock, over a copy of the list (appending is atomic)."""

    def __init__(self) -> None:
        self._registered: list[_Registered] = []
        self._by_key: dict[tuple[str, str, str, str], _Registered] = {}
        self._operators: dict[OperatorKey, GenericMetricGroup] = {}
        self._samples = 0  # periodic samples taken
        #: the rows of the latest sample
        self.previous: list[dict[str, Any]] = []

    def operator_group(self, operator: str, operator_id: str = "") -> GenericMetricGroup:
        """The group of operator ``operator`` (Flink's ``getOrAddOperator``)."""
        key = (operator, operator_id)
        group = self._operators.get(key)
        if group is None:
            group = self._operators[key] = GenericMetricGroup(self, key, ())
        return group

    def register(self, operator: OperatorKey, scope: str, name: str, metric_type: str,
                 create: Callable[[], Any]) -> Any:
        key = (*operator, scope, name)
        registered = self._by_key.get(key)
        if registered is None:
            registered = self._by_key[key] = _Registered(operator, scope, name, metric_type, create())
            self._registered.append(registered)
        elif registered.metric_type != metric_type:
            raise ValueError(_clash(scope, name, registered.metric_type, metric_type))
        return registered.metric

    def update_meters(self) -> None:
        """Update every meter's rate (Flink's view updater, every 5 s)."""
        for entry in list(self._registered):
            if entry.metric_type == METER:
                entry.metric.update()

    def sample(self, final: bool = False) -> list[dict[str, Any]]:
        """Every metric's values now (the fields of a ``UserMetricSampled`` event, but the
        task's); a periodic sample (not ``final``) updates the meters first every fifth time."""
        if not final:
            self._samples += 1
            if self._samples % UPDATE_INTERVAL_SECONDS == 0:
                self.update_meters()
        rows = [_row(entry) for entry in list(self._registered)]
        self.previous = rows
        return rows


def _row(entry: _Registered) -> dict[str, Any]:
    metric, metric_type = entry.metric, entry.metric_type
    row: dict[str, Any] = {"operator": entry.operator, "operator_id": entry.operator_id, "scope": entry.scope,
                           "name": entry.name, "metric_type": metric_type}
    if metric_type == COUNTER:
        count = metric.count
        row.update(value=number(count), count=_integer(count))
    elif metric_type == GAUGE:
        value, error = read_gauge(metric)
        row.update(value=value, error=error)
    elif metric_type == METER:
        row.update(value=metric.rate, count=_integer(metric.count))
    else:
        row.update(value=number(metric.last), count=metric.count, sum=number(metric.sum), min=number(metric.min),
                   max=number(metric.max))
    return row


def _integer(value: Any) -> int:
    """A count as the event's integer (a count a function added fractions to is truncated)."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def unregistered_group(operator: str) -> GenericMetricGroup:
    """A group whose metrics work but are never sampled (a key selector's copy in the keyed
    operator, which computes keys again: its metrics count in the task producing the keys)."""
    return GenericMetricGroup(None, (operator, ""), ())

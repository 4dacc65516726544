"""User metrics (``pyflink.metrics``): what ``RuntimeContext.get_metrics_group()`` hands out."""

from kernel.metrics.metricbase import Counter, Distribution, Gauge, Meter, Metric, MetricGroup

__all__ = ["MetricGroup", "Metric", "Counter", "Gauge", "Meter", "Distribution"]

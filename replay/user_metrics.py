"""The user metrics of a recorded run (PyFlink's ``MetricGroup`` API), from the
``user_metrics`` view: their values at the end (``rill metrics``, the report), at an instant
(``rill replay --at``) and over time (the report's charts).

A metric is one (vertex, subtask, operator, scope, name); its value at an instant is its
latest sample at or before it, of the subtask's latest attempt that sampled it (a restarted
attempt starts its metrics from zero, as in Flink).
"""

from __future__ import annotations

import math
from typing import Any

#: per metric and subtask: the latest sample at or before $t_s (seconds after the run's start),
#: in the order the job's vertices were defined, then the metrics were first sampled, then subtasks
LATEST = """
WITH v AS (SELECT vertex_id, min(seq) AS vertex_seq FROM rill.ev_job_vertex_defined WHERE run_id = $run GROUP BY ALL),
samples AS (
    SELECT *, row_number() OVER (PARTITION BY vertex_id, subtask, operator, operator_id, scope, name
                                 ORDER BY attempt DESC, seq DESC) AS latest,
           min(seq) OVER (PARTITION BY vertex_id, operator, operator_id, scope, name) AS first_seq
    FROM user_metrics WHERE run_id = $run AND t_s <= $t_s)
SELECT s.vertex_name AS vertex, s.subtask, s.attempt, s.operator, s.metric, s.kind, s.value, s.count, s.sum, s.min,
       s.max, s.error, s.t_s AS sampled_s
FROM samples s LEFT JOIN v ON v.vertex_id = s.vertex_id
WHERE s.latest = 1
ORDER BY v.vertex_seq, s.first_seq, s.subtask"""

#: per metric and subtask, every sample in time order (the report's charts)
SERIES = """
SELECT vertex_id, vertex_name AS vertex, subtask, attempt, operator, metric, kind, t_s, value
FROM user_metrics WHERE run_id = $run ORDER BY seq"""

def _rows(con: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    result = con.execute(query, params)
    columns = [d[0] for d in result.description]
    return [dict(zip(columns, row)) for row in result.fetchall()]


def user_metrics_at(con: Any, run_id: str, seconds: float = math.inf) -> list[dict[str, Any]]:
    """Every user metric of every subtask at ``seconds`` after the run's start (by default at
    its end): vertex, subtask, attempt, operator, metric (scope.name), kind, value, count, sum,
    min, max, error, sampled_s. What a kind has not is None (a gauge's count, a counter's sum,
    ...); a counter's value is an int."""
    rows = _rows(con, LATEST, {"run": run_id, "t_s": seconds if math.isfinite(seconds) else 1e18})
    for row in rows:
        kind = row["kind"]
        if kind == "counter" and row["value"] is not None and float(row["value"]).is_integer():
            row["value"] = int(row["value"])
        row["error"] = row["error"] or None
    return rows


def user_metric_series(con: Any, run_id: str) -> list[dict[str, Any]]:
    """Per (vertex, operator, metric): its kind and, per subtask, the times and values of its
    samples (every attempt's, in time order)."""
    charts: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in _rows(con, SERIES, {"run": run_id}):
        chart = charts.setdefault((row["vertex_id"], row["operator"], row["metric"]), {
            "vertex": row["vertex"], "operator": row["operator"], "metric": row["metric"], "kind": row["kind"],
            "subtasks": {}})
        line = chart["subtasks"].setdefault(row["subtask"], {"t_s": [], "value": []})
        line["t_s"].append(row["t_s"])
        line["value"].append(row["value"])
    return list(charts.values())


def describe_values(row: dict[str, Any]) -> str:
    """A metric's values in a few words: ``12``, ``rate 2.5/s, count 30``, ``sum 55, count 10,
    min 1, max 10 (last 10)``, or the gauge's error."""
    if row["error"]:
        return f"no value: {row['error']}"
    if row["kind"] == "meter":
        return f"rate {_number(row['value'])}/s, count {row['count']}"
    if row["kind"] == "distribution":
        return (f"sum {_number(row['sum'])}, count {row['count']}, min {_number(row['min'])}, "
                f"max {_number(row['max'])} (last {_number(row['value'])})")
    return _number(row["value"])


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}" if isinstance(value, float) else str(value)

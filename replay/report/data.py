"""Everything a report shows about one run, read from the views (the same SQL as ``rill
metrics``): plain data, ready to be embedded in the page as JSON.

Times are seconds since the run's first event. ``second`` is the second a metrics sample
covers (the ``task_metrics`` view's column). Back-pressure levels are the run's measure's
(:mod:`replay.backpressure`): for sampling, a second shows the level of the vertex's latest
request ended by the second's end.
"""

from __future__ import annotations

import bisect
import json
from typing import Any

from replay.backpressure import judgement, request_levels
from replay.checkpoints import run_checkpoints
from replay.metrics import run_metrics, vertex_metrics
from replay.store import RunRecord
from replay.user_metrics import user_metric_series, user_metrics_at
from replay.views import event_tables


def _rows(con: Any, query: str, run_id: str) -> list[dict[str, Any]]:
    result = con.execute(query, {"run": run_id})
    columns = [d[0] for d in result.description]
    return [dict(zip(columns, row)) for row in result.fetchall()]


GRAPH_VERTICES = """
SELECT vertex_id, any_value(name) AS name, any_value(parallelism) AS parallelism,
       any_value(operators) AS operators, any_value(slot_sharing_group) AS slot_sharing_group, min(seq) AS seq
FROM rill.ev_job_vertex_defined WHERE run_id = $run GROUP BY vertex_id ORDER BY seq"""

GRAPH_EDGES = """
SELECT DISTINCT source_vertex_id AS source, target_vertex_id AS target, ship_strategy, distribution_pattern
FROM rill.ev_job_edge_defined WHERE run_id = $run ORDER BY source, target"""

#: per vertex and second: the worst subtask's busy and back-pressured time (as Flink's UI colours
#: a vertex) and its level
INSTANTS = """
SELECT vertex_id, second, back_pressured_ms, busy_ms, idle_ms, level, worst_subtask
FROM backpressure WHERE run_id = $run ORDER BY vertex_id, second"""

#: per vertex and second: the subtasks' busy/idle/back-pressured ms (their mean, weighted by the
#: time each sample measured), their records in and out
SERIES = """
SELECT vertex_id, second,
       sum(CASE WHEN isnan(busy_ms) THEN NULL ELSE busy_ms * interval_ms END)
           / nullif(sum(CASE WHEN isnan(busy_ms) THEN NULL ELSE interval_ms END), 0) AS busy_ms,
       sum(idle_ms * interval_ms) / nullif(sum(interval_ms), 0) AS idle_ms,
       sum(back_pressured_ms * interval_ms) / nullif(sum(interval_ms), 0) AS back_pressured_ms,
       sum(records_in) AS records_in, sum(records_out) AS records_out
FROM task_metrics WHERE run_id = $run GROUP BY vertex_id, second ORDER BY vertex_id, second"""

#: per vertex and second: the largest lag of its output watermark behind the largest event time
WATERMARK_LAG = """
SELECT vertex_id, CAST(floor(t_s) AS BIGINT) AS second, max(lag_event_time_ms) AS lag_ms
FROM watermarks WHERE run_id = $run AND direction = 'output' AND lag_event_time_ms IS NOT NULL
GROUP BY vertex_id, second ORDER BY vertex_id, second"""

TIMELINE = """
SELECT vertex_id, vertex_name, subtask, attempt, state, start_s, end_s, resource_id, failure
FROM task_timeline WHERE run_id = $run ORDER BY vertex_id, subtask, attempt, start_s"""

FAILURES = """
SELECT fault_index, fault_kind, fault, fault_s, detected_s, failed_s, vertex_name, subtask, attempt, cause,
       restart, restart_number, restarted_s, recovered_s
FROM failures WHERE run_id = $run ORDER BY coalesce(fault_s, failed_s)"""

HEARTBEAT_TIMEOUTS = """
SELECT (t.time - r.clock_start) / 1e9 AS t_s, t.owner, t.target, t.silent_ms
FROM rill.ev_heartbeat_timed_out t JOIN rill.runs r ON r.run_id = t.run_id WHERE t.run_id = $run ORDER BY t.seq"""

HEARTBEATS = """
SELECT sender, target, requests, requests_received, responses, max_gap_ms, avg_round_trip_ms, max_round_trip_ms,
       sender_timeouts, target_timeouts, unreachable, first_request_s, last_response_s
FROM heartbeats WHERE run_id = $run ORDER BY sender, target"""


def report_data(con: Any, run: RunRecord) -> dict[str, Any]:
    """The figures of ``run`` a report draws (the connection has the views created)."""
    run_id = run.run_id
    vertices = _rows(con, GRAPH_VERTICES, run_id)
    for vertex in vertices:
        vertex["operators"] = json.loads(vertex["operators"] or "[]")
        vertex.pop("seq")
    metrics = {row["vertex"]: row for row in vertex_metrics(con, run_id)}
    series: dict[str, dict[str, list]] = {v["vertex_id"]: {"second": [], "busy_ms": [], "idle_ms": [],
                                                             "back_pressured_ms": [], "records_in": [],
                                                             "records_out": []} for v in vertices}
    for row in _rows(con, SERIES, run_id):
        columns = series.setdefault(row["vertex_id"], {key: [] for key in row if key != "vertex_id"})
        for key, value in row.items():
            if key != "vertex_id":
                columns[key].append(value)
    lags: dict[str, dict[str, list]] = {v["vertex_id"]: {"second": [], "lag_ms": []} for v in vertices}
    for row in _rows(con, WATERMARK_LAG, run_id):
        lag = lags.setdefault(row["vertex_id"], {"second": [], "lag_ms": []})
        lag["second"].append(row["second"])
        lag["lag_ms"].append(row["lag_ms"])
    instants: dict[str, dict[int, dict[str, Any]]] = {}
    for row in _rows(con, INSTANTS, run_id):
        instants.setdefault(row.pop("vertex_id"), {})[row.pop("second")] = row
    judged = judgement(con, run_id)
    if judged.measured:
        requests = request_levels(con, judged, run_id)
        for vertex_id, seconds in instants.items():
            ended = requests.get(vertex_id, [])
            for second, row in seconds.items():
                latest = bisect.bisect_right(ended, second + 1, key=lambda request: request[0])
                row["level"] = ended[latest - 1][1] if latest else None
    timeouts = _rows(con, HEARTBEAT_TIMEOUTS, run_id) if "heartbeat_timed_out" in event_tables(con) else []
    return {
        "run": {"run_id": run_id, "job_name": run.job_name, "status": run.status, "clock": run.clock,
                "seed": run.seed, "duration_s": round(run.duration_s, 6), "events": run.events,
                "job_file": run.metadata.get("job_file"), "backend": run.metadata.get("backend", "local"),
                "back_pressure_measure": judged.measure},
        "config": run.config,
        "plugins": run.plugins,
        "summary": run_metrics(con, run_id),
        "vertices": [{**vertex, "metrics": metrics.get(vertex["name"], {})} for vertex in vertices],
        "edges": _rows(con, GRAPH_EDGES, run_id),
        "instants": instants,
        "series": series,
        "watermark_lag": lags,
        "timeline": _rows(con, TIMELINE, run_id),
        "failures": _rows(con, FAILURES, run_id),
        "heartbeat_timeouts": timeouts,
        "heartbeats": _rows(con, HEARTBEATS, run_id),
        "checkpoints": run_checkpoints(con, run_id, run.clock_end),
        "user_metrics": user_metrics_at(con, run_id),
        "user_metric_series": user_metric_series(con, run_id),
    }

"""Per-vertex figures of a recorded run, from the views (``rill metrics``, reports); the
back-pressure level by the run's measure (:mod:`replay.backpressure`)."""

from __future__ import annotations

from typing import Any

from kernel.runtime.backpressure import back_pressure_level, back_pressure_level_sql
from replay.backpressure import judgement, worst_ratios
from replay.views import WATERMARK_LAGS

VERTEX_QUERY = f"""
WITH v AS (
    SELECT vertex_id, name, parallelism, min(seq) AS seq
    FROM rill.ev_job_vertex_defined WHERE run_id = $run GROUP BY ALL),
lags AS ({WATERMARK_LAGS}),
per_subtask AS (
    SELECT vertex_id, subtask,
           sum(CASE WHEN isnan(busy_ms) THEN NULL ELSE busy_ms * interval_ms END) / nullif(sum(interval_ms), 0) AS busy,
           sum(idle_ms * interval_ms) / nullif(sum(interval_ms), 0) AS idle,
           sum(back_pressured_ms * interval_ms) / nullif(sum(interval_ms), 0) AS back_pressured,
           sum(records_in) AS records_in, sum(records_out) AS records_out, sum(interval_ms) / 1000 AS seconds,
           sum(late_records_dropped) AS late, sum(windows_fired) AS windows
    FROM task_metrics WHERE run_id = $run GROUP BY ALL),
per_vertex AS (
    SELECT vertex_id, avg(busy) AS busy_ms, avg(idle) AS idle_ms, avg(back_pressured) AS back_pressured_ms,
           max(back_pressured) AS worst_back_pressured_ms, sum(records_in) AS records_in,
           sum(records_out) AS records_out, max(seconds) AS seconds, sum(late) AS late_records_dropped,
           sum(windows) AS windows_fired
    FROM per_subtask GROUP BY ALL),
lag AS (
    SELECT vertex_id, max(lag_event_time_ms) AS max_watermark_lag_ms,
           arg_max(lag_event_time_ms, t_s) FILTER (WHERE lag_event_time_ms IS NOT NULL) AS last_watermark_lag_ms
    FROM lags WHERE run_id = $run GROUP BY ALL),
fails AS (
    SELECT vertex_name, count(*) AS failures, count(*) FILTER (WHERE restart) AS restarts
    FROM failures WHERE run_id = $run AND failed_s IS NOT NULL GROUP BY ALL)
SELECT v.vertex_id, v.name AS vertex, v.parallelism, round(p.busy_ms / 10, 1) AS busy_pct, round(p.idle_ms / 10, 1) AS idle_pct,
       round(p.back_pressured_ms / 10, 1) AS back_pressured_pct,
       {back_pressure_level_sql("p.worst_back_pressured_ms")} AS level,
       coalesce(p.records_in, 0) AS records_in, coalesce(p.records_out, 0) AS records_out,
       round(coalesce(p.records_in, 0) / nullif(p.seconds, 0), 1) AS records_in_per_s,
       round(coalesce(p.records_out, 0) / nullif(p.seconds, 0), 1) AS records_out_per_s,
       l.last_watermark_lag_ms AS watermark_lag_ms, l.max_watermark_lag_ms,
       coalesce(p.late_records_dropped, 0) AS late_records_dropped,
       coalesce(f.failures, 0) AS failures, coalesce(f.restarts, 0) AS restarts
FROM v LEFT JOIN per_vertex p USING (vertex_id) LEFT JOIN lag l USING (vertex_id)
LEFT JOIN fails f ON f.vertex_name = v.name
ORDER BY v.seq
"""

RUN_QUERY = """
SELECT (SELECT count(*) FROM failures WHERE run_id = $run AND failed_s IS NOT NULL) AS failures,
       (SELECT count(*) FROM failures WHERE run_id = $run AND restart) AS restarts,
       (SELECT coalesce(sum(late_records_dropped), 0) FROM task_metrics WHERE run_id = $run) AS late_records_dropped
"""


def vertex_metrics(con: Any, run_id: str) -> list[dict[str, Any]]:
    """Per job vertex, in order. For a run judged by another measure than mailbox timing, the
    level is that measure's and ``sampled_pct`` its worst subtask's share of samples (None,
    and no level, for a vertex it never measured)."""
    result = con.execute(VERTEX_QUERY, {"run": run_id})
    columns = [d[0] for d in result.description]
    rows = [dict(zip(columns, row)) for row in result.fetchall()]
    judged = judgement(con, run_id)
    worst = worst_ratios(con, judged, run_id) if judged.measured else None
    for row in rows:
        vertex_id = row.pop("vertex_id")
        if worst is not None:
            ratio = worst.get(vertex_id)
            row["sampled_pct"] = None if ratio is None else round(ratio * 100, 1)
            row["level"] = None if ratio is None else back_pressure_level(ratio)
    return rows


def run_metrics(con: Any, run_id: str) -> dict[str, Any]:
    result = con.execute(RUN_QUERY, {"run": run_id})
    columns = [d[0] for d in result.description]
    return dict(zip(columns, result.fetchone()))

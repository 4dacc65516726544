"""SQL views over the event log, created on every read connection (``rill sql``, ``rill
metrics``, ``rill replay``, reports). Times are seconds since the run's first event
(``t_s``, ``second``, ``*_s``); one source of truth for every command that shows metrics.
"""

from __future__ import annotations

import re
from typing import Any

MAX_LONG = (1 << 63) - 1

#: every watermark with the largest event time any source had seen by then, and the lags behind
#: it and behind the clock (also used on its own by ``rill metrics``)
WATERMARK_LAGS = f"""
    WITH seen AS (
        SELECT run_id, seq, max(event_time) OVER (PARTITION BY run_id ORDER BY seq) AS max_event_time
        FROM rill.ev_watermark_advanced WHERE event_time IS NOT NULL)
    SELECT a.run_id, a.seq, a.job_id, a.vertex_id, a.vertex_name, a.subtask, a.attempt,
           (a.time - r.clock_start) / 1e9 AS t_s, a.direction, a.input, a.watermark, seen.max_event_time,
           CASE WHEN a.watermark = {MAX_LONG} THEN NULL ELSE seen.max_event_time - a.watermark END AS lag_event_time_ms,
           CASE WHEN a.watermark = {MAX_LONG} THEN NULL ELSE a.time / 1e6 - a.watermark END AS lag_clock_ms
    FROM rill.ev_watermark_advanced a JOIN rill.runs r ON r.run_id = a.run_id
    ASOF LEFT JOIN seen ON seen.run_id = a.run_id AND a.seq >= seen.seq"""

#: view name -> (event tables it reads, SELECT); created in this order
VIEWS: dict[str, tuple[tuple[str, ...], str]] = {
    "task_metrics": (("task_metrics_sampled",), """
        SELECT m.run_id, m.job_id, m.vertex_id, m.vertex_name, m.subtask, m.attempt,
               (m.time - r.clock_start) / 1e9 AS t_s,
               greatest(floor((m.time - m.interval_ms * 1e6 - r.clock_start) / 1e9), 0)::BIGINT AS second,
               m.interval_ms, m.idle_ms, m.busy_ms, m.back_pressured_ms, m.soft_back_pressured_ms,
               m.hard_back_pressured_ms, m.records_in, m.records_out, m.records_in_per_second,
               m.records_out_per_second, m.latency_ms, m.late_records_dropped, m.timers_fired, m.windows_fired,
               m.final
        FROM rill.ev_task_metrics_sampled m JOIN rill.runs r USING (run_id)"""),
    "backpressure": (("task_metrics_sampled",), """
        SELECT run_id, vertex_id, any_value(vertex_name) AS vertex_name, second,
               max(back_pressured_ms) AS back_pressured_ms,
               max(CASE WHEN isnan(busy_ms) THEN NULL ELSE busy_ms END) AS busy_ms,
               max(idle_ms) AS idle_ms,
               CASE WHEN max(back_pressured_ms) > 500 THEN 'HIGH' WHEN max(back_pressured_ms) > 100 THEN 'LOW'
                    ELSE 'OK' END AS level,
               arg_max(subtask, back_pressured_ms) AS worst_subtask,
               count(DISTINCT subtask) AS subtasks
        FROM task_metrics GROUP BY run_id, vertex_id, second"""),
    "watermarks": (("watermark_advanced", "watermark_status_changed"), f"""
        WITH lags AS ({WATERMARK_LAGS}),
        statuses AS (
            SELECT run_id, vertex_id, subtask, attempt, direction, input, status, seq AS from_seq,
                   coalesce(lead(seq) OVER (PARTITION BY run_id, vertex_id, subtask, attempt, direction, input
                                            ORDER BY seq), {MAX_LONG}) AS to_seq
            FROM rill.ev_watermark_status_changed)
        SELECT w.run_id, w.job_id, w.vertex_id, w.vertex_name, w.subtask, w.attempt, w.t_s, w.direction, w.input,
               w.watermark, coalesce(s.status, 'ACTIVE') AS status, w.max_event_time, w.lag_event_time_ms,
               w.lag_clock_ms
        FROM lags w LEFT JOIN statuses s
            ON s.run_id = w.run_id AND s.vertex_id = w.vertex_id AND s.subtask = w.subtask AND s.attempt = w.attempt
               AND s.direction = w.direction AND s.input = w.input AND w.seq >= s.from_seq AND w.seq < s.to_seq"""),
    "heartbeats": (("heartbeat_requested", "heartbeat_received", "heartbeat_timed_out",
                    "heartbeat_target_marked_unreachable"), """
        WITH requests AS (
            SELECT run_id, sender, target, count(*) AS requests, min(time) AS first_time
            FROM rill.ev_heartbeat_requested GROUP BY ALL),
        responses AS (
            SELECT run_id, owner AS sender, target, count(*) AS responses, max(gap_ms) AS max_gap_ms,
                   avg(round_trip_ms) AS avg_round_trip_ms, max(round_trip_ms) AS max_round_trip_ms,
                   max(time) AS last_time
            FROM (SELECT *, (time - lag(time) OVER (PARTITION BY run_id, owner, target ORDER BY seq)) / 1e6 AS gap_ms
                  FROM rill.ev_heartbeat_received WHERE message = 'response')
            GROUP BY ALL),
        received AS (
            SELECT run_id, target AS sender, owner AS target, count(*) AS requests_received
            FROM rill.ev_heartbeat_received WHERE message = 'request' GROUP BY ALL),
        verdicts AS (
            SELECT run_id, owner, target, count(*) AS timeouts, 0 AS unreachable FROM rill.ev_heartbeat_timed_out
            GROUP BY ALL
            UNION ALL
            SELECT run_id, owner, target, 0, count(*) FROM rill.ev_heartbeat_target_marked_unreachable GROUP BY ALL)
        SELECT q.run_id, q.sender, q.target, q.requests, coalesce(g.requests_received, 0) AS requests_received,
               coalesce(p.responses, 0) AS responses, p.max_gap_ms, p.avg_round_trip_ms, p.max_round_trip_ms,
               (SELECT coalesce(sum(v.timeouts), 0) FROM verdicts v
                 WHERE v.run_id = q.run_id AND v.owner = q.sender AND v.target = q.target) AS sender_timeouts,
               (SELECT coalesce(sum(v.timeouts), 0) FROM verdicts v
                 WHERE v.run_id = q.run_id AND v.owner = q.target AND v.target = q.sender) AS target_timeouts,
               (SELECT coalesce(sum(v.unreachable), 0) FROM verdicts v
                 WHERE v.run_id = q.run_id AND v.owner = q.sender AND v.target = q.target) AS unreachable,
               (q.first_time - r.clock_start) / 1e9 AS first_request_s, (p.last_time - r.clock_start) / 1e9 AS last_response_s
        FROM requests q JOIN rill.runs r USING (run_id)
        LEFT JOIN responses p ON p.run_id = q.run_id AND p.sender = q.sender AND p.target = q.target
        LEFT JOIN received g ON g.run_id = q.run_id AND g.sender = q.sender AND g.target = q.target"""),
    "task_timeline": (("execution_state_changed",), """
        SELECT e.run_id, e.job_id, e.vertex_id, e.vertex_name, e.subtask, e.attempt, e.new_state AS state,
               (e.time - r.clock_start) / 1e9 AS start_s,
               (coalesce(lead(e.time) OVER (PARTITION BY e.run_id, e.vertex_id, e.subtask, e.attempt ORDER BY e.seq),
                         r.clock_end) - r.clock_start) / 1e9 AS end_s,
               e.resource_id, e.failure
        FROM rill.ev_execution_state_changed e JOIN rill.runs r USING (run_id)"""),
    "slots": (("slot_allocated", "slot_released"), """
        SELECT a.run_id, a.job_id, a.allocation_id, a.resource_id, a.slot_index,
               (a.time - r.clock_start) / 1e9 AS allocated_s, (x.time - r.clock_start) / 1e9 AS released_s,
               x.reason AS release_reason
        FROM rill.ev_slot_allocated a JOIN rill.runs r USING (run_id)
        LEFT JOIN rill.ev_slot_released x ON x.run_id = a.run_id AND x.allocation_id = a.allocation_id"""),
    "failures": (("task_failure_handled", "fault_injected", "tasks_restarted", "heartbeat_timed_out",
                  "heartbeat_target_marked_unreachable", "execution_state_changed", "execution_graph_compiled"), """
        WITH faults AS (
            SELECT run_id, seq, time, "index" AS fault_index, fault_kind, description
            FROM rill.ev_fault_injected WHERE phase = 'start'),
        handled AS (
            SELECT f.*, q.fault_index, q.fault_kind, q.description AS fault, q.time AS fault_time
            FROM rill.ev_task_failure_handled f ASOF LEFT JOIN faults q ON q.run_id = f.run_id AND f.seq >= q.seq),
        verdicts AS (
            SELECT run_id, time FROM rill.ev_heartbeat_timed_out
            UNION ALL SELECT run_id, time FROM rill.ev_heartbeat_target_marked_unreachable),
        changes AS (
            SELECT run_id, time, sum(CASE
                       WHEN new_state = 'RUNNING' THEN 1
                       WHEN new_state = 'FINISHED' AND old_state <> 'RUNNING' THEN 1
                       WHEN old_state = 'RUNNING' AND new_state <> 'FINISHED' THEN -1
                       ELSE 0 END) OVER (PARTITION BY run_id ORDER BY seq) AS up
            FROM rill.ev_execution_state_changed),
        total AS (SELECT run_id, max(execution_vertices) AS vertices FROM rill.ev_execution_graph_compiled GROUP BY ALL),
        rows AS (
            SELECT h.run_id, h.fault_index, h.fault_kind, h.fault, h.fault_time, h.time AS failed_time,
                   coalesce((SELECT min(v.time) FROM verdicts v WHERE v.run_id = h.run_id AND v.time >= h.fault_time
                             AND v.time <= h.time), h.time) AS detected_time,
                   h.vertex_name, h.subtask, h.attempt, h.cause, h.restart, h.delay_ms, h.restart_number, h.reason,
                   (SELECT min(t.time) FROM rill.ev_tasks_restarted t WHERE t.run_id = h.run_id
                     AND t.restart_number = h.restart_number AND h.restart) AS restarted_time
            FROM handled h
            UNION ALL
            SELECT q.run_id, q.fault_index, q.fault_kind, q.description, q.time, NULL, NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL, NULL, NULL, NULL
            FROM faults q WHERE NOT EXISTS (
                SELECT 1 FROM handled h WHERE h.run_id = q.run_id AND h.fault_index = q.fault_index))
        SELECT x.run_id, x.fault_index, x.fault_kind, x.fault,
               (x.fault_time - r.clock_start) / 1e9 AS fault_s, (x.detected_time - r.clock_start) / 1e9 AS detected_s,
               (x.failed_time - r.clock_start) / 1e9 AS failed_s, x.vertex_name, x.subtask, x.attempt, x.cause,
               x.restart, x.delay_ms, x.restart_number, x.reason, (x.restarted_time - r.clock_start) / 1e9 AS restarted_s,
               ((SELECT min(c.time) FROM changes c JOIN total t USING (run_id)
                 WHERE c.run_id = x.run_id AND c.time >= x.restarted_time AND c.up >= t.vertices) - r.clock_start) / 1e9
                   AS recovered_s
        FROM rows x JOIN rill.runs r USING (run_id)"""),
}


def _empty(tag: str, types: dict[str, type]) -> str:
    """An empty relation with the columns of event ``tag`` (for logs without that table)."""
    from plugins.eventlog.schema import table_for

    table = table_for(types[tag])
    columns = ", ".join(f'NULL::{c.sql_type} AS "{c.name}"' for c in table.columns)
    return f"(SELECT NULL::VARCHAR AS run_id, {columns} WHERE false)"


def event_tables(con: Any) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'rill' AND starts_with(table_name, 'ev_')"
    ).fetchall()
    return {name[3:] for (name,) in rows}


def create_views(con: Any) -> list[str]:
    """Create the views as temporary views of the connection; returns the event kinds the
    log has no table for (written by an older rill): the views read them as empty."""
    from kernel.cluster_events import CLUSTER_EVENT_TYPES
    from kernel.events import KERNEL_EVENT_TYPES, tag_of

    present = event_tables(con)
    types = {tag_of(t): t for t in KERNEL_EVENT_TYPES + CLUSTER_EVENT_TYPES}
    absent = sorted({tag for tables, _ in VIEWS.values() for tag in tables} - present)
    for name, (tables, select) in VIEWS.items():
        for tag in tables:
            source = f"rill.ev_{tag}" if tag in present else _empty(tag, types)
            select = re.sub(rf"rill\.ev_{tag}\b", source, select)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {select}")
    return absent

"""The views replay's commands are built on (``rill metrics``, ``rill report``, ``rill replay``,
``rill export``), registered through ``register_views`` like any plugin's views, and creating
the registered views on a DuckDB connection (``rill sql`` and every reader of the log).

Times are seconds since the run's first event (``t_s``, ``second``, ``*_s``); one source of
truth for every command that shows metrics. The views read only the kernel's events
(:mod:`kernel.events`, :mod:`kernel.runtime.cluster_events`), so they exist whichever plugins run.
Their SQL keeps to what DuckDB and Spark SQL both run (:mod:`kernel.views`).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from kernel.runtime.backpressure import back_pressure_level_sql
from kernel.clock import MAX_LONG
from kernel.eventtables import EventTable
from kernel.views import ViewRegistry

#: every watermark with the largest event time any source had seen by then, and the lags behind
#: it and behind the clock (also used on its own by ``rill metrics``)
WATERMARK_LAGS = f"""
    SELECT a.run_id, a.seq, a.job_id, a.vertex_id, a.vertex_name, a.subtask, a.attempt,
           (a.time - r.clock_start) / 1e9 AS t_s, a.direction, a.input, a.watermark,
           max(a.event_time) OVER (PARTITION BY a.run_id ORDER BY a.seq) AS max_event_time,
           CASE WHEN a.watermark = {MAX_LONG} THEN NULL
                ELSE max(a.event_time) OVER (PARTITION BY a.run_id ORDER BY a.seq) - a.watermark END AS lag_event_time_ms,
           CASE WHEN a.watermark = {MAX_LONG} THEN NULL ELSE a.time / 1e6 - a.watermark END AS lag_clock_ms
    FROM rill.ev_watermark_advanced a JOIN rill.runs r ON r.run_id = a.run_id"""

#: view name -> SELECT, registered in this order
VIEWS: dict[str, str] = {
    "task_metrics": """
        SELECT m.run_id, m.job_id, m.vertex_id, m.vertex_name, m.subtask, m.attempt,
               (m.time - r.clock_start) / 1e9 AS t_s,
               CAST(greatest(floor((m.time - m.interval_ms * 1e6 - r.clock_start) / 1e9), 0) AS BIGINT) AS second,
               m.interval_ms, m.idle_ms, m.busy_ms, m.back_pressured_ms, m.soft_back_pressured_ms,
               m.records_in, m.records_out, m.records_in_per_second,
               m.records_out_per_second, m.latency_ms, m.late_records_dropped, m.timers_fired, m.windows_fired,
               m.final
        FROM rill.ev_task_metrics_sampled m JOIN rill.runs r ON r.run_id = m.run_id""",
    "user_metrics": """
        SELECT u.run_id, u.seq, u.job_id, u.vertex_id, u.vertex_name, u.subtask, u.attempt, u.operator, u.operator_id,
               u.scope, u.name, CASE WHEN u.scope = '' THEN u.name ELSE u.scope || '.' || u.name END AS metric,
               u.metric_type AS kind, (u.time - r.clock_start) / 1e9 AS t_s,
               CAST(greatest(floor((u.time - u.interval_ms * 1e6 - r.clock_start) / 1e9), 0) AS BIGINT) AS second,
               u.interval_ms, u.value, u.count, u.sum, u.min, u.max, u.final, u.error
        FROM rill.ev_user_metric_sampled u JOIN rill.runs r ON r.run_id = u.run_id""",
    "backpressure": f"""
        SELECT run_id, vertex_id, any_value(vertex_name) AS vertex_name, second,
               max(back_pressured_ms) AS back_pressured_ms,
               max(CASE WHEN isnan(busy_ms) THEN NULL ELSE busy_ms END) AS busy_ms,
               max(idle_ms) AS idle_ms,
               {back_pressure_level_sql("max(back_pressured_ms)")} AS level,
               min(CASE WHEN bp_rank = 1 THEN subtask END) AS worst_subtask,
               count(DISTINCT subtask) AS subtasks
        FROM (SELECT *, rank() OVER (PARTITION BY run_id, vertex_id, second
                                     ORDER BY back_pressured_ms DESC NULLS LAST) AS bp_rank
              FROM task_metrics WHERE interval_ms > 0) m
        GROUP BY run_id, vertex_id, second""",
    "watermarks": f"""
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
               AND s.direction = w.direction AND s.input = w.input AND w.seq >= s.from_seq AND w.seq < s.to_seq""",
    "heartbeats": """
        WITH requests AS (
            SELECT run_id, sender, target, count(*) AS requests, min(time) AS first_time
            FROM rill.ev_heartbeat_requested GROUP BY run_id, sender, target),
        responses AS (
            SELECT run_id, owner AS sender, target, count(*) AS responses, max(gap_ms) AS max_gap_ms,
                   avg(round_trip_ms) AS avg_round_trip_ms, max(round_trip_ms) AS max_round_trip_ms,
                   max(time) AS last_time
            FROM (SELECT run_id, owner, target, time, round_trip_ms,
                         (time - lag(time) OVER (PARTITION BY run_id, owner, target ORDER BY seq)) / 1e6 AS gap_ms
                  FROM rill.ev_heartbeat_received WHERE message = 'response') x
            GROUP BY run_id, owner, target),
        received AS (
            SELECT run_id, target AS sender, owner AS target, count(*) AS requests_received
            FROM rill.ev_heartbeat_received WHERE message = 'request' GROUP BY run_id, target, owner),
        timeouts AS (
            SELECT run_id, owner, target, count(*) AS n FROM rill.ev_heartbeat_timed_out GROUP BY run_id, owner, target),
        unreachable AS (
            SELECT run_id, owner, target, count(*) AS n FROM rill.ev_heartbeat_target_marked_unreachable
            GROUP BY run_id, owner, target)
        SELECT q.run_id, q.sender, q.target, q.requests, coalesce(g.requests_received, 0) AS requests_received,
               coalesce(p.responses, 0) AS responses, p.max_gap_ms, p.avg_round_trip_ms, p.max_round_trip_ms,
               coalesce(ts.n, 0) AS sender_timeouts, coalesce(tt.n, 0) AS target_timeouts,
               coalesce(u.n, 0) AS unreachable,
               (q.first_time - r.clock_start) / 1e9 AS first_request_s, (p.last_time - r.clock_start) / 1e9 AS last_response_s
        FROM requests q JOIN rill.runs r ON r.run_id = q.run_id
        LEFT JOIN responses p ON p.run_id = q.run_id AND p.sender = q.sender AND p.target = q.target
        LEFT JOIN received g ON g.run_id = q.run_id AND g.sender = q.sender AND g.target = q.target
        LEFT JOIN timeouts ts ON ts.run_id = q.run_id AND ts.owner = q.sender AND ts.target = q.target
        LEFT JOIN timeouts tt ON tt.run_id = q.run_id AND tt.owner = q.target AND tt.target = q.sender
        LEFT JOIN unreachable u ON u.run_id = q.run_id AND u.owner = q.sender AND u.target = q.target""",
    "task_timeline": """
        SELECT e.run_id, e.job_id, e.vertex_id, e.vertex_name, e.subtask, e.attempt, e.new_state AS state,
               (e.time - r.clock_start) / 1e9 AS start_s,
               (coalesce(lead(e.time) OVER (PARTITION BY e.run_id, e.vertex_id, e.subtask, e.attempt ORDER BY e.seq),
                         r.clock_end) - r.clock_start) / 1e9 AS end_s,
               e.resource_id, e.failure
        FROM rill.ev_execution_state_changed e JOIN rill.runs r ON r.run_id = e.run_id""",
    "slots": """
        SELECT a.run_id, a.job_id, a.allocation_id, a.resource_id, a.slot_index,
               (a.time - r.clock_start) / 1e9 AS allocated_s, (x.time - r.clock_start) / 1e9 AS released_s,
               x.reason AS release_reason
        FROM rill.ev_slot_allocated a JOIN rill.runs r ON r.run_id = a.run_id
        LEFT JOIN rill.ev_slot_released x ON x.run_id = a.run_id AND x.allocation_id = a.allocation_id""",
    "failures": """
        WITH faults AS (
            SELECT run_id, seq, time, index AS fault_index, fault_kind, description
            FROM rill.ev_fault_injected WHERE phase = 'start'),
        marked AS (
            SELECT run_id, seq, time, NULL AS fault_seq FROM rill.ev_task_failure_handled
            UNION ALL SELECT run_id, seq, time, seq AS fault_seq FROM faults),
        latest AS (
            SELECT run_id, seq, max(fault_seq) OVER (PARTITION BY run_id ORDER BY seq) AS fault_seq FROM marked),
        handled AS (
            SELECT f.run_id, f.seq, f.time, f.vertex_name, f.subtask, f.attempt, f.cause, f.restart, f.delay_ms,
                   f.restart_number, f.reason, q.fault_index, q.fault_kind, q.description AS fault, q.time AS fault_time
            FROM rill.ev_task_failure_handled f
            JOIN latest l ON l.run_id = f.run_id AND l.seq = f.seq
            LEFT JOIN faults q ON q.run_id = f.run_id AND q.seq = l.fault_seq),
        verdicts AS (
            SELECT run_id, time FROM rill.ev_heartbeat_timed_out
            UNION ALL SELECT run_id, time FROM rill.ev_heartbeat_target_marked_unreachable),
        detected AS (
            SELECT h.run_id, h.seq, min(v.time) AS time FROM handled h JOIN verdicts v
                ON v.run_id = h.run_id AND v.time >= h.fault_time AND v.time <= h.time
            GROUP BY h.run_id, h.seq),
        restarted AS (
            SELECT run_id, restart_number, min(time) AS time FROM rill.ev_tasks_restarted GROUP BY run_id, restart_number),
        changes AS (
            SELECT run_id, time, sum(CASE
                       WHEN new_state = 'RUNNING' THEN 1
                       WHEN new_state = 'FINISHED' AND old_state <> 'RUNNING' THEN 1
                       WHEN old_state = 'RUNNING' AND new_state <> 'FINISHED' THEN -1
                       ELSE 0 END) OVER (PARTITION BY run_id ORDER BY seq) AS up
            FROM rill.ev_execution_state_changed),
        total AS (SELECT run_id, max(execution_vertices) AS vertices FROM rill.ev_execution_graph_compiled GROUP BY run_id),
        recovered AS (
            SELECT h.run_id, h.seq, min(c.time) AS time
            FROM handled h JOIN restarted s ON s.run_id = h.run_id AND s.restart_number = h.restart_number AND h.restart
            JOIN total t ON t.run_id = h.run_id
            JOIN changes c ON c.run_id = h.run_id AND c.time >= s.time AND c.up >= t.vertices
            GROUP BY h.run_id, h.seq),
        rows AS (
            SELECT h.run_id, h.fault_index, h.fault_kind, h.fault, h.fault_time, h.time AS failed_time,
                   coalesce(d.time, h.time) AS detected_time, h.vertex_name, h.subtask, h.attempt, h.cause,
                   h.restart, h.delay_ms, h.restart_number, h.reason,
                   CASE WHEN h.restart THEN s.time END AS restarted_time, rc.time AS recovered_time
            FROM handled h
            LEFT JOIN detected d ON d.run_id = h.run_id AND d.seq = h.seq
            LEFT JOIN restarted s ON s.run_id = h.run_id AND s.restart_number = h.restart_number
            LEFT JOIN recovered rc ON rc.run_id = h.run_id AND rc.seq = h.seq
            UNION ALL
            SELECT q.run_id, q.fault_index, q.fault_kind, q.description, q.time, NULL, NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL, NULL, NULL, NULL, NULL
            FROM faults q LEFT JOIN (SELECT DISTINCT run_id, fault_index FROM handled WHERE fault_index IS NOT NULL) u
                ON u.run_id = q.run_id AND u.fault_index = q.fault_index
            WHERE u.run_id IS NULL)
        SELECT x.run_id, x.fault_index, x.fault_kind, x.fault,
               (x.fault_time - r.clock_start) / 1e9 AS fault_s, (x.detected_time - r.clock_start) / 1e9 AS detected_s,
               (x.failed_time - r.clock_start) / 1e9 AS failed_s, x.vertex_name, x.subtask, x.attempt, x.cause,
               x.restart, x.delay_ms, x.restart_number, x.reason,
               (x.restarted_time - r.clock_start) / 1e9 AS restarted_s,
               (x.recovered_time - r.clock_start) / 1e9 AS recovered_s
        FROM rows x JOIN rill.runs r ON r.run_id = x.run_id""",
}


def empty_relation(table: EventTable) -> str:
    """An empty relation with the columns of an event table (for logs without that table)."""
    columns = ", ".join(f"CAST(NULL AS {c.sql_type}) AS {c.name}" for c in table.columns)
    return f"(SELECT CAST(NULL AS VARCHAR) AS run_id, {columns} WHERE false)"


def event_tables(con: Any) -> set[str]:
    """The event kinds the connection has a table ``rill.ev_<kind>`` for."""
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'rill' AND starts_with(table_name, 'ev_')"
    ).fetchall()
    return {name[3:] for (name,) in rows}


def create_views(con: Any, views: ViewRegistry, tables: Mapping[str, EventTable]) -> list[str]:
    """Create the registered views as temporary views of the connection; returns their names.

    An event kind the connection has no table for (a log written before its event type
    existed, or by runs that never loaded its plugin) reads as an empty relation with the
    columns of its registered event type (``tables``, by kind); a view reading a kind neither
    present nor registered is not created (:meth:`ViewRegistry.readable`)."""
    present = event_tables(con)
    created = []
    for view in views.readable(present | set(tables)):
        select = view.select
        for kind in sorted(view.kinds - present):
            empty = empty_relation(tables[kind])
            select = re.sub(rf"\brill\.ev_{kind}\b", lambda _: empty, select, flags=re.IGNORECASE)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view.name} AS {select}")
        created.append(view.name)
    return created


def temporary_views(con: Any) -> list[str]:
    """The views :func:`create_views` created on the connection."""
    return [name for (name,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal ORDER BY view_name").fetchall()]

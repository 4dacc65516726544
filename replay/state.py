"""The state of a recorded run at one instant, rebuilt from the event log alone.

What ``rill replay RUN --at T`` shows: TaskExecutors (started, registered, stopped) with the
slots the JobMaster holds on them, each subtask's execution state and attempt, the
watermarks and watermark status of each subtask's current attempt, the back-pressure level
of each job vertex (from its subtasks' latest metric samples; for a run judged by sampling, its
latest request's by then), and the health of every
heartbeat pair of live components (when each side last heard from the other, and whether it
gave up on it), the checkpoints by then (how many were triggered, completed, failed or in
progress; the last completed checkpoint and savepoint, the last failure and restore), and the
user metrics' values (each subtask's latest sample by then).
Every part is the latest event of its kind at or before the instant, so it works for runs
that crashed or are still running (partial logs).
"""

from __future__ import annotations

from typing import Any

from kernel.runtime.backpressure import MAILBOX_TIMING, back_pressure_level
from kernel.clock import MAX_LONG
from replay.backpressure import judgement, request_levels
from replay.checkpoints import checkpoints_at, describe_completed
from replay.user_metrics import describe_values, user_metrics_at


def _rows(con: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    result = con.execute(query, params)
    columns = [d[0] for d in result.description]
    return [dict(zip(columns, row)) for row in result.fetchall()]


WORKERS = """
SELECT s.resource_id,
       (SELECT max(registration) FROM rill.ev_worker_registered g
         WHERE g.run_id = $run AND g.resource_id = s.resource_id AND g.time <= $t) AS registrations,
       (SELECT arg_max(reason, seq) FROM rill.ev_worker_stopped x
         WHERE x.run_id = $run AND x.resource_id = s.resource_id AND x.time <= $t) AS stopped
FROM rill.ev_worker_started s WHERE s.run_id = $run AND s.time <= $t ORDER BY s.seq
"""

SLOTS = """
SELECT a.resource_id, a.slot_index, a.allocation_id FROM rill.ev_slot_allocated a
WHERE a.run_id = $run AND a.time <= $t AND NOT EXISTS (
    SELECT 1 FROM rill.ev_slot_released x WHERE x.run_id = $run AND x.allocation_id = a.allocation_id AND x.time <= $t)
ORDER BY a.resource_id, a.slot_index
"""

SUBTASKS = """
SELECT vertex_name, subtask, arg_max(new_state, seq) AS state, arg_max(attempt, seq) AS attempt,
       arg_max(resource_id, seq) AS resource_id, arg_max(vertex_id, seq) AS vertex_id
FROM rill.ev_execution_state_changed WHERE run_id = $run AND time <= $t
GROUP BY vertex_name, subtask ORDER BY min(seq), subtask
"""

WATERMARKS = """
SELECT vertex_id, subtask, attempt, direction, input, arg_max(watermark, seq) AS watermark
FROM rill.ev_watermark_advanced WHERE run_id = $run AND time <= $t GROUP BY ALL
"""

STATUSES = """
SELECT vertex_id, subtask, attempt, direction, input, arg_max(status, seq) AS status
FROM rill.ev_watermark_status_changed WHERE run_id = $run AND time <= $t GROUP BY ALL
"""

SAMPLES = """
SELECT vertex_id, subtask, attempt, arg_max(back_pressured_ms, seq) AS back_pressured_ms
FROM rill.ev_task_metrics_sampled WHERE run_id = $run AND time <= $t GROUP BY ALL ORDER BY vertex_id, subtask
"""

HEARTBEATS = """
WITH heard AS (
    SELECT owner, target, max(time) AS last FROM rill.ev_heartbeat_received
    WHERE run_id = $run AND time <= $t GROUP BY ALL),
verdicts AS (
    SELECT owner, target, max(time) AS at FROM (
        SELECT owner, target, time FROM rill.ev_heartbeat_timed_out WHERE run_id = $run AND time <= $t
        UNION ALL SELECT owner, target, time FROM rill.ev_heartbeat_target_marked_unreachable
        WHERE run_id = $run AND time <= $t) GROUP BY ALL)
SELECT h.owner, h.target, h.last, v.at AS lost_at FROM heard h
LEFT JOIN verdicts v ON v.owner = h.owner AND v.target = h.target AND v.at >= h.last
ORDER BY h.owner, h.target
"""


def state_at(con: Any, run: Any, seconds: float) -> dict[str, Any]:
    """The run's state ``seconds`` after its start (JSON-ready)."""
    t = run.at(seconds)
    params = {"run": run.run_id, "t": t}
    seconds_of = lambda ns: round((ns - run.clock_start) / 1e9, 6)  # noqa: E731
    slots: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(con, SLOTS, params):
        slots.setdefault(row["resource_id"], []).append({"slot_index": row["slot_index"],
                                                         "allocation_id": row["allocation_id"]})
    workers = {}
    for row in _rows(con, WORKERS, params):
        status = "stopped" if row["stopped"] else "registered" if row["registrations"] else "started"
        workers[row["resource_id"]] = {"status": status, "registrations": row["registrations"] or 0,
                                       "slots": slots.get(row["resource_id"], [])}
        if row["stopped"]:
            workers[row["resource_id"]]["reason"] = row["stopped"]
    subtasks, current = {}, {}
    for row in _rows(con, SUBTASKS, params):
        name = f"{row['vertex_name']}/{row['subtask']}"
        subtasks[name] = {"state": row["state"], "attempt": row["attempt"], "resource_id": row["resource_id"]}
        current[(row["vertex_id"], row["subtask"])] = (name, row["attempt"])
    watermarks: dict[str, dict[str, Any]] = {}
    for kind, query in (("watermark", WATERMARKS), ("status", STATUSES)):
        for row in _rows(con, query, params):
            name, attempt = current.get((row["vertex_id"], row["subtask"]), (None, None))
            if name is None or row["attempt"] != attempt:
                continue
            where = "output" if row["direction"] == "output" else f"input {row['input']}"
            entry = watermarks.setdefault(name, {})
            if kind == "watermark":
                entry[where] = row["watermark"]
            else:
                entry[f"{where} status"] = row["status"]
    back_pressure: dict[str, dict[str, Any]] = {}
    for row in _rows(con, SAMPLES, params):
        name, attempt = current.get((row["vertex_id"], row["subtask"]), (None, None))
        if name is None or row["attempt"] != attempt:
            continue
        vertex = name.rsplit("/", 1)[0]
        entry = back_pressure.setdefault(vertex, {"back_pressured_ms": -1.0, "worst_subtask": None})
        if row["back_pressured_ms"] > entry["back_pressured_ms"]:
            entry.update(back_pressured_ms=row["back_pressured_ms"], worst_subtask=row["subtask"])
    for entry in back_pressure.values():
        entry["level"] = back_pressure_level(entry["back_pressured_ms"] / 1000)
    judged = judgement(con, run.run_id)
    if judged.measured:
        requests = request_levels(con, judged, run.run_id)
        for (vertex_id, _), (name, _) in current.items():
            entry = back_pressure.get(name.rsplit("/", 1)[0])
            if entry is not None:
                ended = [level for t_s, level in requests.get(vertex_id, []) if t_s <= seconds]
                entry["level"] = ended[-1] if ended else None
    stopped = {name for name, worker in workers.items() if worker["status"] == "stopped"}
    heartbeats = {
        f"{row['owner']} <- {row['target']}": {"last_heard_s": seconds_of(row["last"]),
                                               "lost_s": None if row["lost_at"] is None else seconds_of(row["lost_at"])}
        for row in _rows(con, HEARTBEATS, params) if row["owner"] not in stopped
    }
    return {"run_id": run.run_id, "at_s": seconds, "task_executors": workers, "subtasks": subtasks,
            "watermarks": watermarks, "back_pressure_measure": judged.measure, "back_pressure": back_pressure,
            "heartbeats": heartbeats, "checkpoints": checkpoints_at(con, run.run_id, t),
            "user_metrics": user_metrics_at(con, run.run_id, seconds)}


def _watermark(value: Any) -> str:
    return "MAX" if value == MAX_LONG else str(value)


def render_state(state: dict[str, Any]) -> str:
    lines = [f"run {state['run_id']} at {state['at_s']:.3f} s"]
    lines.append("TaskExecutors")
    for name, worker in state["task_executors"].items():
        slots = ", ".join(f"slot {s['slot_index']}: {s['allocation_id']}" for s in worker["slots"]) or "no slots held"
        reason = f" ({worker['reason']})" if "reason" in worker else ""
        lines.append(f"  {name:<20} {worker['status']}{reason}; {slots}")
    lines.append("Subtasks")
    for name, task in state["subtasks"].items():
        where = f" on {task['resource_id']}" if task["resource_id"] else ""
        lines.append(f"  {name:<50} {task['state']:<12} attempt {task['attempt']}{where}")
    if state["watermarks"]:
        lines.append("Watermarks")
        for name, marks in state["watermarks"].items():
            parts = [f"{k} {_watermark(v) if 'status' not in k else v}" for k, v in sorted(marks.items())]
            lines.append(f"  {name:<50} " + ", ".join(parts))
    measure = state["back_pressure_measure"]
    lines.append("Back pressure" + ("" if measure == MAILBOX_TIMING else f" (levels by {measure})"))
    for vertex, entry in state["back_pressure"].items():
        lines.append(f"  {vertex:<50} {entry['level'] or '-':<5} {entry['back_pressured_ms']:.0f} ms/s "
                     f"(worst subtask {entry['worst_subtask']})")
    if state["user_metrics"]:
        lines.append("User metrics")
        for row in state["user_metrics"]:
            where = f"{row['vertex']}/{row['subtask']}"
            lines.append(f"  {where:<50} {row['operator']}: {row['metric']} ({row['kind']}) {describe_values(row)} "
                         f"at {row['sampled_s']:.3f} s")
    lines.append("Heartbeats")
    for pair, health in state["heartbeats"].items():
        status = f"lost at {health['lost_s']:.3f} s" if health["lost_s"] is not None else "ok"
        lines.append(f"  {pair:<45} last heard {health['last_heard_s']:.3f} s, {status}")
    checkpoints = state["checkpoints"]
    if checkpoints is not None:
        lines.append("Checkpoints")
        lines.append(f"  {checkpoints['triggered']} triggered, {checkpoints['completed']} completed, "
                     f"{checkpoints['failed']} failed, {checkpoints['in_progress']} in progress")
        for title, key in (("last completed checkpoint", "last_completed"), ("last savepoint", "last_savepoint")):
            lines.append(f"  {title} " + (describe_completed(checkpoints[key]) if checkpoints[key] else "none"))
        failed, restore = checkpoints["last_failed"], checkpoints["last_restore"]
        if failed is not None:
            lines.append(f"  last failed #{failed['checkpoint_id']} ({failed['kind']}) at {failed['failed_s']:.3f} s: "
                         f"{failed['reason']}")
        if restore is not None:
            lines.append(f"  last restore from {restore['kind']} #{restore['checkpoint_id']} at "
                         f"{restore['restored_s']:.3f} s: {restore['subtasks']} subtask(s), "
                         f"{restore['state_size']:,} bytes, {restore['external_path'] or 'in memory'}")
    return "\n".join(lines)

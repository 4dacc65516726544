"""A recorded run's checkpoints as Flink's web UI shows them in its checkpoint tab: counts, the
latest completed checkpoint, savepoint, failure and restore, and the history — for a report
and ``rill metrics`` (from the ``checkpoints`` view of the checkpointing plugin), and what had
happened by an instant for ``rill replay --at`` (from the checkpoint events up to then).

A log whose runs took no checkpoints, or that has no ``checkpoints`` view (the plugin
disabled), has none to show: the functions return None.
"""

from __future__ import annotations

from typing import Any

from replay.views import event_tables, temporary_views

HISTORY = """
SELECT checkpoint_id, status, kind, trigger_s, end_to_end_ms, state_size, max_alignment_ms, acknowledged_subtasks,
       total_subtasks, failure_reason, failure_message, external_path
FROM checkpoints WHERE run_id = $run ORDER BY checkpoint_id"""

COMPLETED_AT = """
SELECT c.checkpoint_id, c.checkpoint_kind AS kind, (c.time - r.clock_start) / 1e9 AS completed_s, c.state_size,
       c.duration_ms AS end_to_end_ms, c.external_path
FROM rill.ev_checkpoint_completed c JOIN rill.runs r ON r.run_id = c.run_id
WHERE c.run_id = $run AND c.time <= $t ORDER BY c.seq"""

FAILED_AT = """
SELECT f.checkpoint_id, f.checkpoint_kind AS kind, (f.time - r.clock_start) / 1e9 AS failed_s, f.reason, f.message
FROM rill.ev_checkpoint_failed f JOIN rill.runs r ON r.run_id = f.run_id
WHERE f.run_id = $run AND f.time <= $t AND f.checkpoint_id >= 0 ORDER BY f.seq"""

TRIGGERED_AT = "SELECT count(*) FROM rill.ev_checkpoint_triggered WHERE run_id = $run AND time <= $t"

RESTORES_AT = """
SELECT s.checkpoint_id, min(s.checkpoint_kind) AS kind, min(s.external_path) AS external_path,
       (s.time - r.clock_start) / 1e9 AS restored_s, count(*) AS subtasks, sum(s.state_size) AS state_size
FROM rill.ev_checkpoint_state_restored s JOIN rill.runs r ON r.run_id = s.run_id
WHERE s.run_id = $run AND s.time <= $t GROUP BY s.checkpoint_id, s.time, r.clock_start ORDER BY s.time"""


def _rows(con: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    result = con.execute(query, params)
    columns = [d[0] for d in result.description]
    return [dict(zip(columns, row)) for row in result.fetchall()]


def _restores(con: Any, run_id: str, t: int) -> list[dict[str, Any]]:
    if "checkpoint_state_restored" not in event_tables(con):
        return []
    return _rows(con, RESTORES_AT, {"run": run_id, "t": t})


def _last(rows: list[dict[str, Any]], **where: Any) -> dict[str, Any] | None:
    matching = [row for row in rows if all(row[key] == value for key, value in where.items())]
    return matching[-1] if matching else None


def run_checkpoints(con: Any, run_id: str, end: int) -> dict[str, Any] | None:
    """The checkpoint tab of a run (``end``: its last clock time, ns)."""
    if "checkpoints" not in temporary_views(con):
        return None
    history = _rows(con, HISTORY, {"run": run_id})
    restores = _restores(con, run_id, end)
    if not history and not restores:
        return None
    statuses = [row["status"] for row in history]
    return {
        "counts": {"triggered": len(history), "in_progress": statuses.count("IN_PROGRESS"),
                   "completed": statuses.count("COMPLETED"), "failed": statuses.count("FAILED"),
                   "restored": len(restores)},
        "latest_completed": _last(history, status="COMPLETED", kind="checkpoint"),
        "latest_savepoint": _last(history, status="COMPLETED", kind="savepoint"),
        "latest_failed": _last(history, status="FAILED"),
        "latest_restore": restores[-1] if restores else None,
        "history": history,
    }


def checkpoints_at(con: Any, run_id: str, t: int) -> dict[str, Any] | None:
    """What the run's checkpoints were at clock time ``t`` (ns): how many had been triggered,
    completed and had failed, the last completed checkpoint and savepoint, the last restore."""
    present = event_tables(con)
    if "checkpoint_triggered" not in present and "checkpoint_state_restored" not in present:
        return None
    params = {"run": run_id, "t": t}
    triggered = con.execute(TRIGGERED_AT, params).fetchone()[0] if "checkpoint_triggered" in present else 0
    completed = _rows(con, COMPLETED_AT, params) if "checkpoint_completed" in present else []
    failed = _rows(con, FAILED_AT, params) if "checkpoint_failed" in present else []
    restores = _restores(con, run_id, t)
    return {
        "triggered": triggered, "completed": len(completed), "failed": len(failed),
        "in_progress": triggered - len(completed) - len(failed),
        "last_completed": _last(completed, kind="checkpoint"), "last_savepoint": _last(completed, kind="savepoint"),
        "last_failed": failed[-1] if failed else None, "last_restore": restores[-1] if restores else None,
    }


def describe_completed(row: dict[str, Any]) -> str:
    """A completed checkpoint or savepoint (a history row, or one of :func:`checkpoints_at`):
    its id, when it was triggered or completed, its size, its end-to-end duration, where."""
    when = f"triggered at {row['trigger_s']:.3f} s" if "trigger_s" in row else f"completed at {row['completed_s']:.3f} s"
    where = row["external_path"] or "in the JobMaster's memory"
    return f"#{row['checkpoint_id']} ({when}): {row['state_size']:,} bytes, {row['end_to_end_ms']:.1f} ms, {where}"

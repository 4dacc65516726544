"""How a recorded run's back pressure is judged: by the measure it ran with (its plugin of
concern ``backpressure``, in ``runs.plugins``).

Mailbox timing (the default, and runs recorded before the concern existed) is judged by the
task metrics' back-pressured time (the ``task_metrics`` and ``backpressure`` views). Another
measure is judged by the view it publishes (:func:`kernel.runtime.backpressure.judgement_view`): a
subtask's share is its back-pressured samples over its samples, a vertex's its worst
subtask's; at an instant, a vertex has the level of its latest request by then (what Flink's
web UI showed). When that view is not there (the measure's plugin is not installed) the run
is judged by mailbox timing, with a note saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kernel.runtime.backpressure import MAILBOX_TIMING, judgement_view
from replay.views import temporary_views

WORST = """
SELECT vertex_id, max(ratio) AS ratio
FROM (SELECT vertex_id, subtask, sum(back_pressured_samples) / sum(samples) AS ratio
      FROM {view} WHERE run_id = $run GROUP BY vertex_id, subtask) s
GROUP BY vertex_id"""

REQUESTS = """
SELECT DISTINCT vertex_id, t_s, vertex_level FROM {view} WHERE run_id = $run ORDER BY vertex_id, t_s"""


@dataclass(frozen=True)
class Judgement:
    measure: str  # the measure judging the run
    view: str | None  # its view; None for mailbox timing
    note: str = ""  # why the recorded measure does not judge it

    @property
    def measured(self) -> bool:
        return self.view is not None


def judgement(con: Any, run_id: str) -> Judgement:
    """The measure that judges the run's back pressure, and its view."""
    row = con.execute("SELECT plugins FROM rill.runs WHERE run_id = $run", {"run": run_id}).fetchone()
    measure = json.loads(row[0] or "{}").get("backpressure", MAILBOX_TIMING) if row else MAILBOX_TIMING
    if measure == MAILBOX_TIMING:
        return Judgement(MAILBOX_TIMING, None)
    view = judgement_view(measure)
    if view not in temporary_views(con):
        return Judgement(MAILBOX_TIMING, None, f"the run measured back pressure by {measure}, whose view {view} is "
                                              "not there (its plugin is not installed): judged by mailbox timing")
    return Judgement(measure, view)


def worst_ratios(con: Any, judged: Judgement, run_id: str) -> dict[str, float]:
    """Per vertex id measured, its worst subtask's back-pressured share of samples."""
    return dict(con.execute(WORST.format(view=judged.view), {"run": run_id}).fetchall())


def request_levels(con: Any, judged: Judgement, run_id: str) -> dict[str, list[tuple[float, str]]]:
    """Per vertex id, (when its request ended, the vertex's level in it), in time order."""
    levels: dict[str, list[tuple[float, str]]] = {}
    for vertex_id, t_s, level in con.execute(REQUESTS.format(view=judged.view), {"run": run_id}).fetchall():
        levels.setdefault(vertex_id, []).append((t_s, level))
    return levels

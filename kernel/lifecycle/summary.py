"""What a run reports when it ends, and the short summary ``rill run`` prints on stderr."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernel.runtime.backpressure import MAILBOX_TIMING, back_pressure_level


@dataclass
class VertexSummary:
    name: str
    parallelism: int
    records_in: int
    records_out: int
    busy_ratio: float  # max over subtasks; NaN when not measured (legacy sources)
    back_pressured_ratio: float  # max over subtasks, of the task metrics' back-pressured time
    #: the measure that judges back pressure (``plugins.backpressure``)
    measure: str = MAILBOX_TIMING
    #: another measure's ratio (max over subtasks); None when it measured nothing of the vertex
    measured_ratio: float | None = None

    @property
    def level(self) -> str:
        """Flink's back-pressure level (:mod:`kernel.runtime.backpressure`) by the run's measure; ``-``
        when it measured nothing of the vertex."""
        ratio = self.back_pressured_ratio if self.measure == MAILBOX_TIMING else self.measured_ratio
        return "-" if ratio is None else back_pressure_level(ratio)


@dataclass
class RunOutcome:
    run_id: str
    job_id: str
    job_name: str
    status: str  # FINISHED, FAILED, CANCELED
    failure: str
    wall_seconds: float
    clock_seconds: float
    clock_mode: str
    vertices: list[VertexSummary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def _percent(ratio: float) -> str:
    return "NaN" if math.isnan(ratio) else f"{ratio * 100:.0f}%"


def _back_pressure(vertex: VertexSummary) -> str:
    """The level and the ratio it rests on; with another measure, the timed ratio too."""
    timed = _percent(vertex.back_pressured_ratio)
    if vertex.measure == MAILBOX_TIMING:
        return f"{vertex.level} {timed}"
    if vertex.measured_ratio is None:
        return f"- (not measured; timed {timed})"
    return f"{vertex.level} {_percent(vertex.measured_ratio)} (timed {timed})"


def render(outcome: RunOutcome) -> str:
    lines = [
        f"rill: run {outcome.run_id} {outcome.status} - wall {outcome.wall_seconds:.3f} s, "
        f"clock {outcome.clock_seconds:.3f} s ({outcome.clock_mode})"
    ]
    lines.extend(f"  {note}" for note in outcome.notes)
    if outcome.vertices:
        width = max(len("vertex"), *(len(v.name) for v in outcome.vertices))
        measures = sorted({v.measure for v in outcome.vertices} - {MAILBOX_TIMING})
        title = "back pressure" + "".join(f" (by {measure})" for measure in measures)
        lines.append(f"  {'vertex':<{width}}  {'p':>3}  {'records in':>11}  {'records out':>11}  {'busy':>5}  {title}")
        for v in outcome.vertices:
            lines.append(
                f"  {v.name:<{width}}  {v.parallelism:>3}  {v.records_in:>11}  {v.records_out:>11}  "
                f"{_percent(v.busy_ratio):>5}  {_back_pressure(v)}"
            )
    return "\n".join(lines)

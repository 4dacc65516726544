"""What a run reports when it ends, and the short summary ``rill run`` prints on stderr."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernel.backpressure import back_pressure_level


@dataclass
class VertexSummary:
    name: str
    parallelism: int
    records_in: int
    records_out: int
    busy_ratio: float  # max over subtasks; NaN when not measured (legacy sources)
    back_pressured_ratio: float  # max over subtasks

    @property
    def level(self) -> str:
        """Flink's back-pressure level (:mod:`kernel.backpressure`)."""
        return back_pressure_level(self.back_pressured_ratio)


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


def render(outcome: RunOutcome) -> str:
    lines = [
        f"rill: run {outcome.run_id} {outcome.status} - wall {outcome.wall_seconds:.3f} s, "
        f"clock {outcome.clock_seconds:.3f} s ({outcome.clock_mode})"
    ]
    lines.extend(f"  {note}" for note in outcome.notes)
    if outcome.vertices:
        width = max(len("vertex"), *(len(v.name) for v in outcome.vertices))
        lines.append(f"  {'vertex':<{width}}  {'p':>3}  {'records in':>11}  {'records out':>11}  {'busy':>5}  back pressure")
        for v in outcome.vertices:
            lines.append(
                f"  {v.name:<{width}}  {v.parallelism:>3}  {v.records_in:>11}  {v.records_out:>11}  "
                f"{_percent(v.busy_ratio):>5}  {v.level} {_percent(v.back_pressured_ratio)}"
            )
    return "\n".join(lines)

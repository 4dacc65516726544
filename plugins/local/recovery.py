"""What the run summary says about faults: failures, detection latency, restarts, recovery.

Components report to the tracker as things happen: injected faults (with their time),
heartbeat verdicts (the first one after a fault is its detection), task failures handled
(with or without restart), and executions reaching RUNNING (once every execution of the job
runs or has finished after a failure, the job has recovered).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.runtime.graph.execution import ExecutionState


@dataclass
class FaultRecord:
    index: int
    description: str
    time: int  # ns
    detected: int | None = None
    detected_by: str = ""
    recovered: int | None = None


@dataclass
class RecoveryTracker:
    start: int = 0  # ns, the run's clock start
    faults: list[FaultRecord] = field(default_factory=list)
    failures: list[tuple[int, str, bool]] = field(default_factory=list)  # (time, cause, restarted)
    _recovering: bool = False

    def fault(self, index: int, description: str, time: int) -> None:
        self.faults.append(FaultRecord(index, description, time))

    def detected(self, time: int, owner: str, target: str, verdict: str) -> None:
        for fault in self.faults:
            if fault.detected is None and fault.time <= time:
                fault.detected, fault.detected_by = time, f"{owner}: {verdict} of {target}"

    def failure(self, time: int, cause: str, restart: bool) -> None:
        self.failures.append((time, cause, restart))
        self._recovering = restart
        for fault in self.faults:
            if fault.detected is None and fault.time <= time:
                fault.detected, fault.detected_by = time, f"task failure: {cause}"

    def check_recovered(self, graph: Any, time: int) -> None:
        if not self._recovering:
            return
        done = (ExecutionState.RUNNING, ExecutionState.FINISHED)
        if all(ev.current.state in done for ev in graph.vertices()):
            self._recovering = False
            for fault in self.faults:
                if fault.recovered is None and fault.detected is not None:
                    fault.recovered = time

    @property
    def restarts(self) -> int:
        return sum(1 for _, _, restarted in self.failures if restarted)

    def notes(self) -> list[str]:
        lines = []
        for fault in self.faults:
            line = f"fault #{fault.index + 1} at {(fault.time - self.start) / 1e9:.3f} s: {fault.description}"
            if fault.detected is not None:
                line += f"; detected after {(fault.detected - fault.time) / 1e9:.3f} s ({fault.detected_by})"
            if fault.recovered is not None:
                line += f"; recovered after {(fault.recovered - fault.time) / 1e9:.3f} s (all tasks running)"
            lines.append(line)
        if self.failures:
            first = self.failures[0][1]
            lines.append(f"failures: {len(self.failures)}, restarts: {self.restarts}; first: {first}")
        return lines

"""The scheduling contract: which execution vertices the JobMaster's scheduler deploys when
(Flink's SchedulingStrategy and SchedulerOperations)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kernel.events import Event
    from kernel.runtime.graph.execution import ExecutionState, ExecutionVertex


class SchedulerOperations(Protocol):
    """What a scheduling strategy may ask of the scheduler that created it."""

    def allocate_slots_and_deploy(self, vertices: list[ExecutionVertex]) -> None:
        """Schedule these vertices (those still CREATED): request slots, deploy them
        together, in the given (topological) order, once every slot they need is there."""

    def emit(self, event: Event) -> None:
        """Record an event of the strategy in the run's event log."""

    def now(self) -> int:
        """The run's clock, in ns."""


class SchedulingStrategy(Protocol):
    """Decides when execution vertices are scheduled."""

    def start_scheduling(self) -> None:
        """The job starts: schedule what can run first."""

    def restart_tasks(self, vertex_ids: set[str]) -> None:
        """These execution vertices got new attempts after a failure: schedule them again."""

    def on_execution_state_change(self, vertex: ExecutionVertex, state: ExecutionState) -> None:
        """An execution of ``vertex`` reached ``state`` (the scheduler reports FINISHED)."""

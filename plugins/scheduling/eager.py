"""Plugin ``scheduling.eager``: every vertex at once (Flink's legacy EAGER schedule mode).

Consumers of blocking partitions are deployed too and wait for their data.
"""

from __future__ import annotations

from kernel import hookimpl
from kernel.contracts.scheduling import SchedulerOperations
from kernel.runtime.graph.execution import ExecutionGraph, ExecutionState, ExecutionVertex


class EagerSchedulingStrategy:
    def __init__(self, graph: ExecutionGraph, scheduler: SchedulerOperations) -> None:
        self.graph = graph
        self.scheduler = scheduler

    def start_scheduling(self) -> None:
        self.scheduler.allocate_slots_and_deploy(self.graph.vertices())

    def on_execution_state_change(self, vertex: ExecutionVertex, state: ExecutionState) -> None:
        """Everything is deployed from the start: nothing waits for a state change."""

    def restart_tasks(self, vertex_ids: set[str]) -> None:
        order = [ev for ev in self.graph.vertices() if ev.id in vertex_ids]
        self.scheduler.allocate_slots_and_deploy(order)


@hookimpl
def create_scheduling_strategy(execution_graph, scheduler):
    return EagerSchedulingStrategy(execution_graph, scheduler)

"""Plugin ``scheduling.pipelined-region`` (Flink's PipelinedRegionSchedulingStrategy).

A region is scheduled — all its vertices together, in topological order — once every
blocking partition it reads is finished; in streaming that is every region at once.
"""

from __future__ import annotations

from kernel import hookimpl
from kernel.contracts.scheduling import SchedulerOperations
from kernel.runtime.graph.execution import ExecutionGraph, ExecutionState, ExecutionVertex
from kernel.runtime.graph.regions import consumed_blocking_producers, pipelined_regions
from plugins.scheduling.events import PipelinedRegionsComputed, RegionScheduled


class PipelinedRegionSchedulingStrategy:
    def __init__(self, graph: ExecutionGraph, scheduler: SchedulerOperations) -> None:
        self.graph = graph
        self.scheduler = scheduler
        self.regions = pipelined_regions(graph)
        self.region_of = {ev.id: i for i, region in enumerate(self.regions) for ev in region}
        self.scheduled: set[int] = set()

    def start_scheduling(self) -> None:
        self.scheduler.emit(PipelinedRegionsComputed(time=self.scheduler.now(), job_id=self.graph.job_graph.job_id, regions=len(self.regions)))
        self._schedule_ready()

    def _schedulable(self, index: int) -> bool:
        return all(p.current.state is ExecutionState.FINISHED for p in consumed_blocking_producers(self.regions[index]))

    def _schedule_ready(self) -> None:
        for index, region in enumerate(self.regions):
            if index not in self.scheduled and self._schedulable(index):
                self.scheduled.add(index)
                self.scheduler.emit(RegionScheduled(
                    time=self.scheduler.now(), job_id=self.graph.job_graph.job_id, region=index, execution_vertices=len(region)
                ))
                self.scheduler.allocate_slots_and_deploy(region)

    def on_execution_state_change(self, vertex: ExecutionVertex, state: ExecutionState) -> None:
        if state is ExecutionState.FINISHED and len(self.scheduled) < len(self.regions):
            self._schedule_ready()

    def restart_tasks(self, vertex_ids: set[str]) -> None:
        for vertex_id in vertex_ids:
            self.scheduled.discard(self.region_of[vertex_id])
        self._schedule_ready()


@hookimpl
def register_event_types(register):
    register(PipelinedRegionsComputed)
    register(RegionScheduled)


@hookimpl
def create_scheduling_strategy(execution_graph, scheduler):
    return PipelinedRegionSchedulingStrategy(execution_graph, scheduler)

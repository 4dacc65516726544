"""Failover strategies: which execution vertices restart when one fails.

``region`` (Flink's RestartPipelinedRegionFailoverStrategy): the failed vertex's pipelined
region, every region consuming results of a restarted region, and every region producing
results a restarted region needs that are no longer available (their producer's attempt
failed or was cancelled: its output is gone) — transitively. ``full`` (RestartAllFailoverStrategy): every vertex.
"""

from __future__ import annotations

from kernel.runtime.graph.execution import ExecutionGraph, ExecutionState, ExecutionVertex
from kernel.runtime.graph.regions import pipelined_regions


class RestartAllFailoverStrategy:
    def __init__(self, graph: ExecutionGraph) -> None:
        self.graph = graph

    def tasks_to_restart(self, failed: ExecutionVertex) -> set[str]:
        return {ev.id for ev in self.graph.vertices()}


class RestartPipelinedRegionFailoverStrategy:
    def __init__(self, graph: ExecutionGraph) -> None:
        self.graph = graph
        self.regions = pipelined_regions(graph)
        self.region_of = {ev.id: index for index, region in enumerate(self.regions) for ev in region}

    def _consumers(self, index: int) -> set[int]:
        found = set()
        for ev in self.regions[index]:
            for partition in ev.produced:
                for vertices in partition.consumer_vertices:
                    found.update(self.region_of[c.id] for c in vertices)
        return found - {index}

    def _missing_producers(self, index: int) -> set[int]:
        found = set()
        for ev in self.regions[index]:
            for group in ev.inputs:
                for partition in group.partitions:
                    if partition.producer.current.state in (ExecutionState.FAILED, ExecutionState.CANCELED):
                        found.add(self.region_of[partition.producer.id])
        return found - {index}

    def tasks_to_restart(self, failed: ExecutionVertex) -> set[str]:
        todo = [self.region_of[failed.id]]
        chosen: set[int] = set()
        while todo:
            index = todo.pop()
            if index in chosen:
                continue
            chosen.add(index)
            todo.extend(self._consumers(index) | self._missing_producers(index))
        return {ev.id for index in chosen for ev in self.regions[index]}

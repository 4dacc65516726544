"""Pipelined regions: execution vertices connected through pipelined result partitions.

Blocking (batch) results separate regions; in a streaming job every connected component of
the job is one region. The scheduling strategy schedules by region; the failover strategy
restarts by region.
"""

from __future__ import annotations

from kernel.runtime.graph.execution import ExecutionGraph, ExecutionVertex


def pipelined_regions(graph: ExecutionGraph) -> list[list[ExecutionVertex]]:
    """Regions in topological order of their first vertex; vertices in topological order."""
    vertices = graph.vertices()
    parent = {ev.id: ev.id for ev in vertices}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for ev in vertices:
        for group in ev.inputs:
            if group.result.result_type.is_pipelined:
                for partition in group.partitions:
                    a, b = find(ev.id), find(partition.producer.id)
                    if a != b:
                        parent[a] = b
    regions: dict[str, list[ExecutionVertex]] = {}
    for ev in vertices:
        regions.setdefault(find(ev.id), []).append(ev)
    return list(regions.values())


def consumed_blocking_producers(region: list[ExecutionVertex]) -> list[ExecutionVertex]:
    """Producers outside the region whose blocking partitions the region reads."""
    members = {ev.id for ev in region}
    producers = []
    for ev in region:
        for group in ev.inputs:
            if not group.result.result_type.is_pipelined:
                producers.extend(p.producer for p in group.partitions if p.producer.id not in members)
    return producers

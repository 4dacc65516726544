"""Execution slot sharing groups (Flink's LocalInputPreferredSlotSharingStrategy).

Each group is one physical slot. A group never holds two subtasks of one job vertex; a
subtask prefers the group of a producer it reads pointwise, else the first group of its slot
sharing group without a subtask of its vertex. So the slots a slot sharing group needs is the
largest parallelism in it, and subtask i of a forward pipeline shares one slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernel.runtime.graph.execution import ExecutionGraph, ExecutionVertex
from kernel.runtime.graph.job import DistributionPattern


@dataclass(eq=False)
class ExecutionSlotSharingGroup:
    index: int
    slot_sharing_group: str
    vertices: list[ExecutionVertex] = field(default_factory=list)
    job_vertex_ids: set[str] = field(default_factory=set)

    def add(self, ev: ExecutionVertex) -> None:
        self.vertices.append(ev)
        self.job_vertex_ids.add(ev.job_vertex.id)


def slot_sharing_groups(graph: ExecutionGraph) -> dict[str, ExecutionSlotSharingGroup]:
    """ExecutionVertex id -> its group."""
    groups: dict[str, list[ExecutionSlotSharingGroup]] = {}
    assigned: dict[str, ExecutionSlotSharingGroup] = {}
    counter = 0
    for ejv in graph.job_vertices:
        ssg = ejv.job_vertex.slot_sharing_group
        candidates = groups.setdefault(ssg, [])
        for ev in ejv.vertices:
            chosen = None
            for consumed in ev.inputs:
                if consumed.edge.distribution_pattern is DistributionPattern.POINTWISE:
                    for partition in consumed.partitions:
                        group = assigned.get(partition.producer.id)
                        if group is not None and group.slot_sharing_group == ssg and ejv.id not in group.job_vertex_ids:
                            chosen = group
                            break
                if chosen is not None:
                    break
            if chosen is None:
                chosen = next((g for g in candidates if ejv.id not in g.job_vertex_ids), None)
            if chosen is None:
                chosen = ExecutionSlotSharingGroup(counter, ssg)
                counter += 1
                candidates.append(chosen)
            chosen.add(ev)
            assigned[ev.id] = chosen
    return assigned

"""JobGraph: operator chains as JobVertices, connected by JobEdges through IntermediateDataSets."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kernel.errors import JobDefinitionError
from kernel.runtime.graph.stream import StreamEdge, StreamGraph


class DistributionPattern(Enum):
    POINTWISE = "POINTWISE"  # forward, rescale: each consumer reads a subset of the producers
    ALL_TO_ALL = "ALL_TO_ALL"  # every consumer reads every producer


class ResultPartitionType(Enum):
    PIPELINED_BOUNDED = "PIPELINED_BOUNDED"  # streaming: consumed while produced, bounded buffers
    BLOCKING = "BLOCKING"  # batch: fully produced before consumed

    @property
    def is_pipelined(self) -> bool:
        return self is ResultPartitionType.PIPELINED_BOUNDED


@dataclass(eq=False)
class IntermediateDataSet:
    id: str
    producer: JobVertex
    result_type: ResultPartitionType
    stream_edge: StreamEdge
    consumers: list[JobEdge] = field(default_factory=list)


@dataclass(eq=False)
class JobEdge:
    source: IntermediateDataSet
    target: JobVertex
    distribution_pattern: DistributionPattern
    ship_strategy: str  # the partitioner's name, e.g. "HASH"
    type_number: int  # input of the target operator: 0 one-input, 1/2 two-input

    @property
    def stream_edge(self) -> StreamEdge:
        return self.source.stream_edge


@dataclass(eq=False)
class SlotSharingGroup:
    name: str
    vertex_ids: list[str] = field(default_factory=list)


@dataclass(eq=False)
class JobVertex:
    id: str  # JobVertexID: hex of the head operator's 16-byte hash
    name: str  # the chain's name, e.g. "Window -> Sink: Print to Std. Out"
    parallelism: int
    max_parallelism: int
    head_node_id: int
    #: stream node ids in the chain, head first, depth-first in out-edge order
    chained_node_ids: list[int]
    #: operator id (hex) of every chained node
    operator_ids: dict[int, str]
    #: user-given uid hashes, when set, per chained node
    user_operator_ids: dict[int, str]
    chained_edges: list[StreamEdge]
    slot_sharing_group: str
    invokable: str  # e.g. "OneInputStreamTask"
    co_location_group: str | None = None
    inputs: list[JobEdge] = field(default_factory=list)
    produced: list[IntermediateDataSet] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"JobVertex({self.name!r}, p={self.parallelism})"


@dataclass(eq=False)
class JobGraph:
    job_id: str
    job_name: str
    stream_graph: StreamGraph
    vertices: list[JobVertex]  # in creation order (sources' chains first)
    slot_sharing_groups: dict[str, SlotSharingGroup]
    runtime_mode: str = "STREAMING"
    #: per stream node id: the JobVertex holding it
    vertex_of_node: dict[int, JobVertex] = field(default_factory=dict)

    def vertex(self, vertex_id: str) -> JobVertex:
        for vertex in self.vertices:
            if vertex.id == vertex_id:
                return vertex
        raise KeyError(vertex_id)

    def topological_order(self) -> list[JobVertex]:
        """Vertices sorted from the sources (Flink's getVerticesSortedTopologicallyFromSources)."""
        remaining = {v.id: len(v.inputs) for v in self.vertices}
        order: list[JobVertex] = []
        ready = [v for v in self.vertices if not v.inputs]
        while ready:
            vertex = ready.pop(0)
            order.append(vertex)
            for data_set in vertex.produced:
                for edge in data_set.consumers:
                    remaining[edge.target.id] -= 1
                    if remaining[edge.target.id] == 0:
                        ready.append(edge.target)
        if len(order) != len(self.vertices):
            cyclic = ", ".join(sorted(repr(v.name) for v in self.vertices if v not in order))
            raise JobDefinitionError(f"The job graph is cyclic (through {cyclic}).")
        return order

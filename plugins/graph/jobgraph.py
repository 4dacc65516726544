"""StreamGraph -> JobGraph, as Flink's StreamingJobGraphGenerator builds it.

Chains start at the sources (ascending id); ``create_chain`` recurses depth-first into
chainable outputs (same chain) and non-chainable ones (a new chain each, once). A chain's
JobVertex is created after its downstream chains, so vertices are listed sinks-first as in
Flink. Chain names are Flink's: ``A -> B``, fan-out ``A -> (B, C)``. Operator IDs come from
the StreamGraphHasherV2 port; the JobVertexID is the head operator's ID.
"""

from __future__ import annotations

from kernel.runtime.graph.job import (
    DistributionPattern,
    IntermediateDataSet,
    JobEdge,
    JobGraph,
    JobVertex,
    ResultPartitionType,
    SlotSharingGroup,
)
from kernel.runtime.graph.stream import StreamEdge, StreamGraph, StreamNode
from plugins.graph.chaining import ChainingRules
from plugins.graph.hashing import murmur3_128, traverse_and_hash, user_hash


class _Chain:
    def __init__(self, head: int) -> None:
        self.head = head
        self.nodes: list[int] = []  # pre-order, head first
        self.chained_edges: list[StreamEdge] = []
        self.out_edges: list[StreamEdge] = []


class StreamingJobGraphGenerator:
    def __init__(self, graph: StreamGraph, rules: ChainingRules) -> None:
        self.graph = graph
        self.rules = rules
        self.hashes: dict[int, bytes] = {}
        self.chains: dict[int, _Chain] = {}
        self.chained_names: dict[int, str] = {}
        self.built: set[int] = set()
        self.vertices: list[JobVertex] = []
        self.vertex_of_node: dict[int, JobVertex] = {}

    def create_job_graph(self) -> JobGraph:
        self.hashes = traverse_and_hash(self.graph, self.rules.is_chainable)
        for source in self.graph.source_ids:
            self._create_chain(source, self.chains.setdefault(source, _Chain(source)))
        job_graph = JobGraph(
            job_id=self._job_id(),
            job_name=self.graph.job_name,
            stream_graph=self.graph,
            vertices=self.vertices,
            slot_sharing_groups={},
            runtime_mode=self.graph.runtime_mode,
            vertex_of_node=self.vertex_of_node,
        )
        self._connect_physical_edges()
        for vertex in self.vertices:
            group = job_graph.slot_sharing_groups.setdefault(vertex.slot_sharing_group, SlotSharingGroup(vertex.slot_sharing_group))
            group.vertex_ids.append(vertex.id)
        return job_graph

    def _job_id(self) -> str:
        """Deterministic for a topology (Flink draws a random JobID)."""
        digest = b"".join(self.hashes[nid] for nid in sorted(self.hashes))
        return murmur3_128(self.graph.job_name.encode("utf-8") + digest).hex()

    # -- chains -------------------------------------------------------------------------------

    def _create_chain(self, node_id: int, chain: _Chain) -> list[StreamEdge]:
        if chain.head in self.built:
            return []
        node = self.graph.nodes[node_id]
        chain.nodes.append(node_id)
        chainable = [e for e in node.out_edges if self.rules.is_chainable(e)]
        non_chainable = [e for e in node.out_edges if not self.rules.is_chainable(e)]
        transitive: list[StreamEdge] = []
        for edge in chainable:
            chain.chained_edges.append(edge)
            transitive.extend(self._create_chain(edge.target_id, chain))
        for edge in non_chainable:
            transitive.append(edge)
            self._create_chain(edge.target_id, self.chains.setdefault(edge.target_id, _Chain(edge.target_id)))
        self.chained_names[node_id] = self._chained_name(node, chainable)
        if node_id == chain.head:
            chain.out_edges = transitive
            self._create_vertex(chain)
        return transitive

    def _chained_name(self, node: StreamNode, chainable: list[StreamEdge]) -> str:
        if not chainable:
            return node.name
        if len(chainable) == 1:
            return f"{node.name} -> {self.chained_names[chainable[0].target_id]}"
        return f"{node.name} -> ({', '.join(self.chained_names[e.target_id] for e in chainable)})"

    def _invokable(self, head: StreamNode) -> str:
        if head.id in self.graph.sources:
            return "SourceOperatorStreamTask" if head.operator.kind == "source" else "SourceStreamTask"
        types = {edge.type_number for edge in head.in_edges}
        return "TwoInputStreamTask" if types - {0} else "OneInputStreamTask"

    def _create_vertex(self, chain: _Chain) -> None:
        head = self.graph.nodes[chain.head]
        vertex = JobVertex(
            id=self.hashes[head.id].hex(),
            name=self.chained_names[head.id],
            parallelism=head.parallelism,
            max_parallelism=head.max_parallelism,
            head_node_id=head.id,
            chained_node_ids=list(chain.nodes),
            operator_ids={nid: self.hashes[nid].hex() for nid in chain.nodes},
            user_operator_ids={
                nid: (self.graph.nodes[nid].uid_hash or user_hash(self.graph.nodes[nid].uid).hex())
                for nid in chain.nodes
                if self.graph.nodes[nid].uid_hash or self.graph.nodes[nid].uid
            },
            chained_edges=list(chain.chained_edges),
            slot_sharing_group=head.slot_sharing_group or "default",
            invokable=self._invokable(head),
        )
        self.built.add(head.id)
        self.vertices.append(vertex)
        for nid in chain.nodes:
            self.vertex_of_node[nid] = vertex

    # -- physical edges -----------------------------------------------------------------------

    def _connect_physical_edges(self) -> None:
        blocking = self.graph.runtime_mode == "BATCH"
        result_type = ResultPartitionType.BLOCKING if blocking else ResultPartitionType.PIPELINED_BOUNDED
        for vertex in self.vertices:
            chain = self.chains[vertex.head_node_id]
            for edge in chain.out_edges:
                data_set = IntermediateDataSet(
                    id=f"{vertex.id[:8]}-{edge.source_id}-{edge.target_id}-{len(vertex.produced)}",
                    producer=vertex,
                    result_type=result_type,
                    stream_edge=edge,
                )
                target = self.vertex_of_node[edge.target_id]
                job_edge = JobEdge(
                    source=data_set,
                    target=target,
                    distribution_pattern=(
                        DistributionPattern.POINTWISE if edge.partitioner.pointwise else DistributionPattern.ALL_TO_ALL
                    ),
                    ship_strategy=edge.partitioner.name,
                    type_number=edge.type_number,
                )
                data_set.consumers.append(job_edge)
                vertex.produced.append(data_set)
                target.inputs.append(job_edge)

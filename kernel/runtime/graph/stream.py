"""StreamGraph: one StreamNode per physical transformation, StreamEdges carrying partitioners.

Virtual transformations (partitioning, side outputs, unions) have no node: their effect is
folded into the edges (partitioner, output tag) when the graph is generated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterator

from kernel.runtime.graph.partitioner import StreamPartitioner

DEFAULT_SLOT_SHARING_GROUP = "default"


class ChainingStrategy(Enum):
    """Whether an operator may be chained to its predecessor and successors."""

    ALWAYS = "ALWAYS"  # chain to predecessor and successors when possible (default)
    NEVER = "NEVER"  # never chained (disable_chaining)
    HEAD = "HEAD"  # starts a chain, successors may chain to it (start_new_chain, sources)
    HEAD_WITH_SOURCES = "HEAD_WITH_SOURCES"  # a head that chains FLIP-27 sources into itself


class ExchangeMode(Enum):
    UNDEFINED = "UNDEFINED"
    PIPELINED = "PIPELINED"
    BATCH = "BATCH"


@dataclass(eq=False)
class StreamEdge:
    source_id: int
    target_id: int
    type_number: int
    partitioner: StreamPartitioner
    output_tag: Any = None  # an OutputTag for side outputs
    exchange_mode: ExchangeMode = ExchangeMode.UNDEFINED

    @property
    def edge_id(self) -> str:
        tag = self.output_tag.tag_id if self.output_tag is not None else None
        return f"({self.source_id}_{self.target_id}_{self.type_number}_{self.partitioner}_{tag})"

    def __repr__(self) -> str:
        return f"StreamEdge{self.edge_id}"


@dataclass(eq=False)
class StreamNode:
    id: int
    name: str
    operator: Any  # the OperatorSpec the runtime turns into an operator
    parallelism: int
    max_parallelism: int = -1
    slot_sharing_group: str | None = DEFAULT_SLOT_SHARING_GROUP
    chaining_strategy: ChainingStrategy = ChainingStrategy.ALWAYS
    uid: str | None = None
    uid_hash: str | None = None
    output_type: Any = None
    description: str | None = None
    parallelism_configured: bool = False
    #: of its network outputs, ms (-1: only full buffers); None: ``execution.buffer-timeout.*``
    buffer_timeout: int | None = None
    co_location_group: str | None = None
    #: the type PyFlink's coder writes the main output with, where it leaves PyFlink's chain of
    #: Python functions (``kernel.datastream.python_chaining``); None where values pass as they are
    serialized_output_type: Any = None
    in_edges: list[StreamEdge] = field(default_factory=list)
    out_edges: list[StreamEdge] = field(default_factory=list)

    @property
    def display(self) -> str:
        """Flink's ``StreamNode.toString()``: ``name-id``."""
        return f"{self.name}-{self.id}"

    def __repr__(self) -> str:
        return f"StreamNode({self.id}, {self.name!r}, p={self.parallelism})"


@dataclass(eq=False)
class StreamGraph:
    job_name: str
    nodes: dict[int, StreamNode] = field(default_factory=dict)
    chaining_enabled: bool = True
    chain_with_different_max_parallelism: bool = True
    runtime_mode: str = "STREAMING"
    max_parallelism: int = -1  # pipeline.max-parallelism, -1 when not set
    #: nodes added as sources / legacy sinks (a sink_to writer is an operator, as in Flink)
    sources: set[int] = field(default_factory=set)
    sinks: set[int] = field(default_factory=set)
    #: settings of the program the graph was generated from
    buffer_timeout: int | None = None
    auto_watermark_interval: int | None = None
    job_parameters: dict[str, str] = field(default_factory=dict)

    @property
    def source_ids(self) -> list[int]:
        return sorted(self.sources)

    @property
    def sink_ids(self) -> list[int]:
        return sorted(self.sinks)

    def node(self, node_id: int) -> StreamNode:
        return self.nodes[node_id]

    def edges(self) -> Iterator[StreamEdge]:
        for node in self.nodes.values():
            yield from node.out_edges

    def topological_order(self) -> list[StreamNode]:
        """Nodes in topological order (Kahn's algorithm, ties by node id)."""
        remaining = {nid: len(node.in_edges) for nid, node in self.nodes.items()}
        ready = sorted(nid for nid, count in remaining.items() if count == 0)
        order = []
        while ready:
            nid = ready.pop(0)
            order.append(self.nodes[nid])
            for edge in self.nodes[nid].out_edges:
                remaining[edge.target_id] -= 1
                if remaining[edge.target_id] == 0:
                    ready.append(edge.target_id)
                    ready.sort()
        return order

"""Whether a StreamEdge may be chained: Flink's current conditions, then plugin vetoes.

``is_chainable(edge)`` (StreamingJobGraphGenerator.isChainable) holds iff the target has one
input and ``is_chainable_input(edge)``: chaining enabled, same slot sharing group,
compatible chaining strategies, equal parallelism (and max parallelism when configured),
a forward partitioner on a non-BATCH exchange, no other input of the target with the same
type number — and no ``allow_chaining`` implementation vetoes it. A yielding operator (async
I/O) is not chained into a chain headed by a legacy source (Flink's ``SourceStreamTask`` runs
its source function outside the mailbox, so nothing there could yield to it).
"""

from __future__ import annotations

from typing import Callable

from kernel.runtime.graph.partitioner import ForwardPartitioner
from kernel.runtime.graph.stream import ChainingStrategy, ExchangeMode, StreamEdge, StreamGraph, StreamNode

Veto = Callable[[StreamEdge, StreamNode, StreamNode], bool]


def is_flip27_source(node: StreamNode) -> bool:
    return node.operator is not None and node.operator.kind == "source"


def is_legacy_source(graph: StreamGraph, node: StreamNode) -> bool:
    """A source that is not a FLIP-27 source (``from_collection``: Flink's ``StreamSource``)."""
    return node.id in graph.sources and not is_flip27_source(node)


def operators_chainable(graph: StreamGraph, up: StreamNode, down: StreamNode) -> bool:
    if up.operator is None or down.operator is None:
        return False
    if up.chaining_strategy is ChainingStrategy.NEVER:
        return False
    if down.chaining_strategy in (ChainingStrategy.NEVER, ChainingStrategy.HEAD):
        return False
    if down.chaining_strategy is ChainingStrategy.HEAD_WITH_SOURCES and not is_flip27_source(up):
        return False
    if up.parallelism != down.parallelism:
        return False
    if not graph.chain_with_different_max_parallelism and up.max_parallelism != down.max_parallelism:
        return False
    return True


class ChainingRules:
    def __init__(self, graph: StreamGraph, veto: Veto) -> None:
        self.graph = graph
        self.veto = veto
        self._cache: dict[int, bool] = {}

    def is_chainable(self, edge: StreamEdge) -> bool:
        key = id(edge)
        if key not in self._cache:
            down = self.graph.nodes[edge.target_id]
            self._cache[key] = len(down.in_edges) == 1 and self.is_chainable_input(edge)
        return self._cache[key]

    def is_chainable_input(self, edge: StreamEdge) -> bool:
        graph = self.graph
        up, down = graph.nodes[edge.source_id], graph.nodes[edge.target_id]
        if not graph.chaining_enabled:
            return False
        if up.slot_sharing_group != down.slot_sharing_group:
            return False
        if not operators_chainable(graph, up, down):
            return False
        if down.operator.yielding and is_legacy_source(graph, self._head_of(up)):
            return False
        if not isinstance(edge.partitioner, ForwardPartitioner) or edge.exchange_mode is ExchangeMode.BATCH:
            return False
        if any(other is not edge and other.type_number == edge.type_number for other in down.in_edges):
            return False
        return not self.veto(edge, up, down)

    def _head_of(self, node: StreamNode) -> StreamNode:
        """The head of the chain ``node`` belongs to (Flink's ``getHeadOperator``): up the
        single chainable input edges."""
        while len(node.in_edges) == 1 and self.is_chainable(node.in_edges[0]):
            node = self.graph.nodes[node.in_edges[0].source_id]
        return node

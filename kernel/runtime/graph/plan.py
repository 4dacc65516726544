"""Flink's JSON execution plan of a StreamGraph (``get_execution_plan()``).

Nodes in id order, sinks last; each with id, type (operator name), pact ("Data Source",
"Operator", "Data Sink"), contents (description), parallelism and, for non-sources,
predecessors with their ship strategy. Formatted the way Flink's Jackson printer does it
(``"key" : value``, arrays inline); ``side`` is always ``"second"``, as Flink writes it.
"""

from __future__ import annotations

import json
from typing import Any

from kernel.runtime.graph.stream import StreamGraph


def plan_nodes(graph: StreamGraph) -> list[dict[str, Any]]:
    sinks = graph.sinks
    nodes = []
    for node_id in sorted(graph.nodes, key=lambda nid: (nid in sinks, nid)):
        node = graph.nodes[node_id]
        entry: dict[str, Any] = {
            "id": node.id,
            "type": node.name,
            "pact": "Data Source" if node.id in graph.sources else "Data Sink" if node.id in sinks else "Operator",
            "contents": node.description or node.name,
            "parallelism": node.parallelism,
        }
        if node.id not in graph.sources:
            entry["predecessors"] = [
                {"id": edge.source_id, "ship_strategy": edge.partitioner.name, "side": "second"}
                for edge in node.in_edges
            ]
        nodes.append(entry)
    return nodes


def jackson_pretty(value: Any, nesting: int = 0) -> str:
    """JSON as Jackson's DefaultPrettyPrinter writes it."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "  " * (nesting + 1)
        fields = [f"{inner}{json.dumps(k)} : {jackson_pretty(v, nesting + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(fields) + "\n" + "  " * nesting + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, nesting) for v in value) + " ]"
    return json.dumps(value)


def execution_plan_json(graph: StreamGraph) -> str:
    return jackson_pretty({"nodes": plan_nodes(graph)})

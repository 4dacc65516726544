"""Text, JSON and Graphviz renderings of the three graphs (``rill plan``)."""

from __future__ import annotations

import json
from typing import Any

from kernel.runtime.graph.execution import ExecutionGraph
from kernel.runtime.graph.job import JobGraph
from kernel.runtime.graph.plan import execution_plan_json
from kernel.runtime.graph.stream import StreamGraph


def _operator_ids(job: JobGraph) -> dict[int, str]:
    return {nid: oid for vertex in job.vertices for nid, oid in vertex.operator_ids.items()}


# -- text --------------------------------------------------------------------------------------


def stream_text(graph: StreamGraph, job: JobGraph) -> str:
    ids = _operator_ids(job)
    lines = [f'StreamGraph "{graph.job_name}": {len(graph.nodes)} nodes']
    for node in graph.topological_order():
        lines.append(
            f"{node.id:>4}  {node.name}  p={node.parallelism} maxp={node.max_parallelism} "
            f"ssg={node.slot_sharing_group} chaining={node.chaining_strategy.value} id={ids[node.id]}"
        )
        for edge in node.out_edges:
            tag = f" side-output={edge.output_tag.tag_id}" if edge.output_tag is not None else ""
            lines.append(f"        -> {edge.target_id} {graph.nodes[edge.target_id].name} [{edge.partitioner.name}]{tag}")
    return "\n".join(lines)


def job_text(job: JobGraph) -> str:
    stream = job.stream_graph
    lines = [f'JobGraph "{job.job_name}" ({job.job_id}): {len(job.vertices)} vertices']
    for vertex in job.topological_order():
        lines.append(
            f"{vertex.id}  {vertex.name}  p={vertex.parallelism} ssg={vertex.slot_sharing_group} {vertex.invokable}"
        )
        for nid in vertex.chained_node_ids:
            lines.append(f"    operator {stream.nodes[nid].name} id={vertex.operator_ids[nid]}")
        for data_set in vertex.produced:
            for edge in data_set.consumers:
                lines.append(
                    f"    -> {edge.target.name} [{edge.ship_strategy} {edge.distribution_pattern.value} "
                    f"{data_set.result_type.value}]"
                )
    return "\n".join(lines)


def execution_text(graph: ExecutionGraph) -> str:
    vertices = sum(len(ejv.vertices) for ejv in graph.job_vertices)
    lines = [
        f'ExecutionGraph "{graph.job_graph.job_name}": {len(graph.job_vertices)} job vertices, '
        f"{vertices} execution vertices, {len(graph.results)} intermediate results"
    ]
    for ejv in graph.job_vertices:
        lines.append(f"{ejv.name}  p={ejv.parallelism} maxp={ejv.max_parallelism}")
        for ev in ejv.vertices:
            reads = "; ".join(
                f"{group.edge.ship_strategy} <- " + ",".join(str(p.index) for p in group.partitions)
                for group in ev.inputs
            )
            lines.append(f"    {ev.name}  {ev.current.state.value}" + (f"  reads {reads}" if reads else ""))
    return "\n".join(lines)


# -- JSON --------------------------------------------------------------------------------------


def job_json(job: JobGraph) -> dict[str, Any]:
    """Flink's REST plan shape (JsonPlanGenerator) with the operators of each chain."""
    stream = job.stream_graph
    nodes = []
    for vertex in job.topological_order():
        nodes.append({
            "id": vertex.id,
            "parallelism": vertex.parallelism,
            "operator": vertex.invokable,
            "description": vertex.name,
            "slot_sharing_group": vertex.slot_sharing_group,
            "operators": [
                {"name": stream.nodes[n].name, "id": vertex.operator_ids[n]} for n in vertex.chained_node_ids
            ],
            "inputs": [
                {"num": i, "id": edge.source.producer.id, "ship_strategy": edge.ship_strategy,
                 "distribution_pattern": edge.distribution_pattern.value,
                 "exchange": edge.source.result_type.value.lower()}
                for i, edge in enumerate(vertex.inputs)
            ],
        })
    return {"jid": job.job_id, "name": job.job_name, "type": job.runtime_mode, "nodes": nodes}


def execution_json(graph: ExecutionGraph) -> dict[str, Any]:
    return {
        "jid": graph.job_graph.job_id,
        "name": graph.job_graph.job_name,
        "job_vertices": [
            {
                "id": ejv.id,
                "name": ejv.name,
                "parallelism": ejv.parallelism,
                "max_parallelism": ejv.max_parallelism,
                "subtasks": [
                    {
                        "id": ev.id,
                        "name": ev.name,
                        "state": ev.current.state.value,
                        "attempt": ev.current.attempt,
                        "inputs": [
                            {"result": g.result.id, "ship_strategy": g.edge.ship_strategy,
                             "partitions": [p.index for p in g.partitions]}
                            for g in ev.inputs
                        ],
                    }
                    for ev in ejv.vertices
                ],
            }
            for ejv in graph.job_vertices
        ],
    }


# -- Graphviz ----------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """A DOT string; newlines become label line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def stream_dot(graph: StreamGraph) -> str:
    lines = [f"digraph {_quote(graph.job_name)} {{", "  rankdir=LR;", "  node [shape=box];"]
    for node in graph.nodes.values():
        label = _quote(f"{node.name}\np={node.parallelism}")
        lines.append(f"  n{node.id} [label={label}];")
    for edge in graph.edges():
        lines.append(f"  n{edge.source_id} -> n{edge.target_id} [label={_quote(edge.partitioner.name)}];")
    lines.append("}")
    return "\n".join(lines)


def job_dot(job: JobGraph) -> str:
    lines = [f"digraph {_quote(job.job_name)} {{", "  rankdir=LR;", "  node [shape=box];"]
    for vertex in job.vertices:
        label = _quote(f"{vertex.name}\np={vertex.parallelism} ssg={vertex.slot_sharing_group}")
        lines.append(f"  v{vertex.id[:12]} [label={label}];")
    for vertex in job.vertices:
        for edge in vertex.inputs:
            lines.append(
                f"  v{edge.source.producer.id[:12]} -> v{vertex.id[:12]} [label={_quote(edge.ship_strategy)}];"
            )
    lines.append("}")
    return "\n".join(lines)


def execution_dot(graph: ExecutionGraph) -> str:
    lines = [f"digraph {_quote(graph.job_graph.job_name)} {{", "  rankdir=LR;", "  node [shape=box];"]
    for ejv in graph.job_vertices:
        lines.append(f"  subgraph cluster_{ejv.id[:12]} {{ label={_quote(ejv.name)};")
        for ev in ejv.vertices:
            label = _quote(f"{ev.subtask + 1}/{ejv.parallelism}")
            lines.append(f"    e{ev.id} [label={label}];")
        lines.append("  }")
    for ejv in graph.job_vertices:
        for ev in ejv.vertices:
            for group in ev.inputs:
                for partition in group.partitions:
                    lines.append(f"  e{partition.producer.id} -> e{ev.id};")
    lines.append("}")
    return "\n".join(lines)


def render(level: str, fmt: str, stream: StreamGraph, job: JobGraph, execution: ExecutionGraph) -> str:
    if fmt == "json":
        if level == "stream":
            return execution_plan_json(stream)
        return json.dumps(job_json(job) if level == "job" else execution_json(execution), indent=2)
    if fmt == "dot":
        return {"stream": lambda: stream_dot(stream), "job": lambda: job_dot(job), "execution": lambda: execution_dot(execution)}[level]()
    return {"stream": lambda: stream_text(stream, job), "job": lambda: job_text(job), "execution": lambda: execution_text(execution)}[level]()

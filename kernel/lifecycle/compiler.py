"""Compiling a program through the graph hooks: StreamGraph, JobGraph, ExecutionGraph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.datastream.python_chaining import serialized_output_types
from kernel.errors import JobDefinitionError
from kernel.lifecycle.program import Program, check_program

if TYPE_CHECKING:
    from kernel.runtime.graph.execution import ExecutionGraph
    from kernel.runtime.graph.job import JobGraph
    from kernel.runtime.graph.stream import StreamEdge, StreamGraph, StreamNode
    from kernel.lifecycle.session import Session


@dataclass
class CompiledJob:
    program: Program
    stream_graph: StreamGraph
    job_graph: JobGraph


def build_stream_graph(session: Session, program: Program) -> StreamGraph:
    """The StreamGraph the graph plugin builds, its nodes marked where PyFlink serialises their
    output (``StreamNode.serialized_output_type``)."""
    check_program(program)
    session.plugin_manager.require("build_stream_graph", "graph")
    graph = session.plugin_manager.hook.build_stream_graph(program=program, config=session.config)
    for node_id, type_info in serialized_output_types(program.transformations).items():
        node = graph.nodes.get(node_id)
        if node is not None:
            node.serialized_output_type = type_info
    return graph


def build_job_graph(session: Session, stream_graph: StreamGraph) -> JobGraph:
    hook = session.plugin_manager.hook
    session.plugin_manager.require("build_job_graph", "graph")

    def chaining_vetoed(edge: StreamEdge, upstream: StreamNode, downstream: StreamNode) -> bool:
        return False in hook.allow_chaining(edge=edge, upstream=upstream, downstream=downstream, config=session.config)

    return hook.build_job_graph(stream_graph=stream_graph, config=session.config, chaining_vetoed=chaining_vetoed)


def build_execution_graph(session: Session, job_graph: JobGraph) -> ExecutionGraph:
    session.plugin_manager.require("build_execution_graph", "graph")
    return session.plugin_manager.hook.build_execution_graph(job_graph=job_graph, config=session.config)


def compile_program(session: Session, program: Program) -> CompiledJob:
    """StreamGraph and JobGraph of a program (the ExecutionGraph is built by the JobMaster)."""
    stream_graph = build_stream_graph(session, program)
    job_graph = build_job_graph(session, stream_graph)
    if job_graph is None:
        raise JobDefinitionError("no JobGraph was built")
    return CompiledJob(program, stream_graph, job_graph)

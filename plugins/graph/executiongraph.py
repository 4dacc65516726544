"""JobGraph -> ExecutionGraph (Flink's DefaultExecutionGraphBuilder and EdgeManagerBuildUtil)."""

from __future__ import annotations

from kernel.errors import JobDefinitionError
from kernel.runtime.graph.execution import (
    ConsumedPartitionGroup,
    ExecutionGraph,
    ExecutionJobVertex,
    ExecutionVertex,
    IntermediateResult,
    IntermediateResultPartition,
)
from kernel.runtime.graph.job import DistributionPattern, JobGraph
from kernel.runtime.streaming.keygroups import default_max_parallelism


def pointwise_inputs(producers: int, consumers: int) -> list[list[int]]:
    """For each consumer subtask, the producer partitions it reads (POINTWISE)."""
    if producers == consumers:
        return [[i] for i in range(consumers)]
    if producers > consumers:
        return [list(range(i * producers // consumers, (i + 1) * producers // consumers)) for i in range(consumers)]
    inputs: list[list[int]] = [[] for _ in range(consumers)]
    for p in range(producers):
        start = (p * consumers + producers - 1) // producers
        end = ((p + 1) * consumers + producers - 1) // producers
        for consumer in range(start, end):
            inputs[consumer].append(p)
    return inputs


def build_execution_graph(job_graph: JobGraph) -> ExecutionGraph:
    results: dict[str, IntermediateResult] = {}
    job_vertices: list[ExecutionJobVertex] = []
    for vertex in job_graph.topological_order():
        max_parallelism = vertex.max_parallelism if vertex.max_parallelism > 0 else default_max_parallelism(vertex.parallelism)
        if vertex.parallelism > max_parallelism:
            raise JobDefinitionError(
                f"The parallelism ({vertex.parallelism}) of {vertex.name!r} is larger than its max "
                f"parallelism ({max_parallelism})"
            )
        ejv = ExecutionJobVertex(vertex, max_parallelism)
        ejv.vertices = [ExecutionVertex(ejv, i) for i in range(vertex.parallelism)]
        for data_set in vertex.produced:
            result = IntermediateResult(data_set.id, ejv, data_set.result_type, data_set.consumers)
            for ev in ejv.vertices:
                partition = IntermediateResultPartition(result, ev.subtask, ev)
                partition.consumer_vertices = [[] for _ in data_set.consumers]
                result.partitions.append(partition)
                ev.produced.append(partition)
            results[result.id] = result
            ejv.produced.append(result)
        for edge in vertex.inputs:
            result = results[edge.source.id]
            ejv.inputs.append(result)
            consumer = result.consumers.index(edge)
            if edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
                for ev in ejv.vertices:
                    ev.inputs.append(ConsumedPartitionGroup(edge, result, list(result.partitions)))
                for partition in result.partitions:
                    partition.consumer_vertices[consumer] = list(ejv.vertices)
            else:
                for ev, indexes in zip(ejv.vertices, pointwise_inputs(len(result.partitions), vertex.parallelism)):
                    partitions = [result.partitions[i] for i in indexes]
                    ev.inputs.append(ConsumedPartitionGroup(edge, result, partitions))
                    for partition in partitions:
                        partition.consumer_vertices[consumer].append(ev)
        job_vertices.append(ejv)
    return ExecutionGraph(job_graph, job_vertices, results)

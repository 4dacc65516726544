"""Plugin ``graph.flink``: compiles programs the way Flink does."""

from __future__ import annotations

from kernel import hookimpl
from kernel.options import CoreOptions


@hookimpl
def build_stream_graph(program, config):
    from plugins.graph.streamgraph import StreamGraphGenerator

    options = config.section(CoreOptions)
    return StreamGraphGenerator(program, options.chain_different_max_parallelism).generate()


@hookimpl
def build_job_graph(stream_graph, chaining_vetoed):
    from plugins.graph.chaining import ChainingRules
    from plugins.graph.jobgraph import StreamingJobGraphGenerator

    return StreamingJobGraphGenerator(stream_graph, ChainingRules(stream_graph, chaining_vetoed)).create_job_graph()


@hookimpl
def build_execution_graph(job_graph, config):
    from plugins.graph.executiongraph import build_execution_graph as build

    return build(job_graph)

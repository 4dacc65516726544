"""Helpers for compiler tests: build a program with the API, compile it through the hooks."""

from __future__ import annotations

from typing import Callable

from kernel.lifecycle.compiler import build_execution_graph, compile_program
from kernel.lifecycle.executors import CapturingExecutor, ProgramCaptured, use_executor
from kernel.lifecycle.session import Session


def compile_job(build: Callable[[object], None], *sets: str, session: Session | None = None, plugins=()):
    """Run ``build(env)`` (which calls env.execute()) and compile what it defined."""
    from kernel.datastream import StreamExecutionEnvironment

    session = session or Session.open(sets=sets, environ={}, plugins=plugins)
    with use_executor(CapturingExecutor(session)):
        env = StreamExecutionEnvironment.get_execution_environment()
        try:
            build(env)
        except ProgramCaptured as captured:
            return compile_program(session, captured.program)
    raise AssertionError("build() did not call env.execute()")


def execution_graph(compiled, session: Session | None = None):
    return build_execution_graph(session or Session.open(environ={}), compiled.job_graph)


def vertex_names(compiled) -> list[str]:
    return [v.name for v in compiled.job_graph.topological_order()]


def ids(compiled) -> dict[str, str]:
    """operator name -> operator id (names must be unique in the job)."""
    stream = compiled.stream_graph
    return {stream.nodes[n].name: oid for v in compiled.job_graph.vertices for n, oid in v.operator_ids.items()}

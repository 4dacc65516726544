"""Executing programs in a session: compile through the graph hooks, record the compiled
job in the run's event log, hand it to the execution backend."""

from __future__ import annotations

import hashlib
import os
import sys
from typing import TYPE_CHECKING, Any

from kernel.compiler import CompiledJob, build_execution_graph, compile_program
from kernel.errors import JobFailed
from kernel.events import (
    ExecutionGraphCompiled,
    JobEdgeDefined,
    JobGraphCompiled,
    JobVertexDefined,
    StreamGraphCompiled,
)
from kernel.faults import check_operators
from kernel.program import PipelineExecutor, Program
from kernel.summary import RunOutcome, render
from kernel.tracebacks import debugging, user_frames

if TYPE_CHECKING:
    from kernel.common.job_client import JobClient
    from kernel.common.job_execution_result import JobExecutionResult
    from kernel.graph.execution import ExecutionGraph
    from kernel.run import Run
    from kernel.session import Session


def record_compilation(run: Run, compiled: CompiledJob) -> None:
    """``stream_graph_compiled``, ``job_graph_compiled`` and one event per JobVertex and JobEdge."""
    now = run.clock.now()
    emit = run.bus.emit
    stream, job = compiled.stream_graph, compiled.job_graph
    emit(StreamGraphCompiled(
        time=now, job_name=stream.job_name, nodes=len(stream.nodes), edges=sum(1 for _ in stream.edges()),
        sources=len(stream.sources), sinks=len(stream.sinks),
    ))
    job_edges = [edge for vertex in job.vertices for edge in vertex.inputs]
    emit(JobGraphCompiled(
        time=now, job_id=job.job_id, job_name=job.job_name, vertices=len(job.vertices), edges=len(job_edges),
        operators=len(stream.nodes), chained_operators=sum(len(v.chained_node_ids) - 1 for v in job.vertices),
        slot_sharing_groups=len(job.slot_sharing_groups),
    ))
    for vertex in job.topological_order():
        emit(JobVertexDefined(
            time=now, job_id=job.job_id, vertex_id=vertex.id, name=vertex.name, parallelism=vertex.parallelism,
            max_parallelism=vertex.max_parallelism, slot_sharing_group=vertex.slot_sharing_group,
            invokable=vertex.invokable, operators=[stream.nodes[n].name for n in vertex.chained_node_ids],
            operator_ids=[vertex.operator_ids[n] for n in vertex.chained_node_ids],
        ))
    for edge in job_edges:
        emit(JobEdgeDefined(
            time=now, job_id=job.job_id, source_vertex_id=edge.source.producer.id, target_vertex_id=edge.target.id,
            ship_strategy=edge.ship_strategy, distribution_pattern=edge.distribution_pattern.value,
            result_type=edge.source.result_type.value,
        ))


def record_execution_graph(run: Run, graph: ExecutionGraph) -> None:
    emit = run.bus.emit
    emit(ExecutionGraphCompiled(
        time=run.clock.now(), job_id=graph.job_graph.job_id, job_vertices=len(graph.job_vertices),
        execution_vertices=sum(len(ejv.vertices) for ejv in graph.job_vertices),
        intermediate_results=len(graph.results),
        result_partitions=sum(len(r.partitions) for r in graph.results.values()),
    ))


def plan_run(session: Session, compiled: CompiledJob) -> tuple[Run, ExecutionGraph]:
    """Record the compilation of a job without running it (``rill plan``): a run ``planned``."""
    run = session.new_run(compiled.program.job_name, metadata=program_metadata(compiled.program))
    run.start()
    record_compilation(run, compiled)
    graph = build_execution_graph(session, compiled.job_graph)
    record_execution_graph(run, graph)
    run.finish("planned")
    return run, graph


def program_metadata(program: Program) -> dict[str, Any]:
    """What a run records about its program: the job file with its arguments, content and hash
    (for re-execution) and the runtime mode."""
    metadata: dict[str, Any] = {"job_file": program.source_file, "job_args": program.arguments,
                                "runtime_mode": program.runtime_mode}
    if program.source_file is not None and os.path.isfile(program.source_file):
        with open(program.source_file, "rb") as handle:
            source = handle.read()
        metadata["job_sha256"] = hashlib.sha256(source).hexdigest()
        metadata["job_source"] = source.decode("utf-8", errors="replace")
    return metadata


class SessionExecutor(PipelineExecutor):
    """Runs each program on the session's execution backend, prints the run's summary on
    stderr (unless ``quiet``) and raises ``JobFailed`` when the job failed."""

    def __init__(self, session: Session, quiet: bool = False, progress: Any = None) -> None:
        super().__init__(session)
        self.quiet = quiet
        #: a live status line (``kernel.cli.progress.LiveProgress``), cleared before the summary
        self.progress = progress
        self.outcomes: list[RunOutcome] = []
        #: the jobs submitted with ``execute_async``
        self.clients: list[JobClient] = []

    def run(self, program: Program) -> RunOutcome:
        if program.source_file is None:
            program.source_file = self.source_file
            program.arguments = list(self.arguments)
        session = self.session_for(program)
        compiled = compile_program(session, program)
        check_operators(session.config.faults, [node.name for node in compiled.stream_graph.nodes.values()])
        session.plugin_manager.require("create_execution_backend", "backend")
        backend = session.plugin_manager.hook.create_execution_backend(config=session.config)
        outcome = backend.execute(compiled, session)
        self.outcomes.append(outcome)
        if self.progress is not None:
            self.progress.stop()
        sys.stdout.flush()
        if not self.quiet:
            print(render(outcome), file=sys.stderr)
            if outcome.failure:
                failure = outcome.failure if debugging() else user_frames(outcome.failure)
                print(failure.rstrip(), file=sys.stderr)
        return outcome

    def execute(self, program: Program) -> JobExecutionResult:
        from kernel.common.job_execution_result import JobExecutionResult

        outcome = self.run(program)
        if outcome.status == "FAILED":
            first = outcome.failure.splitlines()[0] if outcome.failure else "unknown cause"
            raise JobFailed(f"job {outcome.job_name!r} failed (run {outcome.run_id}): {first}")
        return JobExecutionResult(outcome.job_id, int(outcome.clock_seconds * 1000), run_id=outcome.run_id)

    def execute_async(self, program: Program) -> JobClient:
        from kernel.common.job_client import JobClient

        client = JobClient(program.job_name, lambda: self.execute(program), lambda: None)
        self.clients.append(client)
        return client

    def wait_for_jobs(self) -> None:
        """The jobs run in this process: wait for every one submitted; the failure of one whose
        result the script did not ask for fails the script (as ``execute()`` would have)."""
        for client in self.clients:
            error = client.join()
            if error is not None:
                raise error

"""The life cycle of a run.

It has one place, :func:`execute_job`: the kernel compiles the program through
the graph hooks, asks the execution backend to prepare the job, creates and starts the run
(its event log), records the compilation, hands the compiled job to the backend, then
finishes the run and builds its outcome. A backend only executes (see
:mod:`kernel.contracts.backend`).
"""

from __future__ import annotations

import hashlib
import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from kernel.runtime.checkpointing.recovery import StateRecoveryOptions, check_restore
from kernel.clock import NS_PER_S
from kernel.lifecycle.collector import collecting_for_batches
from kernel.lifecycle.compiler import CompiledJob, compile_program
from kernel.events import JobEdgeDefined, JobGraphCompiled, JobVertexDefined, StreamGraphCompiled
from kernel.lifecycle.program import Program
from kernel.lifecycle.pythonenv.dependencies import PythonDependencyInfo
from kernel.lifecycle.pythonenv.environment import PythonEnvironment, importable
from kernel.lifecycle.pythonenv.options import PythonOptions
from kernel.lifecycle.summary import RunOutcome

if TYPE_CHECKING:
    from kernel.contracts.backend import ExecutionBackend
    from kernel.runtime.graph.execution import ExecutionGraph
    from kernel.lifecycle.run import Run
    from kernel.lifecycle.session import Session


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


def plan_run(session: Session, compiled: CompiledJob) -> tuple[Run, ExecutionGraph]:
    """Record the compilation of a job without running it (``rill plan``): a run ``planned``."""
    run = session.new_run(compiled.program.job_name, metadata=program_metadata(compiled.program))
    run.start()
    record_compilation(run, compiled)
    graph = run.build_execution_graph(compiled.job_graph)
    run.finish("planned")
    return run, graph


def create_backend(session: Session) -> ExecutionBackend:
    """The execution backend of the session's ``backend`` plugin."""
    session.plugin_manager.require("create_execution_backend", "backend")
    return session.plugin_manager.hook.create_execution_backend(config=session.config)


def execute_job(session: Session, compiled: CompiledJob) -> RunOutcome:
    """Execute a compiled job in a new run of ``session`` on its execution backend (after
    checking that the snapshot it starts from, if any, fits it, and preparing the job's Python
    environment: :func:`prepared`)."""
    check_restore(session.config.section(StateRecoveryOptions), compiled.job_graph)
    dependencies = PythonDependencyInfo.of(session.config.section(PythonOptions))
    backend = create_backend(session)
    backend.prepare(compiled)
    with prepared(dependencies) as environment:
        return _run(session, compiled, backend, environment)


@contextmanager
def prepared(info: PythonDependencyInfo) -> Iterator[PythonEnvironment]:
    """The job's Python environment for one run, prepared in a temporary directory that goes
    when the run ends (:mod:`kernel.lifecycle.pythonenv.manager`; nothing is loaded for a job
    without dependencies)."""
    if info.empty:
        yield PythonEnvironment()
        return
    import shutil
    import tempfile

    from kernel.lifecycle.pythonenv.manager import prepare

    directory = tempfile.mkdtemp(prefix="rill-python-")
    try:
        yield prepare(info, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _run(session: Session, compiled: CompiledJob, backend: ExecutionBackend, environment: PythonEnvironment) -> RunOutcome:
    run = session.new_run(compiled.program.job_name,
                          metadata={**program_metadata(compiled.program), "backend": backend.name})
    run.python_environment = environment
    run.start()
    wall_start, clock_start = time.perf_counter(), run.clock.now()
    record_compilation(run, compiled)
    try:
        with collecting_for_batches(), importable(environment):
            result = backend.execute(compiled, run)
    except BaseException as exc:
        run.finish("failed", f"{type(exc).__name__}: {exc}")
        raise
    run.finish(result.status.lower(), result.failure.splitlines()[0] if result.failure else "")
    job_graph = compiled.job_graph
    return RunOutcome(
        run_id=run.id, job_id=job_graph.job_id, job_name=job_graph.job_name, status=result.status,
        failure=result.failure, wall_seconds=time.perf_counter() - wall_start,
        clock_seconds=(run.clock.now() - clock_start) / NS_PER_S, clock_mode=run.clock.mode,
        vertices=result.vertices, notes=result.notes, details=result.details,
    )


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

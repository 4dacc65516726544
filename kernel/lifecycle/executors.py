"""Who executes the programs of ``env.execute()``.

``env.execute()`` hands its :class:`~kernel.lifecycle.program.Program` to the current
:class:`PipelineExecutor` — like Flink's context environments: under ``rill run`` the CLI's
:class:`SessionExecutor` runs it, under ``rill plan`` a :class:`CapturingExecutor` keeps it,
and in a plain ``python job.py`` the default executor is a :class:`SessionExecutor` of a
session opened from the working directory's config.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from kernel.errors import JobFailed
from kernel.faults import check_operators
from kernel.lifecycle.compiler import CompiledJob, compile_program
from kernel.lifecycle.connector_checks import check_connectors
from kernel.lifecycle.execution import execute_job
from kernel.lifecycle.program import Program
from kernel.lifecycle.session import Session
from kernel.lifecycle.summary import RunOutcome, render
from kernel.lifecycle.tracebacks import debugging, user_frames

if TYPE_CHECKING:
    from kernel.common.job_client import JobClient
    from kernel.common.job_execution_result import JobExecutionResult
    from kernel.lifecycle.async_execution import AsyncExecution
    from kernel.options import CoreOptions, RillOptions


class ProgramCaptured(Exception):
    """Raised by a capturing executor to stop the job script at ``execute()``."""

    def __init__(self, program: Program) -> None:
        super().__init__(program.job_name)
        self.program = program


class PipelineExecutor:
    """Runs programs for ``env.execute()``; subclasses decide how."""

    def __init__(self, session: Session) -> None:
        self.session = session
        #: the job script whose ``execute()`` calls this executor handles, if any, and its arguments
        self.source_file: str | None = None
        self.arguments: list[str] = []

    def defaults(self) -> CoreOptions:
        from kernel.options import CoreOptions

        return self.session.config.section(CoreOptions)

    def session_for(self, program: Program) -> Session:
        """The session with the job's own config keys applied (they win, as in Flink)."""
        sets = program.sets()
        return self.session.with_sets(sets) if sets else self.session

    def execute(self, program: Program) -> JobExecutionResult:
        raise NotImplementedError

    def execute_async(self, program: Program) -> JobClient:
        raise NotImplementedError

    def wait_for_jobs(self) -> None:
        """Called when the job script ended: wait for the jobs it submitted with
        ``execute_async`` that still run."""


class CapturingExecutor(PipelineExecutor):
    """Stops the script at the first ``execute()`` and keeps its program (``rill plan``)."""

    def execute(self, program: Program) -> JobExecutionResult:
        raise ProgramCaptured(program)

    def execute_async(self, program: Program) -> JobClient:
        raise ProgramCaptured(program)


_context = threading.local()


def _stack() -> list[PipelineExecutor]:
    if not hasattr(_context, "stack"):
        _context.stack = []
    return _context.stack


@contextmanager
def use_executor(executor: PipelineExecutor) -> Iterator[PipelineExecutor]:
    """Make ``executor`` run every ``env.execute()`` inside the block (this thread)."""
    _stack().append(executor)
    try:
        yield executor
    finally:
        _stack().pop()


def current_executor() -> PipelineExecutor:
    """The innermost executor in use, or the default one (a session from the working directory)."""
    stack = _stack()
    if stack:
        return stack[-1]
    executor = SessionExecutor(Session.open())
    stack.append(executor)
    return executor


class SessionExecutor(PipelineExecutor):
    """Runs each program on the session's execution backend, prints the run's summary on
    stderr (unless ``quiet``) and the path of the savepoint a job stopped with, and raises
    ``JobFailed`` when the job failed or could not stop with the savepoint asked for."""

    def __init__(self, session: Session, quiet: bool = False, progress: Any = None) -> None:
        super().__init__(session)
        self.quiet = quiet
        #: a live status line (``kernel.cli.progress.LiveProgress``), cleared before the summary
        self.progress = progress
        self.outcomes: list[RunOutcome] = []
        #: the jobs submitted with ``execute_async``
        self.executions: list[AsyncExecution] = []

    def compile(self, program: Program) -> tuple[Session, CompiledJob]:
        from kernel.options import RillOptions

        if program.source_file is None:
            program.source_file = self.source_file
            program.arguments = list(self.arguments)
        session = self.session_for(program)
        compiled = compile_program(session, program)
        check_operators(session.config.faults, [node.name for node in compiled.stream_graph.nodes.values()])
        check_connectors(list(compiled.stream_graph.nodes.values()), session.config.section(RillOptions).clock)
        return session, compiled

    def run_compiled(self, session: Session, compiled: CompiledJob) -> RunOutcome:
        outcome = execute_job(session, compiled)
        self.outcomes.append(outcome)
        if self.progress is not None:
            self.progress.stop()
        sys.stdout.flush()
        if not self.quiet:
            print(render(outcome), file=sys.stderr)
            if outcome.failure:
                failure = outcome.failure if debugging() else user_frames(outcome.failure)
                print(failure.rstrip(), file=sys.stderr)
        if "savepoint" in outcome.details:  # the job stopped with a savepoint: where it is, as Flink's CLI says
            print(f"Savepoint completed. Path: {outcome.details['savepoint']}", file=sys.stderr)
        if "savepoint_failure" in outcome.details:
            raise JobFailed(f"stop-with-savepoint failed: {outcome.details['savepoint_failure']}")
        return outcome

    def run(self, program: Program) -> RunOutcome:
        return self.run_compiled(*self.compile(program))

    def execute(self, program: Program) -> JobExecutionResult:
        from kernel.common.job_execution_result import JobExecutionResult

        outcome = self.run(program)
        if outcome.status == "FAILED":
            first = outcome.failure.splitlines()[0] if outcome.failure else "unknown cause"
            raise JobFailed(f"job {outcome.job_name!r} failed (run {outcome.run_id}): {first}")
        return JobExecutionResult(outcome.job_id, int(outcome.clock_seconds * 1000), run_id=outcome.run_id)

    def execute_async(self, program: Program) -> JobClient:
        """Compile the job, start it on a thread of its own and return its JobClient at once."""
        from kernel.lifecycle.async_execution import AsyncExecution
        from kernel.common.job_client import JobClient

        session, compiled = self.compile(program)
        execution = AsyncExecution(compiled.job_graph.job_id, program.job_name, program.cancellation,
                                   program.savepoints, lambda: self.run_compiled(session, compiled))
        self.executions.append(execution)
        return JobClient(execution.start())

    def wait_for_jobs(self) -> None:
        """The jobs run in this process: wait for every one submitted with ``execute_async``;
        the failure of one whose result the script did not ask for fails the script (as
        ``execute()`` would have)."""
        for execution in self.executions:
            execution.join()
            if not execution.retrieved and execution.result.exception() is not None:
                raise execution.result.exception()

"""The execution-backend contract: execute a compiled job in a run.

The kernel owns a run's life cycle (:func:`kernel.lifecycle.execution.execute_job`): it asks the
backend to ``prepare`` the job, creates and starts the run (its event log), records the
compilation, hands the compiled job to ``execute``, then finishes the run and builds the
:class:`~kernel.lifecycle.summary.RunOutcome` from the :class:`JobResult`. A backend implements only
the execution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kernel.lifecycle.compiler import CompiledJob
    from kernel.lifecycle.run import Run
    from kernel.lifecycle.summary import VertexSummary


@dataclass
class JobResult:
    """How an executed job ended (Flink's JobResult), as the backend reports it."""

    status: str  # FINISHED, FAILED, CANCELED
    failure: str = ""  # the cause, with the operator and traceback, when FAILED
    vertices: list[VertexSummary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines for the run's summary
    details: dict[str, Any] = field(default_factory=dict)


class ExecutionBackend(Protocol):
    """Executes compiled jobs (``local``, ``spark``, ...)."""

    #: the backend's name, recorded in the run's metadata
    name: str

    def prepare(self, compiled: CompiledJob) -> None:
        """Check that this backend can run the job and acquire what running it needs (e.g.
        a SparkSession) before the run starts; raises :class:`kernel.errors.UsageError` for
        a job it cannot run. Nothing is recorded yet."""

    def execute(self, compiled: CompiledJob, run: Run) -> JobResult:
        """Execute the job in ``run`` (started, compilation recorded) until it ends, emitting
        the execution's events on ``run.bus``; release what ``prepare`` acquired."""

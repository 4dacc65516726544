"""Jobs submitted with ``execute_async``: each runs on a thread of its own while the script
goes on, and is watched through a :class:`~kernel.common.job_client.JobClient`.

``rill run`` waits for the jobs its script submitted, as for ``execute()``. A job still running
when a plain Python process ends is cancelled, as with PyFlink's local cluster (and waited for,
so its run is recorded to the end).
"""

from __future__ import annotations

import threading
from typing import Callable

import kernel.eventbus  # noqa: F401 -- its exit callback (the runs' last events) must run after this module's

from kernel.common.completable_future import CompletableFuture
from kernel.common.job_execution_result import JobExecutionResult
from kernel.common.job_status import JobStatus
from kernel.errors import JobCancelled, JobFailed, JobNotRunning
from kernel.lifecycle.program import JobCancellation, SavepointRequest, SavepointRequests
from kernel.lifecycle.summary import RunOutcome

CANCELLED_AT_EXIT = "the job's script ended"


class AsyncExecution:
    """One submitted job: its status, its result and its termination as futures."""

    def __init__(self, job_id: str, job_name: str, cancellation: JobCancellation, savepoints: SavepointRequests,
                 run: Callable[[], RunOutcome]) -> None:
        self.job_id = job_id
        self.job_name = job_name
        self.cancellation = cancellation
        self.savepoints = savepoints
        self.status = JobStatus.RUNNING
        #: the script asked for the result (so it handles a failure itself)
        self.retrieved = False
        #: the JobExecutionResult, or the job's failure
        self.result = CompletableFuture()
        #: the final JobStatus
        self.terminated = CompletableFuture()
        self._thread = threading.Thread(target=self._run, args=(run,), name=f"rill-job-{job_id}", daemon=True)

    def start(self) -> AsyncExecution:
        _running.add(self)
        self._thread.start()
        return self

    def _run(self, run: Callable[[], RunOutcome]) -> None:
        try:
            outcome = run()
        except BaseException as exc:  # the job could not run: the result future carries why
            self._end(JobStatus.FAILED)
            self.result.complete_exceptionally(exc)
            return
        status = JobStatus[outcome.status]
        self._end(status)
        if status is JobStatus.FAILED:
            first = outcome.failure.splitlines()[0] if outcome.failure else "unknown cause"
            self.result.complete_exceptionally(
                JobFailed(f"job {outcome.job_name!r} failed (run {outcome.run_id}): {first}"))
        elif status is JobStatus.CANCELED and self.cancellation.requested:
            self.result.complete_exceptionally(JobCancelled("Job was cancelled."))
        else:
            self.result.complete(JobExecutionResult(
                outcome.job_id, int(outcome.clock_seconds * 1000), run_id=outcome.run_id))

    def _end(self, status: JobStatus) -> None:
        self.status = status
        _running.discard(self)
        self.terminated.complete(status)

    def cancel(self, reason: str) -> CompletableFuture:
        """Request cancelling; the future completes (None) once the job is CANCELED, and fails
        if the job ended otherwise (as Flink's Dispatcher answers)."""
        if not self.status.is_globally_terminal_state():
            self.status = JobStatus.CANCELLING
            self.cancellation.request(reason)
        acknowledged = CompletableFuture()

        def answer(_: object) -> None:
            final = self.terminated.result()
            if final is JobStatus.CANCELED:
                acknowledged.complete(None)
            else:
                acknowledged.complete_exceptionally(
                    JobCancelled(f"Flink job ({self.job_id}) was not canceled, but instead {final.name}."))

        if self.terminated.done():
            answer(None)
        else:
            threading.Thread(target=answer, args=(None,), name=f"rill-cancel-{self.job_id}", daemon=True).start()
        return acknowledged

    def savepoint(self, directory: str | None, terminate: bool, drain: bool) -> CompletableFuture:
        """Request a savepoint (``terminate``: stop the job with it); the future completes with
        its path, or fails (also once the job ended without taking it)."""
        result = CompletableFuture()
        if self.status.is_globally_terminal_state():
            result.complete_exceptionally(JobNotRunning(f"Job {self.job_id} is not running: it is {self.status.name}"))
        else:
            self.savepoints.request(SavepointRequest(directory, terminate, drain, result))
        return result

    def join(self) -> None:
        self._thread.join()


_running: set[AsyncExecution] = set()


def end_running_jobs() -> None:
    """Cancel the jobs still running and wait for them (a script's end)."""
    for execution in list(_running):
        execution.cancel(CANCELLED_AT_EXIT)
    for execution in list(_running):
        execution.join()


# with the event bus's, before the interpreter's atexit callbacks (see kernel.eventbus); callbacks
# registered later run first, so the jobs end before their runs' last events are stored
threading._register_atexit(end_running_jobs)  # type: ignore[attr-defined]

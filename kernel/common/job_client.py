"""``JobClient`` (``pyflink.common.JobClient``): a handle on a job started with ``execute_async``.

As PyFlink's, every request but ``get_job_id`` answers with a
:class:`~kernel.common.completable_future.CompletableFuture`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.pyflink import unsupported
from kernel.common.completable_future import CompletableFuture
from kernel.common.job_id import JobID

if TYPE_CHECKING:
    from kernel.lifecycle.async_execution import AsyncExecution

__all__ = ["JobClient"]


@unsupported.members("pyflink.common.job_client:JobClient")
class JobClient:
    def __init__(self, execution: AsyncExecution) -> None:
        self._execution = execution

    def get_job_id(self) -> JobID:
        return JobID(self._execution.job_id)

    def get_job_status(self) -> CompletableFuture:
        """A future of the job's current JobStatus."""
        return CompletableFuture.completed(self._execution.status)

    def cancel(self) -> CompletableFuture:
        """Cancel the job; the future completes with None once it is CANCELED."""
        return self._execution.cancel("cancelled by JobClient.cancel()")

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool,
                            savepoint_directory: str | None = None) -> CompletableFuture:
        """Stop the job with a savepoint (Flink's stop-with-savepoint): its sources stop, the
        savepoint is taken under ``savepoint_directory`` (default
        ``execution.checkpointing.savepoint-dir``), then the job finishes. With
        ``advance_to_end_of_event_time`` the sources first emit the final watermark and the
        operators finish (every event-time timer fires). The future's value is the savepoint's
        path."""
        return self._execution.savepoint(savepoint_directory, terminate=True, drain=advance_to_end_of_event_time)

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture:
        """Take a savepoint of the running job under ``savepoint_directory`` (default
        ``execution.checkpointing.savepoint-dir``); the future's value is its path."""
        return self._execution.savepoint(savepoint_directory, terminate=False, drain=False)

    def get_accumulators(self) -> CompletableFuture:
        """A future of the job's accumulators (a dict; rill jobs have none)."""
        return CompletableFuture.completed({})

    def get_job_execution_result(self) -> CompletableFuture:
        """A future of the JobExecutionResult; it fails with the job's failure (or cancellation).
        A script that asks for it handles the failure itself (``rill run`` does not fail for it)."""
        self._execution.retrieved = True
        return self._execution.result

    def wait(self) -> None:
        """Wait until the job has ended and its run is recorded (rill's own)."""
        self._execution.join()

"""``JobClient``: a handle on a job submitted with ``execute_async``."""

from __future__ import annotations

import threading
from typing import Callable

from kernel.common.job_execution_result import JobExecutionResult
from kernel.common.job_status import JobStatus


class JobClient:
    """Runs the job on a thread of its own (its own event loop) and lets the caller wait."""

    def __init__(self, job_id: str, run: Callable[[], JobExecutionResult], cancel: Callable[[], None]) -> None:
        self._job_id = job_id
        self._cancel = cancel
        self._status = JobStatus.RUNNING
        self._result: JobExecutionResult | None = None
        self._error: BaseException | None = None
        self._retrieved = False
        self._thread = threading.Thread(target=self._execute, args=(run,), name=f"rill-job-{job_id}", daemon=True)
        self._thread.start()

    def _execute(self, run: Callable[[], JobExecutionResult]) -> None:
        try:
            self._result = run()
            self._status = JobStatus.FINISHED
        except BaseException as exc:  # surfaced by get_job_execution_result()
            self._error = exc
            self._status = JobStatus.CANCELED if self._status is JobStatus.CANCELLING else JobStatus.FAILED

    def get_job_id(self) -> str:
        return self._job_id

    def get_job_status(self) -> JobStatus:
        return self._status

    def cancel(self) -> None:
        if not self._status.is_globally_terminal_state():
            self._status = JobStatus.CANCELLING
            self._cancel()

    def get_job_execution_result(self) -> JobExecutionResult:
        """Wait for the job to end; raises its failure."""
        self._thread.join()
        self._retrieved = True
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def join(self) -> BaseException | None:
        """Wait for the job to end (the process running it must not end first); its failure,
        unless the program already got it from :meth:`get_job_execution_result`."""
        self._thread.join()
        return None if self._retrieved else self._error

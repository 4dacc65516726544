"""``JobExecutionResult``: what ``env.execute()`` returns (and a JobClient's result future)."""

from __future__ import annotations

from typing import Any

from kernel.common.job_id import JobID

__all__ = ["JobExecutionResult"]


class JobExecutionResult:
    """The job's id, its net runtime and its accumulators. rill has no user accumulators
    (neither has PyFlink's Python API), so they are empty unless a backend reports some."""

    def __init__(self, job_id: str, net_runtime_ms: int, accumulators: dict[str, Any] | None = None,
                 run_id: str | None = None) -> None:
        self._job_id = JobID(job_id)
        self._net_runtime = net_runtime_ms
        self._accumulators = dict(accumulators or {})
        #: the run's id in rill's event log
        self.run_id = run_id

    def get_job_id(self) -> JobID:
        return self._job_id

    def get_net_runtime(self) -> int:
        """Milliseconds of clock time the job ran."""
        return self._net_runtime

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """The accumulator's value, None if the job produced no accumulator of that name."""
        return self.get_all_accumulator_results().get(accumulator_name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self._accumulators)

    def __str__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime} ms)"

    __repr__ = __str__

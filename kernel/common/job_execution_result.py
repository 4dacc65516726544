"""``JobExecutionResult``: what ``env.execute()`` returns."""

from __future__ import annotations

from typing import Any


class JobExecutionResult:
    def __init__(self, job_id: str, net_runtime_ms: int, accumulators: dict[str, Any] | None = None,
                 run_id: str | None = None) -> None:
        self._job_id = job_id
        self._net_runtime = net_runtime_ms
        self._accumulators = dict(accumulators or {})
        #: the run's id in rill's event log
        self.run_id = run_id

    def get_job_id(self) -> str:
        return self._job_id

    def get_net_runtime(self) -> int:
        """Milliseconds of clock time the job ran."""
        return self._net_runtime

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        return self._accumulators.get(accumulator_name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self._accumulators)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        return self

    def __repr__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime} ms)"

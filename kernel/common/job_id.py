"""``JobID`` (``pyflink.common.JobID``): the 32-hex-digit id of a submitted job."""

from __future__ import annotations

from typing import Any

__all__ = ["JobID"]


class JobID:
    def __init__(self, job_id: str) -> None:
        self._job_id = job_id

    def __str__(self) -> str:
        return self._job_id

    def __repr__(self) -> str:
        return f"JobID({self._job_id})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, JobID) and other._job_id == self._job_id

    def __hash__(self) -> int:
        return hash(self._job_id)

"""Flink's ``CheckpointFailureManager``: consecutive checkpoint failures against
``execution.checkpointing.tolerable-failed-checkpoints``.

A failure counts once per checkpoint, only for the reasons that count
(:attr:`CheckpointFailureReason.counted`), and only when the checkpoint is newer than the last
one that succeeded; a success resets the count. More failures in a row than tolerated fail
the job over: a failure a task reported fails that task (its region restarts), any other is a
global failure — with "Exceeded checkpoint tolerable failure threshold." as the cause.
"""

from __future__ import annotations

from kernel.runtime.checkpointing.failures import CheckpointFailureReason

UNKNOWN_CHECKPOINT_ID = -1


class CheckpointFailureManager:
    def __init__(self, tolerable: int) -> None:
        self.tolerable = tolerable
        self.consecutive = 0
        self._counted: set[int] = set()
        self._last_succeeded = -(1 << 63)

    def failed(self, checkpoint_id: int, reason: CheckpointFailureReason) -> tuple[int, bool]:
        """A checkpoint failed (``checkpoint_id`` -1: before it had one): the consecutive
        failures now, and whether they exceed the tolerable number (the count then restarts
        and the job must fail over)."""
        if checkpoint_id != UNKNOWN_CHECKPOINT_ID and checkpoint_id <= self._last_succeeded:
            return self.consecutive, False
        if reason.counted and (checkpoint_id == UNKNOWN_CHECKPOINT_ID or checkpoint_id not in self._counted):
            self._counted.add(checkpoint_id)
            self.consecutive += 1
        consecutive = self.consecutive
        if consecutive > self.tolerable:
            self._clear()
            return consecutive, True
        return consecutive, False

    def succeeded(self, checkpoint_id: int) -> None:
        if checkpoint_id > self._last_succeeded:
            self._last_succeeded = checkpoint_id
            self._clear()

    def _clear(self) -> None:
        self.consecutive = 0
        self._counted.clear()

"""Completed checkpoints of a job (Flink's ``StandaloneCompletedCheckpointStore`` with the
retention of ``CheckpointProperties``).

The store keeps the latest ``execution.checkpointing.num-retained`` checkpoints; adding one
subsumes (deletes) the oldest beyond that. When the job ends, the retention decides what
stays: ``NO_EXTERNALIZED_CHECKPOINTS`` deletes them whatever the outcome;
``DELETE_ON_CANCELLATION`` keeps them only when the job FAILED; ``RETAIN_ON_CANCELLATION``
keeps them when it FAILED or was CANCELED. A FINISHED job never keeps any. A snapshot the job
started from (a savepoint or retained checkpoint) is in the store until subsumed, so a failover
before the first checkpoint goes back to it, but it is never deleted: it is the user's
(Flink's NO_CLAIM restore mode).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel.runtime.checkpointing.format import CheckpointMetadata
from plugins.checkpointing.storage import CheckpointStorage

#: job status -> retention modes that keep the checkpoints then
RETAINED_ON = {
    "FAILED": ("DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"),
    "CANCELED": ("RETAIN_ON_CANCELLATION",),
}


@dataclass
class CompletedCheckpoint:
    metadata: CheckpointMetadata
    #: its directory ("" when it lives in the JobMaster's memory)
    external_pointer: str
    #: taken by this job (False: the snapshot it started from, never deleted)
    owned: bool = True

    @property
    def checkpoint_id(self) -> int:
        return self.metadata.checkpoint_id


class CompletedCheckpointStore:
    def __init__(self, storage: CheckpointStorage, num_retained: int, retention: str) -> None:
        self.storage = storage
        self.num_retained = num_retained
        self.retention = retention
        self.checkpoints: list[CompletedCheckpoint] = []

    def latest(self) -> CompletedCheckpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None

    def add(self, checkpoint: CompletedCheckpoint) -> list[int]:
        """Add a completed checkpoint; the ids of those it subsumed and deleted."""
        self.checkpoints.append(checkpoint)
        subsumed = []
        while len(self.checkpoints) > self.num_retained:
            oldest = self.checkpoints.pop(0)
            if oldest.owned:
                self.storage.discard(oldest.checkpoint_id)
                subsumed.append(oldest.checkpoint_id)
        return subsumed

    def shutdown(self, status: str) -> list[str]:
        """The job ended with ``status``: the external pointers of the checkpoints kept."""
        if self.retention in RETAINED_ON.get(status, ()):
            return [c.external_pointer for c in self.checkpoints if c.external_pointer and c.owned]
        for checkpoint in self.checkpoints:
            if checkpoint.owned:
                self.storage.discard(checkpoint.checkpoint_id)
        self.checkpoints.clear()
        self.storage.release_job_directory()
        return []

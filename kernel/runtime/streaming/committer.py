"""Making sink output final: per checkpoint (two-phase commit) or when the job finishes.

**With checkpoints** a two-phase-commit sink (FileSink) prepares its committables before each
checkpoint's barrier and keeps them in a :class:`CommittableCollector` (Flink's
``CommittableCollector`` of the ``CommitterOperator``), which is part of the checkpoint; when
checkpoint n completes, everything prepared for checkpoints up to n is committed, in
checkpoint order. A restored collector commits everything it restored at once (those
checkpoints completed; committing must be idempotent), so a completion notice that was lost
with a failure is made up for.

**Without checkpoints** a restarted region runs again from the beginning, so whatever the
sinks of a failed (or restarted) attempt wrote would be duplicated. When a bounded job may
restart, sinks therefore stage their output per execution attempt (records to print, values
for a sink function, pending part files) and hand a commit action to the
:class:`SinkCommitter` when their input ends — the pre-commit of Flink's two-phase-commit
sinks. When the job finishes, the committer runs the commit actions of each subtask's final
attempt (in job-vertex and subtask order) and discards the rest; if the job fails or is
cancelled, everything is discarded. Sinks stage from their tasks' threads (realtime), the
JobMaster commits or discards from its own: the committer's table is kept under a lock.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

AttemptKey = tuple[str, int, int]  # (job vertex id, subtask, attempt)


class CommittableCollector:
    """The committables of one sink subtask by checkpoint id; ``commit(committable)`` makes
    one final."""

    def __init__(self, commit: Callable[[Any], None]) -> None:
        self._commit = commit
        self._by_checkpoint: dict[int, list[Any]] = {}

    def add(self, checkpoint_id: int, committables: list[Any]) -> None:
        """Committables prepared before checkpoint ``checkpoint_id``'s barrier."""
        if committables:
            self._by_checkpoint.setdefault(checkpoint_id, []).extend(committables)

    def commit_up_to(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: commit what was prepared up to it."""
        for done in sorted(c for c in self._by_checkpoint if c <= checkpoint_id):
            for committable in self._by_checkpoint.pop(done):
                self._commit(committable)

    def snapshot(self) -> list[tuple[int, Any]]:
        """(checkpoint id, committable) pairs not committed yet, in checkpoint order."""
        return [(checkpoint_id, committable) for checkpoint_id in sorted(self._by_checkpoint)
                for committable in self._by_checkpoint[checkpoint_id]]

    def restore(self, restored: list[tuple[int, Any]]) -> None:
        """Commit what a restored snapshot held, in checkpoint order."""
        for _, committable in sorted(restored, key=lambda pair: pair[0]):
            self._commit(committable)


class SinkCommitter:
    def __init__(self) -> None:
        self._staged: dict[AttemptKey, list[tuple[Callable[[], None], Callable[[], None] | None]]] = {}
        self._lock = threading.Lock()

    def stage(self, key: AttemptKey, commit: Callable[[], None], discard: Callable[[], None] | None = None) -> None:
        """A sink of attempt ``key`` finished its input: ``commit`` makes its output final."""
        with self._lock:
            self._staged.setdefault(key, []).append((commit, discard))

    def commit(self, final_attempts: list[AttemptKey], discard_rest: bool = True) -> None:
        """Commit the staged output of these attempts, in this order; discard every other
        (unless ``discard_rest`` is False: more final attempts are still to come)."""
        for key in final_attempts:
            with self._lock:
                actions = self._staged.pop(key, ())
            for commit, _ in actions:
                commit()
        if discard_rest:
            self.discard_all()

    def discard_all(self) -> None:
        with self._lock:
            staged, self._staged = self._staged, {}
        for actions in staged.values():
            for _, discard in actions:
                if discard is not None:
                    discard()

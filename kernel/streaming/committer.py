"""Sink output made final only when the job finishes: no duplicates from failed attempts.

Without checkpoints a restarted region runs again from the beginning, so whatever the sinks
of a failed (or restarted) attempt wrote would be duplicated. When a bounded job may restart,
sinks therefore stage their output per execution attempt (records to print, values for a
sink function, in-progress part files) and hand a commit action to the committer when their
input ends — the pre-commit of Flink's two-phase-commit sinks. When the job finishes, the
committer runs the commit actions of each subtask's final attempt (in job-vertex and subtask
order) and discards the rest; if the job fails or is cancelled, everything is discarded.
"""

from __future__ import annotations

from typing import Callable

AttemptKey = tuple[str, int, int]  # (job vertex id, subtask, attempt)


class SinkCommitter:
    def __init__(self) -> None:
        self._staged: dict[AttemptKey, list[tuple[Callable[[], None], Callable[[], None] | None]]] = {}

    def stage(self, key: AttemptKey, commit: Callable[[], None], discard: Callable[[], None] | None = None) -> None:
        """A sink of attempt ``key`` finished its input: ``commit`` makes its output final."""
        self._staged.setdefault(key, []).append((commit, discard))

    def commit(self, final_attempts: list[AttemptKey]) -> None:
        """Commit the staged output of these attempts, in this order; discard every other."""
        for key in final_attempts:
            for commit, _ in self._staged.pop(key, ()):
                commit()
        self.discard_all()

    def discard_all(self) -> None:
        staged, self._staged = self._staged, {}
        for actions in staged.values():
            for _, discard in actions:
                if discard is not None:
                    discard()

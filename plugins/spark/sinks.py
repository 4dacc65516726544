"""Sinks on Spark: which run in the executors, which on the driver, and FileSink's commit.

In the Spark tasks (each subtask's attempt): user sinks (``add_sink``: opened, invoked and
closed in the task, the subtask index being the Spark partition's) and FileSink's writer,
which writes its partition's part files and leaves them pending. What comes to the driver,
in the accumulator tagged with the subtask's computation (``to_driver``):

* ``print()`` and ``execute_and_collect``'s records, as blocks (:class:`DriverSink`): the
  driver runs those sinks after the Spark jobs, printing with Flink's ``k> `` prefixes;
* each FileSink writer's committables at the end of its input (:class:`FileSinkPartWriter`):
  the pending parts, ``(hidden path, final path)``.

The driver commits the parts of the computation of each subtask it counts (the first that
finished, whose metrics it keeps) once every Spark job succeeded, as Flink's committer commits
at the end of a batch job; the parts of any other computation (a speculative or recomputed
one) are discarded, and so is everything when the job fails. A Spark task attempt that fails
sends nothing (Spark drops a failed task's accumulator updates) and discards its own parts,
so only committed files — one copy of each subtask's output — become visible.
"""

from __future__ import annotations

from typing import Any

from kernel.runtime.streaming import file_sink
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.runtime.streaming.operators.sinks import FileSinkWriterOperator

#: sinks whose records go to the driver, which runs them
DRIVER_SINK_KINDS = ("print", "collect")


class DriverSink(StreamOperator):
    """Stands in for a print or collect sink in the Spark task: its records go to the driver,
    where the real sink runs (prints to the driver's stdout, collects into the caller's list)."""

    def user_functions(self) -> list[Any]:
        return []

    def process_batch(self, values, timestamps):
        runner = self.runner
        runner.to_driver("s", self.node.id, runner.pickle(values, timestamps, self.name))

    def process_watermark(self, timestamp: int) -> None:
        pass


class FileSinkPartWriter(FileSinkWriterOperator):
    """FileSink's writer in a Spark task: part files roll as on the local runtime; at the end
    of input every part closes and the pending parts go to the driver, which commits them
    (Flink's committer). An attempt that fails discards its parts: those not handed over when
    it is closed, the handed-over ones when it is aborted."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.handed_over: list[file_sink.Committable] = []

    def open(self) -> None:
        super().open()
        self.staging = True

    def end_input(self) -> None:
        self.handed_over = self.writer.prepare_commit(flush=True)
        self.runner.to_driver("c", self.node.id, self.handed_over)
        self._staged_parts = True

    def abort(self) -> None:
        """The attempt failed after the end of its input: the driver never gets what it
        handed over (Spark drops a failed task's accumulator updates), so remove it."""
        for part in self.handed_over:
            file_sink.discard(part)
        self.handed_over = []


class SentToDriver:
    """What the Spark tasks sent, sorted: ``metrics`` per (vertex, subtask), the blocks of
    records of driver sinks per (sink node, subtask), and FileSink committables. A subtask
    Spark computed more than once (a speculative copy, a recomputed stage) counts once: the
    first computation that finished."""

    def __init__(self, items: list[tuple]) -> None:
        self.metrics: dict[tuple[str, int], dict] = {}
        chosen: dict[tuple[str, int], str] = {}
        for kind, vertex_id, subtask, token, *payload in items:
            if kind == "m" and (vertex_id, subtask) not in chosen:
                chosen[(vertex_id, subtask)] = token
                self.metrics[(vertex_id, subtask)] = {"vertex_id": vertex_id, "subtask": subtask, **payload[0]}
        self.blocks: dict[tuple[int, int], list[bytes]] = {}
        self.committables: list[file_sink.Committable] = []
        self.discarded: list[file_sink.Committable] = []  # of computations not counted
        for kind, vertex_id, subtask, token, *payload in items:
            counted = chosen.get((vertex_id, subtask)) == token
            if kind == "s" and counted:
                self.blocks.setdefault((payload[0], subtask), []).append(payload[1])
            elif kind == "c":
                (self.committables if counted else self.discarded).extend(payload[1])

    def commit(self) -> None:
        """The job succeeded: make the counted parts visible, remove the others."""
        for part in self.committables:
            file_sink.commit(part)
        self.committables = []
        self.discard()

    def discard(self) -> None:
        """Remove every pending part not committed (all of them when the job failed)."""
        for part in self.committables + self.discarded:
            file_sink.discard(part)
        self.committables, self.discarded = [], []

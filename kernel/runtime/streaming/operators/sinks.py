"""Sinks: print, ``add_sink`` functions, and the file sink writer."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from kernel.datastream import functions as fn
from kernel.runtime.streaming import file_sink
from kernel.runtime.streaming.committer import CommittableCollector
from kernel.runtime.streaming.file_sink import FileWriter
from kernel.runtime.streaming.operators.base import StreamOperator

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState


def print_prefix(identifier: str | None, subtask: int, parallelism: int) -> str:
    """Flink's PrintSinkOutputWriter: ``id:N> `` / ``N> `` (N 1-based) when parallel, else ``id> ``."""
    prefix = identifier or ""
    if parallelism > 1:
        prefix += (":" if prefix else "") + str(subtask + 1)
    return prefix + "> " if prefix else ""


class SinkOperator(StreamOperator):
    """Base of sinks: latency markers end here and are measured. With a sink committer
    (:mod:`kernel.runtime.streaming.committer`) a sink stages what it writes and hands it over when
    its input ends; it becomes final when the job finishes."""

    def open(self) -> None:
        super().open()
        self.staging = self.runtime.sink_committer is not None

    def process_latency_marker(self, marker: Any) -> None:
        self.runtime.record_latency(marker)

    def stage(self, commit: Any, discard: Any = None) -> None:
        self.runtime.sink_committer.stage(self.runtime.info.attempt_key, commit, discard)


class PrintSinkOperator(SinkOperator):
    """``print()``: not transactional — with checkpoints at least once, as in Flink (after a
    restore the records since the restored checkpoint are printed again)."""

    def open(self) -> None:
        super().open()
        info = self.runtime.info
        self._prefix = print_prefix(self.spec.params.get("identifier"), info.subtask, info.parallelism)
        self._format = self.spec.params["type"].format_print
        write, name = self.runtime.write_stdout, self.name
        self._write = lambda text, lines: write(text, name, lines)
        self._staged: list[tuple[str, int]] = []

    def user_functions(self) -> list[Any]:
        return []

    def process_batch(self, values, timestamps):
        prefix, fmt = self._prefix, self._format
        text = "".join(f"{prefix}{fmt(v)}\n" for v in values)
        if self.staging:
            self._staged.append((text, len(values)))
        else:
            self._write(text, len(values))

    def end_input(self) -> None:
        if self.staging:
            text, lines, write = "".join(t for t, _ in self._staged), sum(n for _, n in self._staged), self._write
            self.stage(lambda: write(text, lines))


class CollectSinkOperator(SinkOperator):
    """``execute_and_collect``: appends every record to the caller's list (in-process)."""

    def user_functions(self) -> list[Any]:
        return []

    def open(self) -> None:
        super().open()
        self._staged: list[Any] = []

    def process_batch(self, values, timestamps):
        (self._staged if self.staging else self.spec.params["target"]).extend(values)

    def end_input(self) -> None:
        if self.staging:
            staged, target = self._staged, self.spec.params["target"]
            self.stage(lambda: target.extend(staged))


class SinkContext:
    """What ``SinkFunction.invoke`` gets as its context."""

    __slots__ = ("_operator", "_timestamp")

    def __init__(self, operator: StreamOperator) -> None:
        self._operator = operator
        self._timestamp: int | None = None

    def timestamp(self) -> int | None:
        return self._timestamp

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()


class SinkFunctionOperator(SinkOperator):
    """``add_sink``: a SinkFunction (``invoke(value, context)``) or a callable per record."""

    def open(self) -> None:
        super().open()
        function = self.spec.function
        self._context = SinkContext(self)
        #: a SinkFunction reads the record's timestamp from its context; a callable gets the record only
        self._with_context = isinstance(function, fn.SinkFunction)
        if self._with_context:
            invoke, context = function.invoke, self._context
            self._invoke = lambda value: invoke(value, context)
        else:
            self._invoke = function
        self._staged: list[tuple[list, list | None]] = []

    def process_batch(self, values, timestamps):
        if self.staging:
            self._staged.append((values, timestamps))
        else:
            self._deliver(values, timestamps)

    def _deliver(self, values, timestamps):
        invoke, context = self._invoke, self._context
        if timestamps is None or not self._with_context:
            deque(map(invoke, values), 0)  # a call per record, the loop in C
        else:
            for value, ts in zip(values, timestamps):
                context._timestamp = ts
                invoke(value)

    def end_input(self) -> None:
        if self.staging:
            staged = self._staged

            def commit() -> None:
                for values, timestamps in staged:
                    self._deliver(values, timestamps)

            self.stage(commit)


class SinkWriterOperator(SinkOperator):
    """The writer of a ``sink_to`` sink (Flink's SinkWriterOperator, its CommitterOperator
    chained): the sink is not a user function, and its committables not yet committed are
    kept under Flink's committer state name."""

    COMMITTER_STATE = "streaming_committer_raw_states"

    def user_functions(self) -> list[Any]:
        return []


class FileSinkWriterOperator(SinkWriterOperator):
    """FileSink's writer and committer (Flink's SinkWriterOperator and CommitterOperator,
    chained): records become lines in part files (:mod:`kernel.runtime.streaming.file_sink`).

    In a task that takes checkpoints the sink commits in two phases: before checkpoint n's
    barrier the pending parts (and, as the rolling policy says, the in-progress ones) are
    prepared as checkpoint n's committables; the open parts and the committables not yet
    committed are the operator's state; when checkpoint n completes, the committables up to n
    are committed (renamed to their visible names). The end of input closes every part; the
    final checkpoint commits them. Restored, the sink commits the restored committables and
    continues the in-progress parts from their checkpointed length.

    Without checkpoints, parts are committed when the input ends — staged per attempt until
    the job finishes when the job may restart (:class:`~kernel.runtime.streaming.committer.SinkCommitter`).
    """

    WRITER_STATE = "writer_raw_states"

    def open(self) -> None:
        super().open()
        sink = self.spec.function
        runtime = self.runtime
        fmt, encoding = self.spec.params["type"].java_string, sink.encoder.charset_name
        info = runtime.info
        rng = runtime.rng_factory(f"file-sink/{info.vertex_id}/{info.subtask}/{info.attempt}")
        self.writer = FileWriter(sink, lambda values: "".join(fmt(v) + "\n" for v in values).encode(encoding),
                                 lambda value: (fmt(value) + "\n").encode(encoding), rng)
        self.committables = CommittableCollector(file_sink.commit)
        self._staged_parts = False
        policy = sink.rolling_policy
        if policy.rollover_interval is not None or policy.inactivity_interval is not None:
            self._check_interval = sink.bucket_check_interval
            self._schedule_bucket_check()

    def _schedule_bucket_check(self) -> None:
        self.runtime.schedule(self.runtime.now_ms() + self._check_interval, self._bucket_check)

    def _bucket_check(self) -> None:
        self.writer.on_processing_time(self.runtime.now_ms())
        self._schedule_bucket_check()

    def process_batch(self, values, timestamps):
        self.writer.write(values, self.runtime.now_ms())

    # -- checkpoints: the two phases ----------------------------------------------------------

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.committables.add(checkpoint_id, self.writer.prepare_commit(flush=False))

    def snapshot_state(self, snapshot: OperatorSnapshot) -> None:
        snapshot.add_list(self.WRITER_STATE, self.writer.snapshot_state())
        snapshot.add_list(self.COMMITTER_STATE, self.committables.snapshot())

    def initialize_state(self, restored: RestoredOperatorState) -> None:
        self.committables.restore(restored.lists.get(self.COMMITTER_STATE, []))
        self.writer.initialize_state(restored.lists.get(self.WRITER_STATE, []))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.committables.commit_up_to(checkpoint_id)

    # -- the end ------------------------------------------------------------------------------

    def end_input(self) -> None:
        if self.runtime.checkpointing:
            self.writer.close_parts()
            return
        parts = self.writer.prepare_commit(flush=True)
        if not self.staging:
            for part in parts:
                file_sink.commit(part)
            return

        def commit() -> None:
            for part in parts:
                file_sink.commit(part)

        def discard() -> None:
            for part in parts:
                file_sink.discard(part)

        self.stage(commit, discard)
        self._staged_parts = True

    def close(self) -> None:
        if self.staging and not self._staged_parts:  # an attempt that did not finish: abort its parts
            for part in self.writer.abandon():
                file_sink.discard(part)
        else:
            self.writer.close()

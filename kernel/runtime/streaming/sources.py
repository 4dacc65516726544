"""The source operator: it drives its reader (:mod:`kernel.runtime.streaming.readers`), assigns
timestamps, emits watermarks, takes part in watermark alignment, keeps the reader's splits in
a checkpoint, and stops for a stop-with-savepoint.
"""

from __future__ import annotations

from enum import Enum
from itertools import repeat
from typing import Any

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.runtime.streaming.alignment import ActivityClock, SourceAlignment
from kernel.runtime.streaming.handover import HandOver
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import FileSource
from kernel.datastream.connectors.number_seq import NumberSequenceSource
from kernel.runtime.streaming.readers import (
    ENUMERATOR_STATE, READER_STATE, CollectionReader, DataGeneratorReader, FileReader, NumberSequenceReader, SourceReader,
)
from kernel.runtime.streaming.split_watermarks import SplitWatermarks


def create_reader(spec: Any) -> SourceReader:
    """The reader of a source operator's spec, chosen by its source's class."""
    if spec.kind == "collection":
        return CollectionReader(spec.params["elements"])
    source = spec.function
    if isinstance(source, NumberSequenceSource):
        return NumberSequenceReader(source)
    if isinstance(source, DataGeneratorSource):
        return DataGeneratorReader(source)
    if isinstance(source, FileSource):
        return FileReader(source)
    from kernel.datastream.connectors.kafka import KafkaSource  # imported only when the source is none of the above

    if isinstance(source, KafkaSource):
        from kernel.runtime.streaming.kafka.reader import KafkaSourceReader

        return KafkaSourceReader(source)
    raise TypeError(f"{source!r} is not a source rill can read (FileSource, NumberSequenceSource, DataGeneratorSource, "
                    "KafkaSource)")


class InputStatus(Enum):
    MORE_AVAILABLE = "MORE_AVAILABLE"
    NOTHING_AVAILABLE = "NOTHING_AVAILABLE"
    END_OF_INPUT = "END_OF_INPUT"


class WatermarkOutput:
    """Where a watermark generator emits: strictly increasing watermarks (a larger one makes
    an idle output active first), idle/active status."""

    def __init__(self, operator: StreamOperator) -> None:
        self.operator = operator
        self.last = MIN_LONG
        self.idle = False

    def emit_watermark(self, timestamp: int) -> None:
        if timestamp > self.last:
            self.last = timestamp
            if self.idle:
                self.mark_active()
            self.operator.output.emit_watermark(timestamp)

    def mark_idle(self) -> None:
        if not self.idle:
            self.idle = True
            self.operator.output.emit_watermark_status(True)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self.operator.output.emit_watermark_status(False)


class SourceOperator(StreamOperator):
    """Reads batches from its reader; with a watermark strategy it assigns timestamps and
    emits watermarks periodically (``pipeline.auto-watermark-interval``); the end of a
    bounded input emits the final ``MAX`` watermark. In a watermark alignment group it emits
    only what keeps its watermark within the group's allowed maximum
    (:mod:`kernel.runtime.streaming.alignment`) and reports its watermark every update interval.

    A reader that hands out its records by split (``runs``: which split each run of a batch
    came from, ``timestamps``: the records' own timestamps, as Kafka's) gets watermarks per
    split (:mod:`kernel.runtime.streaming.split_watermarks`); a timestamp assigner then sees the
    record's own timestamp as its previous one."""

    def user_functions(self) -> list[Any]:
        return []

    def open(self) -> None:
        self.reader = create_reader(self.spec)
        self.reader.open(self.runtime)
        strategy = self.spec.params.get("watermark_strategy")
        self.watermarks = WatermarkOutput(self)
        self.activity = ActivityClock(self.runtime.now_ms)
        self.generator = None
        self.split_watermarks: SplitWatermarks | None = None
        self.assign = None
        self._checkpoint_id = 0
        self.alignment: SourceAlignment | None = None
        self._held: tuple[list, list, list | None] | None = None  # records waiting for alignment
        #: per split, the records waiting for alignment while the split is paused (split-level alignment)
        self._split_held: dict[Any, tuple[list, list]] = {}
        if strategy is not None:
            assigner = strategy.timestamp_assigner
            if assigner is not None:
                self.assign = assigner.extract_timestamp if isinstance(assigner, TimestampAssigner) else assigner
            if strategy.kind != "none" and not self.runtime.batch:  # BATCH: only the final watermark
                self.generator = self.runtime.create_watermark_generator(strategy, self.activity.now_ms)
                if getattr(self.reader, "runs", None) is not None:
                    self.split_watermarks = SplitWatermarks(
                        lambda: self.runtime.create_watermark_generator(strategy, self.activity.now_ms),
                        self.generator, self.watermarks)
                self._schedule_periodic()
                if self.assign is not None or self.split_watermarks is not None:  # records with timestamps
                    self._join_alignment(strategy)
        self.ended = False
        self.stopped = False  # by a stop-with-savepoint
        if self.alignment is None:  # an aligned source admits its records a batch at a time
            self.handover = self.reader.handover = HandOver(self._emit)
        register = getattr(self.reader, "register_metrics", None)
        if register is not None:
            group = self.runtime_context.get_metrics_group()
            if group is not None:
                register(group)

    def _schedule_periodic(self) -> None:
        interval = self.runtime.auto_watermark_interval
        if interval > 0:
            self.runtime.schedule(self.runtime.now_ms() + interval, self._periodic_emit)

    def _periodic_emit(self) -> None:
        if self.ended:
            return
        if self.split_watermarks is not None:
            self.split_watermarks.on_periodic_emit()
        else:
            self.generator.on_periodic_emit(self.watermarks)
        if self.alignment is not None and not self._reported and self.watermarks.last != MIN_LONG:
            self._report()  # the first watermark is reported at once, so the group is bounded early
        self._schedule_periodic()

    # -- watermark alignment ------------------------------------------------------------------

    def _join_alignment(self, strategy: Any) -> None:
        membership = self.runtime.join_watermark_alignment(strategy, self._on_announce)
        if membership is None:
            return
        self.alignment = SourceAlignment(membership, strategy.out_of_orderness_ms)
        self._reported = False
        self._schedule_report()

    def _schedule_report(self) -> None:
        interval = self.alignment.membership.update_interval_ms
        self.runtime.schedule(self.runtime.now_ms() + interval, self._report_watermark)

    def _report_watermark(self) -> None:
        """Flink's ``emitLatestWatermark``: nothing before the first watermark, MAX while idle."""
        if self.ended:
            return
        if self.watermarks.last != MIN_LONG:
            self._report()
        self._schedule_report()

    def _report(self) -> None:
        self._reported = True
        self.alignment.membership.report(MAX_LONG if self.watermarks.idle else self.watermarks.last)

    def _on_announce(self, max_allowed: int, group_min: int) -> None:
        if self.alignment is not None and not self.ended:
            self.alignment.announce(max_allowed, group_min)
            if self._split_held:
                self._release_splits()

    def _release_splits(self) -> None:
        """An announcement: what the paused splits hold may go as far as it allows; a split
        whose records all went reads again."""
        for split in list(self._split_held):
            values, timestamps = self._split_held[split]
            admitted = self.alignment.admit(timestamps)
            if admitted:
                self._emit(values[:admitted], timestamps[:admitted], assigned=True, runs=[(split, admitted)])
            if admitted == len(values):
                del self._split_held[split]
                self.reader.resume_splits([split])
            else:
                self._split_held[split] = (values[admitted:], timestamps[admitted:])

    def max_event_time(self) -> int | None:
        """The largest event time this source has seen (None before any)."""
        if self.split_watermarks is not None:
            return self.split_watermarks.max_event_time()
        return None if self.generator is None else self.generator.max_event_time()

    def when_available(self, callback: Any) -> bool:
        """Call ``callback`` when reading can go on; False if only the reader knows when."""
        if self.alignment is not None and self.alignment.waiting:
            self.alignment.when_announced(callback)
            return True
        return False

    # -- reading ------------------------------------------------------------------------------

    def emit_next(self, limit: int) -> InputStatus:
        if self.stopped:
            return InputStatus.END_OF_INPUT
        reader = self.reader
        timestamps = None
        runs = None
        if self._held is not None:
            (values, timestamps, runs), self._held = self._held, None
            polled = values
        else:
            values = polled = reader.poll(limit) if not reader.finished else []
            handover = self.handover
            if handover is not None and handover.values is not None:
                values = handover.rest()  # the reader's user code was slow: what is not handed on yet
            own = getattr(reader, "timestamps", None)
            if own is not None:
                runs = reader.runs
                if self.split_watermarks is not None:
                    self._sync_splits()
                timestamps = own if self.assign is None else list(map(self.assign, values, own))
            elif values and self.assign is not None:
                timestamps = list(map(self.assign, values, repeat(MIN_LONG, len(values))))
        if values and self.alignment is not None:
            values, timestamps, runs = self._align(values, timestamps, runs)
            if not values:
                return InputStatus.NOTHING_AVAILABLE
        if values:
            self._emit(values, timestamps, assigned=True, runs=runs)
        if polled:
            reader.batch_emitted()
        if reader.finished and self._held is None:
            self.end()
            return InputStatus.END_OF_INPUT
        return InputStatus.MORE_AVAILABLE if polled else InputStatus.NOTHING_AVAILABLE

    def _sync_splits(self) -> None:
        """The splits the reader added and released since the last batch get and leave their
        watermark outputs."""
        reader, split_watermarks = self.reader, self.split_watermarks
        for split in reader.added:
            split_watermarks.add(split)
        for split in reader.released:
            split_watermarks.release(split)
        reader.added.clear()
        reader.released.clear()

    def _emit(self, values: list, timestamps: list | None, assigned: bool = False,
              runs: list | None = None) -> None:
        """Emit records of the reader (their timestamps assigned here unless ``assigned``;
        ``runs``: their splits, for per-split watermarks)."""
        if not assigned and self.assign is not None:
            timestamps = list(map(self.assign, values, repeat(MIN_LONG, len(values))))
        if self.split_watermarks is not None:
            if runs:
                self.split_watermarks.on_events(values, timestamps, runs)
        elif self.generator is not None:
            self.generator.on_events(values, timestamps, self.watermarks)
        if self.watermarks.idle:
            self.watermarks.mark_active()
        self.output.collect(values, timestamps)

    def _align(self, values: list, timestamps: list, runs: list | None) -> tuple[list, list, list | None]:
        """The records that may go now; the rest is held until an announcement allows them."""
        if self.split_watermarks is not None and runs is not None:
            return self._align_splits(values, timestamps, runs)
        alignment = self.alignment
        admitted = alignment.admit(timestamps)
        if admitted < len(values):
            head, tail = _cut_runs(runs, admitted)
            self._held = (values[admitted:], timestamps[admitted:], tail)
            values, timestamps, runs = values[:admitted], timestamps[:admitted], head
        waiting = admitted == 0
        if waiting != alignment.waiting:
            alignment.set_waiting(waiting, self.watermarks.last)
            (self.activity.pause if waiting else self.activity.resume)("alignment")
        return values, timestamps, runs

    def _align_splits(self, values: list, timestamps: list, runs: list) -> tuple[list, list, list]:
        """Split-level alignment (Flink's ``pauseOrResumeSplits``): a split whose next record
        would take the watermark past the allowed maximum is paused with what it holds; the
        other splits read on (so a split that holds the minimum is never stuck behind one that
        runs ahead), and the source never waits as a whole."""
        out_values: list = []
        out_timestamps: list = []
        out_runs: list = []
        start = 0
        held = self._split_held
        for split, count in runs:
            end = start + count
            waiting = held.get(split)
            if waiting is not None:  # fetched before the pause took effect: behind what it holds
                waiting[0].extend(values[start:end])
                waiting[1].extend(timestamps[start:end])
            else:
                admitted = self.alignment.admit(timestamps[start:end])
                if admitted:
                    out_values.extend(values[start:start + admitted])
                    out_timestamps.extend(timestamps[start:start + admitted])
                    out_runs.append((split, admitted))
                if admitted < count:
                    held[split] = (values[start + admitted:end], timestamps[start + admitted:end])
                    self.reader.pause_splits([split])
            start = end
        return out_values, out_timestamps, out_runs

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, snapshot: Any) -> None:
        """The reader's splits as the list state ``SourceReaderState``, elements (split, held):
        the records held back for alignment go with the split being read (so they stay ahead of
        the rest of it wherever it goes), or alone when it is done; what discovery knows as the
        union list state ``SourceEnumeratorState``."""
        elements: list[tuple[Any, Any]] = [(split, None) for split in self.reader.snapshot_splits()]
        held = self._held[:2] if self._held is not None else None
        for values, timestamps in self._split_held.values():
            held = (values, timestamps) if held is None else (held[0] + values, held[1] + timestamps)
        if held is not None:
            elements[:1] = [(elements[0][0] if elements else None, held)]
        snapshot.add_list(READER_STATE, elements)
        enumerator = self.reader.snapshot_enumerator()
        if enumerator is not None:
            snapshot.add_list(ENUMERATOR_STATE, [enumerator], mode="union")
        taken = getattr(self.reader, "checkpoint_taken", None)
        if taken is not None:
            taken(self._checkpoint_id)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._checkpoint_id = checkpoint_id

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        completed = getattr(self.reader, "checkpoint_completed", None)
        if completed is not None:
            completed(checkpoint_id)

    def initialize_state(self, restored: Any) -> None:
        if ENUMERATOR_STATE in restored.lists:
            self.reader.restore_enumerator(restored.lists[ENUMERATOR_STATE])
        if READER_STATE not in restored.lists:
            return
        elements = restored.lists[READER_STATE]
        self.reader.restore_splits([split for split, _ in elements if split is not None])
        held = [held for _, held in elements if held is not None]
        if held:
            self._held = ([value for values, _ in held for value in values],
                          [timestamp for _, timestamps in held for timestamp in timestamps], None)

    def stop(self, drain: bool) -> None:
        """Stop-with-savepoint: read nothing more; ``drain``: end as a bounded input does (the
        final watermark), else just stop emitting watermarks."""
        self.stopped = True
        if drain:
            self.end()
        else:
            self.ended = True
            self._leave_alignment()

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self.watermarks.mark_active()
            self.watermarks.emit_watermark(MAX_LONG)
            self._leave_alignment()

    def _leave_alignment(self) -> None:
        if self.alignment is not None:
            self.alignment.membership.leave()
            self.alignment = None

    def close(self) -> None:
        self._leave_alignment()
        self.reader.close()


def _cut_runs(runs: list | None, count: int) -> tuple[list | None, list | None]:
    """Runs of splits ``(split, records)`` cut after ``count`` records: (head, tail)."""
    if runs is None:
        return None, None
    head, tail, seen = [], [], 0
    for split, n in runs:
        if seen >= count:
            tail.append((split, n))
        elif seen + n <= count:
            head.append((split, n))
        else:
            head.append((split, count - seen))
            tail.append((split, seen + n - count))
        seen += n
    return head, tail

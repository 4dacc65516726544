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
from kernel.runtime.streaming.readers import ENUMERATOR_STATE, READER_STATE, create_reader


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
    (:mod:`kernel.runtime.streaming.alignment`) and reports its watermark every update interval."""

    def user_functions(self) -> list[Any]:
        return []

    def open(self) -> None:
        self.reader = create_reader(self.spec)
        self.reader.open(self.runtime)
        strategy = self.spec.params.get("watermark_strategy")
        self.watermarks = WatermarkOutput(self)
        self.activity = ActivityClock(self.runtime.now_ms)
        self.generator = None
        self.assign = None
        self.alignment: SourceAlignment | None = None
        self._held: tuple[list, list] | None = None  # records waiting for alignment
        if strategy is not None:
            assigner = strategy.timestamp_assigner
            if assigner is not None:
                self.assign = assigner.extract_timestamp if isinstance(assigner, TimestampAssigner) else assigner
            if strategy.kind != "none" and not self.runtime.batch:  # BATCH: only the final watermark
                self.generator = self.runtime.create_watermark_generator(strategy, self.activity.now_ms)
                self._schedule_periodic()
                if self.assign is not None:
                    self._join_alignment(strategy)
        self.ended = False
        self.stopped = False  # by a stop-with-savepoint
        if self.alignment is None:  # an aligned source admits its records a batch at a time
            self.handover = self.reader.handover = HandOver(self._emit)

    def _schedule_periodic(self) -> None:
        interval = self.runtime.auto_watermark_interval
        if interval > 0:
            self.runtime.schedule(self.runtime.now_ms() + interval, self._periodic_emit)

    def _periodic_emit(self) -> None:
        if self.ended:
            return
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

    def max_event_time(self) -> int | None:
        """The largest event time this source has seen (None before any)."""
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
        if self._held is not None:
            (values, timestamps), self._held = self._held, None
            polled = values
        else:
            values = polled = reader.poll(limit) if not reader.finished else []
            handover = self.handover
            if handover is not None and handover.values is not None:
                values = handover.rest()  # the reader's user code was slow: what is not handed on yet
            if values and self.assign is not None:
                timestamps = list(map(self.assign, values, repeat(MIN_LONG, len(values))))
        if values and self.alignment is not None:
            values, timestamps = self._align(values, timestamps)
            if not values:
                return InputStatus.NOTHING_AVAILABLE
        if values:
            self._emit(values, timestamps, assigned=True)
        if polled:
            reader.batch_emitted()
        if reader.finished and self._held is None:
            self.end()
            return InputStatus.END_OF_INPUT
        return InputStatus.MORE_AVAILABLE if polled else InputStatus.NOTHING_AVAILABLE

    def _emit(self, values: list, timestamps: list | None, assigned: bool = False) -> None:
        """Emit records of the reader (their timestamps assigned here unless ``assigned``)."""
        if not assigned and self.assign is not None:
            timestamps = list(map(self.assign, values, repeat(MIN_LONG, len(values))))
        if self.generator is not None:
            self.generator.on_events(values, timestamps, self.watermarks)
        if self.watermarks.idle:
            self.watermarks.mark_active()
        self.output.collect(values, timestamps)

    def _align(self, values: list, timestamps: list) -> tuple[list, list]:
        """The records that may go now; the rest is held until an announcement allows them."""
        alignment = self.alignment
        admitted = alignment.admit(timestamps)
        if admitted < len(values):
            self._held = (values[admitted:], timestamps[admitted:])
            values, timestamps = values[:admitted], timestamps[:admitted]
        waiting = admitted == 0
        if waiting != alignment.waiting:
            alignment.set_waiting(waiting, self.watermarks.last)
            (self.activity.pause if waiting else self.activity.resume)("alignment")
        return values, timestamps

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, snapshot: Any) -> None:
        """The reader's splits as the list state ``SourceReaderState``, elements (split, held):
        the records held back for alignment go with the split being read (so they stay ahead of
        the rest of it wherever it goes), or alone when it is done; what discovery knows as the
        union list state ``SourceEnumeratorState``."""
        elements: list[tuple[Any, Any]] = [(split, None) for split in self.reader.snapshot_splits()]
        if self._held is not None:
            elements[:1] = [(elements[0][0] if elements else None, self._held)]
        snapshot.add_list(READER_STATE, elements)
        enumerator = self.reader.snapshot_enumerator()
        if enumerator is not None:
            snapshot.add_list(ENUMERATOR_STATE, [enumerator], mode="union")

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
                          [timestamp for _, timestamps in held for timestamp in timestamps])

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

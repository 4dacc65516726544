"""``assign_timestamps_and_watermarks``: timestamps from the assigner, watermarks from the
strategy's generator; upstream watermarks are ignored except the final MAX one."""

from __future__ import annotations

from itertools import repeat
from typing import Any

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.jvm.coders import field_conversion
from kernel.common.typeinfo import Types
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.runtime.streaming.sources import WatermarkOutput


#: PyFlink hands each extracted timestamp to Java as a LONG: 1000.7 becomes 1000
_LONG = field_conversion(Types.LONG())
_INT = frozenset([int])


class TimestampsAndWatermarksOperator(StreamOperator):
    def user_functions(self) -> list[Any]:
        return []

    def open(self) -> None:
        strategy = self.spec.params["strategy"]
        assigner = strategy.timestamp_assigner
        self.assign = None
        if assigner is not None:
            self.assign = assigner.extract_timestamp if isinstance(assigner, TimestampAssigner) else assigner
        self.watermarks = WatermarkOutput(self)
        self.generator = None
        if strategy.kind != "none" and not self.runtime.batch:  # BATCH: only the final watermark
            self.generator = self.runtime.create_watermark_generator(strategy, self.runtime.now_ms)
            self._schedule()

    def _schedule(self) -> None:
        interval = self.runtime.auto_watermark_interval
        if interval > 0:
            self.runtime.schedule(self.runtime.now_ms() + interval, self._periodic)

    def _periodic(self) -> None:
        if self.current_watermark == MAX_LONG:
            return
        self.generator.on_periodic_emit(self.watermarks)
        self._schedule()

    def process_batch(self, values, timestamps):
        assign = self.assign
        if assign is not None:
            if timestamps is None:
                timestamps = list(map(assign, values, repeat(MIN_LONG, len(values))))
            else:
                timestamps = [assign(v, MIN_LONG if t is None else t) for v, t in zip(values, timestamps)]
            if timestamps and not (set(map(type, timestamps)) <= _INT and MIN_LONG <= min(timestamps)
                                   and max(timestamps) <= MAX_LONG):
                timestamps = list(map(_LONG, timestamps))
        if self.generator is not None:
            self.generator.on_events(values, timestamps, self.watermarks)
        if self.watermarks.idle:
            self.watermarks.mark_active()
        self.output.collect(values, timestamps)

    def max_event_time(self) -> int | None:
        """The largest event time assigned so far (None before any)."""
        return None if self.generator is None else self.generator.max_event_time()

    def process_watermark(self, timestamp: int) -> None:
        if timestamp == MAX_LONG:
            self.current_watermark = MAX_LONG
            self.watermarks.emit_watermark(MAX_LONG)

    def process_watermark_status(self, idle: bool) -> None:
        """The generator decides this stream's status; upstream idleness is not forwarded."""

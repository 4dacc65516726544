"""Watermarks per split, as Flink's ``ProgressiveTimestampsAndWatermarks`` makes them for a
source whose reader hands out the records of its splits (Kafka partitions).

Each split gets a split-local output with its own watermark generator (and idleness timer on
the source's activity clock); the subtask's watermark is the minimum over the splits that are
not idle, emitted when it advances — after each batch of records and after each periodic emit
(every split's generator first, then one merge, as Flink's multiplexer does). The subtask is
idle when every split is idle (seed 002's rules inside the source); a split that finished is
released and leaves the minimum. A subtask without splits follows its main generator, which
sees no records: it goes idle only through ``with_idleness``, as in Flink.
"""

from __future__ import annotations

from typing import Any, Callable

from kernel.clock import MIN_LONG


class SplitOutput:
    """A split's watermark output: its latest watermark and whether it is idle."""

    __slots__ = ("watermark", "idle")

    def __init__(self) -> None:
        self.watermark = MIN_LONG
        self.idle = False

    def emit_watermark(self, timestamp: int) -> None:
        if timestamp > self.watermark:
            self.watermark = timestamp
        self.idle = False

    def mark_idle(self) -> None:
        self.idle = True

    def mark_active(self) -> None:
        self.idle = False


class SplitWatermarks:
    """The per-split generators and outputs of one source subtask, merged into ``output``
    (the source's :class:`~kernel.runtime.streaming.sources.WatermarkOutput`)."""

    def __init__(self, create_generator: Callable[[], Any], main: Any, output: Any) -> None:
        self._create = create_generator
        self.main = main
        self.output = output
        self.splits: dict[Any, tuple[Any, SplitOutput]] = {}

    def add(self, split: Any) -> None:
        if split not in self.splits:
            self.splits[split] = (self._create(), SplitOutput())

    def release(self, split: Any) -> None:
        self.splits.pop(split, None)

    def on_events(self, values: list, timestamps: list, runs: list[tuple[Any, int]]) -> None:
        """A batch: ``runs`` says which split each consecutive run of records came from."""
        start = 0
        splits = self.splits
        for split, count in runs:
            end = start + count
            found = splits.get(split)
            if found is not None:
                generator, out = found
                out.idle = False
                generator.on_events(values[start:end], timestamps[start:end], out)
            start = end
        self._merge()

    def on_periodic_emit(self) -> None:
        if not self.splits:
            self.main.on_periodic_emit(self.output)
            return
        for generator, out in self.splits.values():
            generator.on_periodic_emit(out)
        self._merge()

    def max_event_time(self) -> int | None:
        times = [t for generator, _ in self.splits.values() if (t := generator.max_event_time()) is not None]
        return max(times) if times else None

    def _merge(self) -> None:
        active = [out.watermark for _, out in self.splits.values() if not out.idle]
        if not self.splits:
            return
        if not active:
            self.output.mark_idle()
            return
        lowest = min(active)
        if self.output.idle:
            self.output.mark_active()
        if lowest != MIN_LONG:
            self.output.emit_watermark(lowest)

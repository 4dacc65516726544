"""Source readers and the source operator that drives them.

A reader hands out records in batches: ``poll(limit)`` returns what is available now (maybe
nothing), ``available_at()`` says when more will be (rate limits, file discovery), and
``finished`` turns true when a bounded input is exhausted. Each subtask reads its own split.
A checkpoint holds each reader's position (``snapshot_position``, as Flink's source operators
keep their splits in operator list state); a restored reader continues from it
(``restore_position``, after ``open``).
"""

from __future__ import annotations

import os
from enum import Enum
from itertools import repeat
from typing import Any

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream.connectors.datagen import DataGeneratorSource, GeneratorFunction
from kernel.datastream.connectors.file_system import FileSource
from kernel.datastream.connectors.number_seq import NumberSequenceSource
from kernel.streaming.alignment import ActivityClock, SourceAlignment
from kernel.streaming.operators.base import StreamOperator
from kernel.streaming.runtime import OperatorRuntime


#: the operator list state holding a source reader's position
READER_STATE = "SourceReaderState"


class InputStatus(Enum):
    MORE_AVAILABLE = "MORE_AVAILABLE"
    NOTHING_AVAILABLE = "NOTHING_AVAILABLE"
    END_OF_INPUT = "END_OF_INPUT"


class SourceReader:
    finished = False

    def open(self, runtime: OperatorRuntime) -> None:
        pass

    def poll(self, limit: int) -> list:
        raise NotImplementedError

    def available_at(self) -> int | None:
        """Processing time (ms) when more records will be available; None when now or never."""
        return None

    def close(self) -> None:
        pass

    def snapshot_position(self) -> Any:
        """Where the reader is (picklable)."""
        raise NotImplementedError

    def restore_position(self, position: Any) -> None:
        """Continue from a position ``snapshot_position`` gave."""
        raise NotImplementedError


def split_range(start: int, end: int, parts: int, index: int) -> tuple[int, int]:
    """The ``index``-th of ``parts`` contiguous sub-ranges of ``[start, end]`` (inclusive)."""
    total = end - start + 1
    lo = start + total * index // parts
    hi = start + total * (index + 1) // parts - 1
    return lo, hi


class CollectionReader(SourceReader):
    def __init__(self, elements: list) -> None:
        self.elements = elements
        self.position = 0

    def poll(self, limit: int) -> list:
        batch = self.elements[self.position:self.position + limit]
        self.position += len(batch)
        self.finished = self.position >= len(self.elements)
        return batch

    def snapshot_position(self) -> Any:
        return self.position

    def restore_position(self, position: Any) -> None:
        self.position = position
        self.finished = self.position >= len(self.elements)


class NumberSequenceReader(SourceReader):
    def __init__(self, source: NumberSequenceSource) -> None:
        self.source = source

    def open(self, runtime: OperatorRuntime) -> None:
        info = runtime.info
        self.next, self.last = split_range(self.source.start, self.source.end, info.parallelism, info.subtask)
        self.finished = self.next > self.last

    def poll(self, limit: int) -> list:
        stop = min(self.last + 1, self.next + limit)
        batch = list(range(self.next, stop))
        self.next = stop
        self.finished = self.next > self.last
        return batch

    def snapshot_position(self) -> Any:
        return self.next, self.last

    def restore_position(self, position: Any) -> None:
        self.next, self.last = position
        self.finished = self.next > self.last


class _GeneratorContext:
    def __init__(self, runtime: OperatorRuntime) -> None:
        info = runtime.info
        self.subtask = info.subtask
        self.parallelism = info.parallelism
        self.random = runtime.rng_factory(f"datagen/{info.task_name}/{info.subtask}")


class DataGeneratorReader(SourceReader):
    """Indexes split in contiguous ranges per subtask; ``records_per_second`` (of the whole
    source) is shared evenly, in processing time."""

    def __init__(self, source: DataGeneratorSource) -> None:
        self.source = source

    def open(self, runtime: OperatorRuntime) -> None:
        info = runtime.info
        self.runtime = runtime
        count = self.source.count
        last = (count - 1) if count is not None else (1 << 62) - 1
        self.next, self.last = split_range(0, last, info.parallelism, info.subtask) if last >= 0 else (0, -1)
        self.first = self.next
        self.finished = self.next > self.last
        function = self.source.generator_function
        self.context = _GeneratorContext(runtime)
        if isinstance(function, GeneratorFunction):
            function.open(self.context)
            self.generate = function.map
        else:
            self.generate = function
        rate = self.source.records_per_second
        self.interval_ms = None if rate is None else info.parallelism * 1000.0 / rate
        self.started = runtime.now_ms()

    def _due(self) -> int:
        if self.interval_ms is None:
            return self.last + 1 - self.next
        elapsed = self.runtime.now_ms() - self.started
        allowed = self.first + int(elapsed / self.interval_ms) + 1
        return max(0, min(allowed, self.last + 1) - self.next)

    def poll(self, limit: int) -> list:
        n = min(limit, self._due())
        generate = self.generate
        batch = list(map(generate, range(self.next, self.next + n)))
        self.next += n
        self.finished = self.next > self.last
        return batch

    def available_at(self) -> int | None:
        if self.interval_ms is None or self.finished:
            return None
        return self.started + int((self.next - self.first) * self.interval_ms + 0.999999)

    def snapshot_position(self) -> Any:
        """The next index, the last, and where the generator's seeded RNG is."""
        return self.next, self.last, self.context.random.getstate()

    def restore_position(self, position: Any) -> None:
        """Continue at the restored index; the rate counts from now (a new rate limiter)."""
        self.next, self.last, random_state = position
        self.context.random.setstate(random_state)
        self.first, self.started = self.next, self.runtime.now_ms()
        self.finished = self.next > self.last

    def close(self) -> None:
        function = self.source.generator_function
        if isinstance(function, GeneratorFunction):
            function.close()


class FileReader(SourceReader):
    """Lines of the subtask's files (every ``parallelism``-th file in name order); with
    ``monitor_continuously`` new files are picked up every discovery interval."""

    def __init__(self, source: FileSource) -> None:
        self.source = source
        self.seen: set[str] = set()
        self.pending: list[str] = []
        self.handle: Any = None
        self.current: str | None = None  # the file being read

    def open(self, runtime: OperatorRuntime) -> None:
        self.runtime = runtime
        self.subtask, self.parallelism = runtime.info.subtask, runtime.info.parallelism
        self.next_scan = runtime.now_ms()
        self._discover()

    def _list(self) -> list[str]:
        files = []
        for path in self.source.paths:
            if os.path.isdir(path):
                for root, dirs, names in os.walk(path):
                    dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                    files.extend(os.path.join(root, n) for n in names if not n.startswith((".", "_")))
            elif os.path.exists(path):
                files.append(path)
            elif not self.seen and self.source.discovery_interval_ms is None:
                raise FileNotFoundError(f"FileSource path {path!r} does not exist")
        return sorted(files)

    def _discover(self) -> None:
        new = [f for f in self._list() if f not in self.seen]
        for path in sorted(new):
            self.seen.add(path)
            if (len(self.seen) - 1) % self.parallelism == self.subtask:
                self.pending.append(path)
        interval = self.source.discovery_interval_ms
        if interval is not None:
            self.next_scan = self.runtime.now_ms() + interval
        self.finished = interval is None and not self.pending and self.handle is None

    def _open_file(self, path: str) -> None:
        self.current = path
        encoding = self.source.stream_format.charset_name
        self.handle = open(self.runtime.open_input(path), encoding=encoding, newline="")

    def poll(self, limit: int) -> list:
        interval = self.source.discovery_interval_ms
        if interval is not None and self.runtime.now_ms() >= self.next_scan:
            self._discover()
        batch: list[str] = []
        while len(batch) < limit:
            if self.handle is None:
                if not self.pending:
                    break
                self._open_file(self.pending.pop(0))
            line = self.handle.readline()
            if not line:
                self.handle.close()
                self.handle = None
                continue
            batch.append(line.rstrip("\r\n"))
        self.finished = interval is None and not self.pending and self.handle is None
        return batch

    def available_at(self) -> int | None:
        if self.source.discovery_interval_ms is None or self.pending or self.handle is not None:
            return None
        return self.next_scan

    def snapshot_position(self) -> Any:
        """Files discovered, files still to read, and the open file with its read position."""
        current = None if self.handle is None else (self.current, self.handle.tell())
        return sorted(self.seen), list(self.pending), current

    def restore_position(self, position: Any) -> None:
        seen, pending, current = position
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        self.seen, self.pending = set(seen), list(pending)
        if current is not None:
            path, offset = current
            self._open_file(path)
            self.handle.seek(offset)
        self.next_scan = self.runtime.now_ms()
        self.finished = self.source.discovery_interval_ms is None and not self.pending and self.handle is None

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def create_reader(spec: Any) -> SourceReader:
    if spec.kind == "collection":
        return CollectionReader(spec.params["elements"])
    source = spec.function
    if isinstance(source, NumberSequenceSource):
        return NumberSequenceReader(source)
    if isinstance(source, DataGeneratorSource):
        return DataGeneratorReader(source)
    if isinstance(source, FileSource):
        return FileReader(source)
    create = getattr(source, "create_reader", None)
    if create is not None:
        return create()
    raise TypeError(f"{source!r} is not a source rill can read (FileSource, NumberSequenceSource, DataGeneratorSource)")


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
    (:mod:`kernel.streaming.alignment`) and reports its watermark every update interval."""

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
        reader = self.reader
        timestamps = None
        if self._held is not None:
            (values, timestamps), self._held = self._held, None
        else:
            values = reader.poll(limit) if not reader.finished else []
            if values and self.assign is not None:
                timestamps = list(map(self.assign, values, repeat(MIN_LONG, len(values))))
        if values and self.alignment is not None:
            values, timestamps = self._align(values, timestamps)
            if not values:
                return InputStatus.NOTHING_AVAILABLE
        if values:
            if self.generator is not None:
                self.generator.on_events(values, timestamps, self.watermarks)
            if self.watermarks.idle:
                self.watermarks.mark_active()
            self.output.collect(values, timestamps)
        if reader.finished and self._held is None:
            self.end()
            return InputStatus.END_OF_INPUT
        return InputStatus.MORE_AVAILABLE if values else InputStatus.NOTHING_AVAILABLE

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
        """The reader's position and the records held back for alignment, as the list state
        ``SourceReaderState`` (Flink's source operator keeps its splits there)."""
        snapshot.add_list(READER_STATE, [(self.reader.snapshot_position(), self._held)])

    def initialize_state(self, restored: Any) -> None:
        for position, held in restored.lists.get(READER_STATE, ()):
            self.reader.restore_position(position)
            self._held = held

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

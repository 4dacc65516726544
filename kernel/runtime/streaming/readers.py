"""Source readers: the splits of every source rill has, and how a checkpoint holds them.

A reader hands out records in batches: ``poll(limit)`` returns what is available now (maybe
nothing), ``available_at()`` says when more will be (rate limits, file discovery), and
``finished`` turns true when a bounded input is exhausted. Each subtask starts with its own
split. As Flink's source operators keep their splits in operator list state, a checkpoint holds
the splits each reader still has (``snapshot_splits``: number ranges, files with the position
read to) and what its split discovery knows (``snapshot_enumerator``: the files found); a
restored reader reads the splits it is given (``restore_splits``, after ``open``) — after a
change of parallelism those are redistributed among the subtasks, so a reader may get several,
or none and finish.
"""

from __future__ import annotations

import os
from typing import Any

from kernel import clock
from kernel.datastream.connectors.datagen import DataGeneratorSource, GeneratorFunction
from kernel.datastream.connectors.file_system import FileSource
from kernel.datastream.connectors.number_seq import NumberSequenceSource
from kernel.runtime.streaming.handover import HandOver
from kernel.runtime.streaming.ratelimit import RateLimiter
from kernel.runtime.streaming.runtime import OperatorRuntime

#: the operator list state holding a source reader's splits (split-distributed)
READER_STATE = "SourceReaderState"
#: the operator list state holding what split discovery found (a union: every subtask gets all)
ENUMERATOR_STATE = "SourceEnumeratorState"


class SourceReader:
    finished = False
    #: the source's hand-over (None: the source admits records for watermark alignment): a
    #: reader whose user code makes the records opens it on the batch it fills
    #: (``handover.mapped(batch, None)``), so records made before that code blocks go on
    handover: HandOver | None = None

    def open(self, runtime: OperatorRuntime) -> None:
        pass

    def poll(self, limit: int) -> list:
        raise NotImplementedError

    def available_at(self) -> int | None:
        """Processing time (ms) when more records will be available; None when now or never."""
        return None

    def batch_emitted(self) -> None:
        """The records of the last ``poll`` went through the operator chain (where Flink's
        ``RateLimitedSourceReader`` asks its rate limiter for the next record's permit)."""

    def close(self) -> None:
        pass

    def snapshot_splits(self) -> list:
        """The splits still to read, each a picklable position, the one being read first."""
        raise NotImplementedError

    def restore_splits(self, splits: list) -> None:
        """Read these splits (from a checkpoint; maybe other subtasks') instead of its own."""
        raise NotImplementedError

    def snapshot_enumerator(self) -> Any:
        """What its split discovery knows (picklable), None when it discovers nothing."""
        return None

    def restore_enumerator(self, states: list) -> None:
        """What the discovery of every old subtask knew."""


def split_range(start: int, end: int, parts: int, index: int) -> tuple[int, int]:
    """The ``index``-th of ``parts`` contiguous sub-ranges of ``[start, end]`` (inclusive)."""
    total = end - start + 1
    lo = start + total * index // parts
    hi = start + total * (index + 1) // parts - 1
    return lo, hi


class CollectionReader(SourceReader):
    """The elements in order (a collection source is not parallel: one split, the position)."""

    def __init__(self, elements: list) -> None:
        self.elements = elements
        self.position = 0

    def poll(self, limit: int) -> list:
        batch = self.elements[self.position:self.position + limit]
        self.position += len(batch)
        self.finished = self.position >= len(self.elements)
        return batch

    def snapshot_splits(self) -> list:
        return [] if self.finished else [self.position]

    def restore_splits(self, splits: list) -> None:
        self.position = splits[0] if splits else len(self.elements)
        self.finished = self.position >= len(self.elements)


class NumberSequenceReader(SourceReader):
    """Its splits are inclusive ranges [next, last], read one after the other."""

    def __init__(self, source: NumberSequenceSource) -> None:
        self.source = source
        self.ranges: list[tuple[int, int]] = []

    def open(self, runtime: OperatorRuntime) -> None:
        info = runtime.info
        self.restore_splits([split_range(self.source.start, self.source.end, info.parallelism, info.subtask)])

    def poll(self, limit: int) -> list:
        batch: list = []
        ranges = self.ranges
        while ranges and len(batch) < limit:
            first, last = ranges[0]
            stop = min(last + 1, first + limit - len(batch))
            batch.extend(range(first, stop))
            if stop > last:
                ranges.pop(0)
            else:
                ranges[0] = (stop, last)
        self.finished = not ranges
        return batch

    def snapshot_splits(self) -> list:
        return list(self.ranges)

    def restore_splits(self, splits: list) -> None:
        self.ranges = [(first, last) for first, last in splits if first <= last]
        self.finished = not self.ranges


class _GeneratorContext:
    def __init__(self, runtime: OperatorRuntime) -> None:
        info = runtime.info
        self.subtask = info.subtask
        self.parallelism = info.parallelism
        self.random = runtime.rng_factory(f"datagen/{info.task_name}/{info.subtask}")


class DataGeneratorReader(SourceReader):
    """Indexes split in contiguous ranges per subtask; ``records_per_second`` (of the whole
    source) is shared evenly, in processing time. A split is [next, last, the state of the
    generator's seeded RNG when it is read next] (None: as the RNG is)."""

    def __init__(self, source: DataGeneratorSource) -> None:
        self.source = source
        self.ranges: list[list] = []

    def open(self, runtime: OperatorRuntime) -> None:
        info = runtime.info
        self.runtime = runtime
        count = self.source.count
        last = (count - 1) if count is not None else (1 << 62) - 1
        self.ranges = [[*split_range(0, last, info.parallelism, info.subtask), None]] if last >= 0 else []
        self.finished = not self.ranges
        function = self.source.generator_function
        self.context = _GeneratorContext(runtime)
        if isinstance(function, GeneratorFunction):
            function.open(self.context)
            self.generate = function.map
        else:
            self.generate = function
        rate = self.source.records_per_second
        self.limiter = None if rate is None else RateLimiter(rate / info.parallelism, runtime.now_ms())

    def _due(self, limit: int) -> int:
        remaining = min(limit, sum(last + 1 - first for first, last, _ in self.ranges))
        if self.limiter is None:
            return remaining
        return self.limiter.take(remaining, self.runtime.now_ms())

    def poll(self, limit: int) -> list:
        n = self._due(limit)
        generate, ranges = self.generate, self.ranges
        batch: list = []
        if self.handover is not None:
            self.handover.mapped(batch, None)
        while len(batch) < n:
            split = ranges[0]
            stop = min(split[1] + 1, split[0] + n - len(batch))
            batch.extend(map(generate, range(split[0], stop)))
            split[0] = stop
            if stop > split[1]:
                ranges.pop(0)
                if ranges and ranges[0][2] is not None:
                    self.context.random.setstate(ranges[0][2])
        self.finished = not ranges
        return batch

    def available_at(self) -> int | None:
        if self.limiter is None or self.finished:
            return None
        return self.limiter.available_at(self.runtime.now_ms())

    def batch_emitted(self) -> None:
        if self.limiter is not None and not self.finished:  # after the chain's work (simulated: counted after the step)
            self.limiter.ask(self.runtime.now_ms() + int(clock.deferred_sleep() * 1000))

    def snapshot_splits(self) -> list:
        """The splits, the one being read with where the RNG is now."""
        return [(first, last, self.context.random.getstate() if i == 0 else random_state)
                for i, (first, last, random_state) in enumerate(self.ranges)]

    def restore_splits(self, splits: list) -> None:
        """Continue with these splits; the rate counts from now (a new rate limiter)."""
        self.ranges = [[first, last, random_state] for first, last, random_state in splits if first <= last]
        if self.ranges and self.ranges[0][2] is not None:
            self.context.random.setstate(self.ranges[0][2])
        if self.limiter is not None:
            self.limiter = RateLimiter(self.limiter.per_second, self.runtime.now_ms())
        self.finished = not self.ranges

    def close(self) -> None:
        function = self.source.generator_function
        if isinstance(function, GeneratorFunction):
            function.close()


class FileReader(SourceReader):
    """Lines of the subtask's files (every ``parallelism``-th file in name order); with
    ``monitor_continuously`` new files are picked up every discovery interval. A split is a
    file with the position read to (0: not begun); discovery knows the files found."""

    def __init__(self, source: FileSource) -> None:
        self.source = source
        self.seen: set[str] = set()
        self.pending: list[tuple[str, Any]] = []  # (path, position), the next file first
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
                self.pending.append((path, 0))
        interval = self.source.discovery_interval_ms
        if interval is not None:
            self.next_scan = self.runtime.now_ms() + interval
        self._update_finished()

    def _update_finished(self) -> None:
        self.finished = self.source.discovery_interval_ms is None and not self.pending and self.handle is None

    def _open_file(self, path: str, position: Any) -> None:
        self.current = path
        encoding = self.source.stream_format.charset_name
        self.handle = open(self.runtime.open_input(path), encoding=encoding, newline="")
        if position:
            self.handle.seek(position)

    def poll(self, limit: int) -> list:
        interval = self.source.discovery_interval_ms
        if interval is not None and self.runtime.now_ms() >= self.next_scan:
            self._discover()
        batch: list[str] = []
        while len(batch) < limit:
            if self.handle is None:
                if not self.pending:
                    break
                self._open_file(*self.pending.pop(0))
            line = self.handle.readline()
            if not line:
                self.handle.close()
                self.handle = None
                continue
            batch.append(line.rstrip("\r\n"))
        self._update_finished()
        return batch

    def available_at(self) -> int | None:
        if self.source.discovery_interval_ms is None or self.pending or self.handle is not None:
            return None
        return self.next_scan

    def snapshot_splits(self) -> list:
        """The open file with its read position, then the files still to read."""
        current = [] if self.handle is None else [(self.current, self.handle.tell())]
        return current + list(self.pending)

    def restore_splits(self, splits: list) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        self.pending = [(path, position) for path, position in splits]
        self.next_scan = self.runtime.now_ms()
        self._update_finished()

    def snapshot_enumerator(self) -> Any:
        return sorted(self.seen)

    def restore_enumerator(self, states: list) -> None:
        self.seen = {path for found in states for path in found}

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()

"""The jobs of the fault campaign (``fault_campaign.py``) and how their output is judged.

``staged``: no checkpoints — two parallel sources, a keyed running count, a sink function;
the sink stages its output per attempt and the job commits the final attempts' (bounded).

``bounded`` / ``unbounded``: checkpoints every second. Two parallel data-generator sources
(20 records/s in all; record i of source subtask s has key ``s.(i % 7)`` and an event time
growing 100 ms a record) feed, keyed by key, a process function with a ValueState count and an
event-time timer per record (1 s after it) and a 1 s tumbling event-time window counting per
key. Their lines — ``count,k,n,i`` per record, ``timer,k,t`` per timer fired,
``window,k,start,count`` per window — go to a FileSink (two subtasks; parts roll at every
checkpoint or, by the default policy, at 1 KB). What the FileSink committed is the output
(an unbounded run's parts roll at every checkpoint: with the default policy the lines in
the open parts at the end would be committed only later).
Timestamps never go backwards within a source and each key has one source, so nothing is
ever late and the output does not depend on how the two sources interleave: a run's
committed lines are a fault-free run's (bounded), or per kind and key the first ones of them
(unbounded: the run stops at ``--duration`` with what the last completed checkpoint
committed) with, per source, the records of one unbroken range of indices counted.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from kernel.common import Encoder, Time, Types, WatermarkStrategy
from kernel.datastream import (
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
    ValueStateDescriptor,
)
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from kernel.datastream.window import TumblingEventTimeWindows

STAGED_RECORDS = 600
CHECKPOINTED_RECORDS = 600
RATE = 20  # records per second, both sources together
KEYS = 7
UNBOUNDED = 1 << 62  # the data generator's indices of an unbounded source


def build_staged(results: list) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    numbers = env.from_source(DataGeneratorSource(lambda i: (i % 13, 1), count=STAGED_RECORDS, records_per_second=10),
                              WatermarkStrategy.no_watermarks(), "Numbers")
    numbers.key_by(lambda pair: pair[0], Types.INT()) \
        .reduce(lambda a, b: (a[0], a[1] + b[1])).name("Count") \
        .add_sink(results.append).name("Results")
    env.execute("campaign")


def record(total: int):
    """Record ``i`` of a source of ``total`` indices split in two: (key, event time, i)."""
    half = total // 2

    def generate(i: int) -> tuple[str, int, int]:
        subtask, position = (1, i - half) if i >= half else (0, i)
        return f"{subtask}.{i % KEYS}", position * 2000 // RATE, i

    return generate


class CountWithTimers(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        yield f"count,{value[0]},{n},{value[2]}"

    def on_timer(self, timestamp: int, ctx: Any):
        yield f"timer,{ctx.get_current_key()},{timestamp}"


class WindowLine(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any):
        yield f"window,{key},{context.window().start},{len(list(elements))}"


def build_checkpointed(out: str, bounded: bool, roll_on_checkpoint: bool) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(1000)
    total = CHECKPOINTED_RECORDS if bounded else UNBOUNDED
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, previous: r[1])
    source = DataGeneratorSource(record(total), count=total if bounded else None, records_per_second=RATE)
    keyed = env.from_source(source, strategy, "Events").key_by(lambda r: r[0], Types.STRING())
    counts = keyed.process(CountWithTimers(), Types.STRING()).name("Count")
    windows = keyed.window(TumblingEventTimeWindows.of(Time.seconds(1))) \
        .process(WindowLine(), Types.STRING()).name("Window")
    policy = RollingPolicy.on_checkpoint_rolling_policy() if roll_on_checkpoint else \
        RollingPolicy.default_rolling_policy(part_size=1024)
    counts.union(windows).sink_to(
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).with_rolling_policy(policy).build())
    env.execute("campaign with checkpoints")


def committed_lines(out: str) -> list[str]:
    """The lines of every finished (visible) part file."""
    lines: list[str] = []
    for name in sorted(os.listdir(out)):
        if not name.startswith("."):
            with open(os.path.join(out, name), encoding="utf-8") as stream:
                lines.extend(stream.read().splitlines())
    return lines


def sequences(lines: list[str]) -> dict[tuple[str, str], list[str]]:
    """Lines by (kind, key), each sequence in order (counts, timers and windows by number)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for line in lines:
        kind, key, *_ = line.split(",")
        grouped.setdefault((kind, key), []).append(line)
    return {group: sorted(items, key=lambda line: int(line.split(",")[2])) for group, items in grouped.items()}


def judge_bounded(lines: list[str], expected: list[str]) -> tuple[int, int, int]:
    """(duplicated, lost, unexpected) lines against the fault-free run's."""
    got, want = Counter(lines), Counter(expected)
    duplicated = sum(n - want[line] for line, n in got.items() if line in want and n > want[line])
    lost = sum(n - got[line] for line, n in want.items() if got[line] < n)
    unexpected = sum(n for line, n in got.items() if line not in want)
    return duplicated, lost, unexpected


def judge_unbounded(lines: list[str], reference: list[str]) -> tuple[int, int, int]:
    """(duplicated, lost, unexpected): per kind and key the committed lines must be the first
    ones of the (longer) fault-free run's, each once, and the records counted must be, per
    source, an unbroken range from its first index."""
    duplicated = sum(n - 1 for n in Counter(lines).values() if n > 1)
    want = sequences(reference)
    lost = unexpected = 0
    for group, items in sequences(sorted(set(lines))).items():
        prefix = want.get(group, [])[:len(items)]
        matched = len(set(items) & set(prefix))
        unexpected += len(items) - matched
        lost += len(prefix) - matched
    counted: dict[str, set[int]] = {}
    for line in set(lines):
        kind, key, *rest = line.split(",")
        if kind == "count":
            counted.setdefault(key.split(".")[0], set()).add(int(rest[1]))
    for source, indices in counted.items():
        first = 0 if source == "0" else UNBOUNDED // 2
        lost += max(indices) - first + 1 - len(indices)
    return duplicated, lost, unexpected

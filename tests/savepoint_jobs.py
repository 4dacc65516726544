"""Job files the savepoint, rescaling and state-table tests run, and what they print.

``COUNT_JOB`` counts and sums per key the records ``(k<i % 3>, i)`` of a rate-limited data
generator (10 records/s, 60 of them unless ``unbounded``); its arguments choose variants: ``uid``
/ ``other-uid`` (the counting operator's uid), ``extra-map`` (a stateless map inserted before
``key_by``), ``checkpoints`` (a checkpoint every second), ``max-parallelism=N``, ``keys=N``,
``rate=N`` (records per second), ``list-keys`` (keyed by ``[k<i % 3>]``, a key Python cannot hash).
"""

from __future__ import annotations

import os

COUNT_JOB = """
import sys
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import KeyedProcessFunction
from kernel.datastream.state import ValueStateDescriptor

options = dict(arg.partition("=")[::2] for arg in sys.argv[1:])
keys = int(options.get("keys") or 3)


class Count(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))
        self.total = ctx.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        total = (self.total.value() or 0) + value[1]
        self.count.update(count)
        self.total.update(total)
        yield value[0], count, total


env = StreamExecutionEnvironment.get_execution_environment()
if "checkpoints" in options:
    env.enable_checkpointing(1000)
if "max-parallelism" in options:
    env.set_max_parallelism(int(options["max-parallelism"]))
count = None if "unbounded" in options else 60
rate = int(options.get("rate") or 10)
source = DataGeneratorSource(lambda i: ("k%d" % (i % keys), i), count, records_per_second=rate)
numbers = env.from_source(source, WatermarkStrategy.no_watermarks(), "Numbers").uid("numbers")
if "extra-map" in options:
    numbers = numbers.map(lambda v: v).name("Identity")
counts = numbers.key_by((lambda v: [v[0]]) if "list-keys" in options else (lambda v: v[0])).process(Count()).name("Count")
if "uid" in options:
    counts = counts.uid("count")
elif "other-uid" in options:
    counts = counts.uid("count-2")
counts.print()
env.execute("counts")
"""


def counts(start: int, end: int, keys: int = 3, fresh: bool = False) -> list[str]:
    """What ``COUNT_JOB`` prints for the records ``start`` to ``end - 1`` (p=1, in order):
    running counts and sums per key, from the first record on (or from ``start`` when
    ``fresh``: state that starts empty there)."""
    count: dict[str, int] = {}
    total: dict[str, int] = {}
    lines = []
    for i in range(0 if not fresh else start, end):
        key = f"k{i % keys}"
        count[key] = count.get(key, 0) + 1
        total[key] = total.get(key, 0) + i
        if i >= start:
            lines.append(f"('{key}', {count[key]}, {total[key]})")
    return lines


def write(tmp_path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def savepoint_path(err: str) -> str:
    """The path ``rill run --stop-with-savepoint`` printed."""
    lines = [line for line in err.splitlines() if line.startswith("Savepoint completed. Path: ")]
    assert len(lines) == 1, err
    path = lines[0].removeprefix("Savepoint completed. Path: ")
    assert os.path.isdir(path), path
    return path

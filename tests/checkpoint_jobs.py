"""Jobs the checkpoint tests share: two sources into one task, one of them through a slow task.

Source A emits ``("a", i)`` every 10 ms; source B emits ``("b", i)`` every 10 ms into SlowB, its
own task, which spends 30 ms on each record; both go into the sink's task. ``probed`` prints
each record with the time it was processed (``a3@30``); ``counted`` keys the records by source
and prints each with the number of records of its source seen so far (``a3 count=4``), which
is exactly once iff it equals the index + 1 (each source's records come in order over one
channel).
"""

from __future__ import annotations

from kernel import clock
from kernel.common import Types
from kernel.common.watermark_strategy import WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import KeyedProcessFunction, ProcessFunction, RuntimeContext
from kernel.datastream.state import ValueStateDescriptor


class Probe(ProcessFunction):
    def process_element(self, value, ctx):
        yield f"{value[0]}{value[1]}@{ctx.timer_service().current_processing_time()}"


class CountPerSource(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value[0]}{value[1]} count={count}"


def slow(value):
    clock.sleep(0.03)
    return value


def two_sources(sink, count: int = 10):
    def build(env):
        env.set_parallelism(1)
        a = env.from_source(DataGeneratorSource(lambda i: ("a", i), count=count, records_per_second=100),
                            WatermarkStrategy.no_watermarks(), "A")
        b = env.from_source(DataGeneratorSource(lambda i: ("b", i), count=count, records_per_second=100),
                            WatermarkStrategy.no_watermarks(), "B").map(slow).name("SlowB").disable_chaining()
        sink(a.union(b)).print()
        env.execute("alignment")

    return build


def probe(stream):
    return stream.process(Probe()).name("Probe")


def count_per_source(stream):
    return stream.key_by(lambda v: v[0], Types.STRING()).process(CountPerSource()).name("Count")


probed = two_sources(probe)
counted = two_sources(count_per_source)


def counts_are_exact(lines: list[str]) -> bool:
    return all(line.split()[1] == f"count={int(line.split()[0][1:]) + 1}" for line in lines)

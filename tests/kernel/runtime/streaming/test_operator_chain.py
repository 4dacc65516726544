"""Operator chains run over their inputs without any cluster (what the Spark backend relies on)."""

from __future__ import annotations

import random

from kernel.common import Types
from kernel.datastream import ProcessFunction
from kernel.runtime.streaming.chain import OperatorChain
from kernel.runtime.streaming.outputs import Output
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo
from tests.graphs import compile_job


class ListOutput(Output):
    def __init__(self):
        self.values, self.watermarks = [], []

    def collect(self, values, timestamps):
        self.values.extend(values)

    def emit_watermark(self, timestamp):
        self.watermarks.append(timestamp)

    def emit_watermark_status(self, idle):
        pass

    def emit_latency_marker(self, marker):
        pass


class PlainRuntime(OperatorRuntime):
    def __init__(self):
        super().__init__(TaskInfo("t", 0, 1, 128), lambda name: random.Random(name))
        self.printed = []

    def now_ms(self):
        return 0

    def schedule(self, when_ms, callback):
        raise AssertionError("no timers in this chain")

    def write_stdout(self, text, sink="", lines=0):
        self.printed.append(text)


def test_a_chain_runs_batches_through_its_operators_and_out_of_its_edges():
    class Events(ProcessFunction):
        def open(self, ctx):
            self.calls = ["open"]

        def process_element(self, value, ctx):
            yield value * ctx.timestamp()

    def build(env):
        source = env.from_collection([1], Types.INT())
        (source.map(lambda x: x + 1, Types.INT()).start_new_chain().filter(lambda x: x % 2 == 0)
               .process(Events(), Types.INT())
               .key_by(lambda x: x).reduce(lambda a, b: a + b).print())
        env.execute()

    compiled = compile_job(build)
    vertex = next(v for v in compiled.job_graph.vertices if v.name.startswith("Map"))
    assert vertex.name == "Map -> Filter -> Process"
    out = ListOutput()
    chain = OperatorChain(vertex, compiled.stream_graph, PlainRuntime(), lambda edge: out)
    chain.open()
    chain.head.process_batch([1, 2, 3], [10, 20, 30])
    chain.head.process_watermark(25)
    chain.finish()
    chain.close()
    assert out.values == [20, 120]  # (1+1)*10, (3+1)*30
    assert out.watermarks == [25]

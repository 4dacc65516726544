"""Jobs written as PyFlink users write them, with the outputs real PyFlink 2.3 printed.

The expectations were recorded by running the same job file on PyFlink 2.3.0
(``/work/venvs/pyflink``, ``python job.py`` with ``pyflink.`` imports, parallelism 1) and
copying each print sink's lines. Lines of different sinks interleave as tasks are scheduled,
so each sink's lines are compared in order, per sink identifier.
"""

from __future__ import annotations

from kernel.common import Row, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import OutputTag, RuntimeContext
from kernel.datastream.functions import ProcessWindowFunction
from kernel.datastream.window import Time, TimeWindow, TumblingEventTimeWindows
from tests.runtime import run_job

#: recorded on PyFlink 2.3.0 (see the module docstring)
PYFLINK_LINES = {
    "win": ["a 0-5000 n=3 sub=(0, 1)", "b 0-5000 n=1 sub=(0, 1)", "b 5000-10000 n=1 sub=(0, 1)",
            "a 5000-10000 n=1 sub=(0, 1)"],
    "side": ["big a 3"],
    "min": ["(a,1,1000)", "(a,1,1000)", "(b,5,3000)", "(a,1,1000)", "(b,1,3000)", "(a,1,1000)"],
    "max": ["(a,1,1000)", "(a,2,1000)", "(b,5,3000)", "(a,3,1000)", "(b,5,3000)", "(a,7,1000)"],
    "sum": ["(a,1,1000)", "(a,3,1000)", "(b,5,3000)", "(a,6,1000)", "(b,6,3000)", "(a,13,1000)"],
    "min_by": ["(a,1,1000)", "(a,1,1000)", "(b,5,3000)", "(a,1,1000)", "(b,1,6000)", "(a,1,1000)"],
    "max_by": ["(a,1,1000)", "(a,2,2000)", "(b,5,3000)", "(a,3,4000)", "(b,5,3000)", "(a,7,7000)"],
    "rmin": ["+I[a,3,1]", "+I[a,1,1]", "+I[a,1,1]"],
    "rmax_by": ["+I[a,3,1]", "+I[a,3,1]", "+I[a,3,1]"],
    "rsum": ["+I[a,3,1]", "+I[a,3,3]", "+I[a,3,6]"],
}


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


BIG = OutputTag("big", Types.STRING())


class Fire(ProcessWindowFunction[tuple, str, str, TimeWindow]):
    """The typed form PyFlink users write (issue 15's first report)."""

    def open(self, ctx: RuntimeContext):
        self.threshold = int(ctx.get_job_parameter("threshold", "0"))
        self.sub = (ctx.get_index_of_this_subtask(), ctx.get_number_of_parallel_subtasks())

    def process(self, key, context, elements):
        n = len(list(elements))
        yield f"{key} {context.window().start}-{context.window().end} n={n} sub={self.sub}"
        if n >= self.threshold:
            yield BIG, f"big {key} {n}"


def build(env):
    env.set_parallelism(1)
    env.get_config().set_global_job_parameters({"threshold": "3"})
    data = [("a", 1, 1000), ("a", 2, 2000), ("b", 5, 3000), ("a", 3, 4000), ("b", 1, 6000), ("a", 7, 7000)]
    ds = env.from_collection(data, Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()]))
    timed = ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts()))
    windows = timed.key_by(lambda t: t[0], key_type=Types.STRING()) \
        .window(TumblingEventTimeWindows.of(Time.seconds(5))).process(Fire(), Types.STRING())
    windows.print("win")
    windows.get_side_output(BIG).print("side")
    keyed = ds.key_by(lambda t: t[0], key_type=Types.STRING())
    keyed.min(1).print("min")
    keyed.max(1).print("max")
    keyed.sum(1).print("sum")
    keyed.min_by(1).print("min_by")
    keyed.max_by(1).print("max_by")
    rows = env.from_collection([Row(k="a", v=3, w=1), Row(k="a", v=1, w=2), Row(k="a", v=2, w=3)],
                               Types.ROW_NAMED(["k", "v", "w"], [Types.STRING(), Types.INT(), Types.INT()]))
    by_k = rows.key_by(lambda r: r.k, key_type=Types.STRING())
    by_k.min("v").print("rmin")
    by_k.max_by("v").print("rmax_by")
    by_k.sum("w").print("rsum")
    env.execute("api job")


def by_sink(lines: list[str]) -> dict[str, list[str]]:
    sinks: dict[str, list[str]] = {}
    for line in lines:
        sink, _, value = line.partition("> ")
        sinks.setdefault(sink, []).append(value)
    return sinks


def test_generic_window_function_side_output_job_parameters_and_aggregations_print_as_pyflink():
    assert by_sink(run_job(build).lines) == PYFLINK_LINES


def test_execute_and_collect_returns_what_pyflink_returns():
    """PyFlink 2.3 printed ``limit [11, 21]`` and ``iter ['x', 'y']`` for these two calls."""
    results = {}

    def collect(env):
        results["limit"] = env.from_collection([10, 20, 30, 40], Types.INT()).map(lambda x: x + 1, Types.INT()) \
            .execute_and_collect(limit=2)
        with env.from_collection(["x", "y"], Types.STRING()).execute_and_collect() as iterator:
            results["iter"] = list(iterator)

    run = run_job(collect)
    assert results == {"limit": [11, 21], "iter": ["x", "y"]}
    assert run.outcome.job_name == "DataStream Collect"  # Flink's name when none is given

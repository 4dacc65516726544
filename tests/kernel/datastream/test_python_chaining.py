"""Where PyFlink serialises values (kernel.datastream.python_chaining), seen in what jobs print.

Every expected line was recorded by running the same job on PyFlink 2.3.0 (``/work/venvs/pyflink``,
process mode, parallelism 1, ``pyflink.`` imports, one job at a time) and copying what its print
sinks wrote, or the Python error its failure carried. The jobs print ``repr`` of what a function
receives, so a float that went through a FLOAT coder shows as 110.0999984741211 and one that did
not as 110.1.
"""

from __future__ import annotations

import datetime

import pytest

from kernel.common import Row, Time, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import OutputTag, RuntimeExecutionMode
from kernel.datastream.functions import BroadcastProcessFunction, CoMapFunction, KeyedProcessFunction, ProcessFunction
from kernel.datastream.state import MapStateDescriptor, StateTtlConfig, ValueStateDescriptor
from kernel.datastream.transformations import OneInputTransformation
from kernel.datastream.python_chaining import serialized_output_types
from kernel.lifecycle.executors import CapturingExecutor, use_executor
from kernel.lifecycle.session import Session
from tests.runtime import run_job


def job(build):
    def run(env):
        env.set_parallelism(1)
        build(env)
        env.execute("types")

    return run_job(run)


def by_sink(lines):
    sinks: dict = {}
    for line in lines:
        sink, _, value = line.rpartition("> ") if "> " in line else ("", "", line)
        sinks.setdefault(sink, []).append(value)
    return sinks


# -- which outputs are serialised -------------------------------------------------------------------

def test_a_chained_map_gets_the_value_as_it_was_and_a_sink_gets_it_as_the_coder_reads_it():
    run = job(lambda env: (
        env.from_collection([110.1, 20.5]).map(lambda x: x, Types.FLOAT()).map(lambda x: "chained " + repr(x)).print(),
        env.from_collection([110.1, 1e10, 0.1]).map(lambda x: x, Types.FLOAT()).print("direct"),
    ))
    assert by_sink(run.lines) == {"": ["chained 110.1", "chained 20.5"],
                                  "direct": ["110.1", "1.0E10", "0.1"]}  # Java's Float.toString


@pytest.mark.parametrize("shape", ["parallelism", "two consumers", "key_by"])
def test_what_breaks_pythons_chain_serialises_the_output(shape):
    def build(env):
        typed = env.from_collection([110.1]).map(lambda x: x, Types.FLOAT())
        if shape == "parallelism":
            typed.map(lambda x: "p2 " + repr(x)).set_parallelism(2).print()
        elif shape == "two consumers":
            typed.map(lambda x: "c1 " + repr(x)).print()
            typed.map(lambda x: "c2 " + repr(x)).print()
        else:
            typed.key_by(lambda x: "k").map(lambda x: "keyed " + repr(x)).print()

    recorded = {"parallelism": ["p2 110.0999984741211"],
                "two consumers": ["c1 110.0999984741211", "c2 110.0999984741211"],
                "key_by": ["keyed 110.0999984741211"]}
    assert sorted(job(build).lines) == recorded[shape]


def test_side_outputs_are_serialised_by_their_tags_type_and_the_main_output_stays_chained():
    tag = OutputTag("side", Types.FLOAT())

    class Both(ProcessFunction):
        def process_element(self, value, ctx):
            yield tag, value
            yield value

    def build(env):
        main = env.from_collection([110.1]).process(Both(), Types.DOUBLE())
        main.get_side_output(tag).map(lambda x: "side " + repr(x)).print()
        main.map(lambda x: "main " + repr(x)).print()

    assert sorted(job(build).lines) == ["main 110.1", "side 110.0999984741211"]


class ShowTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield "ts " + repr(ctx.timestamp()) + " " + repr(value)


class FixedTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return 1000.7


class ShowKey(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield "key " + repr(ctx.get_current_key()) + " " + repr(value)


class Same(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


def test_rows_timestamps_keys_doubles_and_two_input_operators_as_pyflink_prints_them():
    def build(env):
        env.from_collection([110.1]).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FixedTimestamp())) \
            .process(ShowTimestamp()).print("ts")
        env.from_collection([1]).map(lambda x: Row(x, 110.1), Types.ROW([Types.INT(), Types.FLOAT()])).print("chained")
        twice = env.from_collection([1]).map(lambda x: Row(x, 110.1), Types.ROW([Types.INT(), Types.FLOAT()]))
        twice.print("twice1")
        twice.print("twice2")
        env.from_collection([1]).map(lambda x: (x, 110.1), Types.TUPLE([Types.INT(), Types.FLOAT()])).print("tuple")
        env.from_collection([1]).map(lambda x: None).print("none")
        env.from_collection([1]).map(lambda x: x, Types.DOUBLE()).map(lambda x: "double chained " + repr(x)).print()
        env.from_collection([1]).map(lambda x: x, Types.DOUBLE()).print("double")
        env.from_collection([1.7, 2.2]).key_by(lambda x: x, key_type=Types.INT()).process(ShowKey()).print("key")
        env.from_collection([110.1]).connect(env.from_collection([220.2])).map(Same(), Types.FLOAT()) \
            .map(lambda x: "comap chained " + repr(x)).print()

    assert by_sink(job(build).lines) == {
        # the extracted timestamp is handed to Java as a LONG
        "ts": ["ts 1000 110.1"],
        # print's map formats the row in the same Python worker: the value as the map returned it
        "chained": ["+I[1,110.1]"],
        # two consumers: the row went through its coder first
        "twice1": ["+I[1,110.0999984741211]"], "twice2": ["+I[1,110.0999984741211]"],
        "tuple": ["(1,110.1)"],
        "none": ["None"],
        "": ["double chained 1", "comap chained 110.1", "comap chained 220.2"],
        "double": ["1.0"],
        # the key is written by the key type's coder: 1.7 is the key 1
        "key": ["key 1 1.7", "key 2 2.2"],
    }


class Sum(KeyedProcessFunction):
    """PyFlink's examples/datastream/state_access.py."""

    def open(self, runtime_context):
        descriptor = ValueStateDescriptor("state", Types.FLOAT())
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1)).set_update_type(
            StateTtlConfig.UpdateType.OnReadAndWrite).disable_cleanup_in_background().build())
        self.state = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):
        current = self.state.value()
        if current is None:
            current = 0
        current += value[1]
        self.state.update(current)
        yield value[0], current


def test_pyflinks_state_access_example_prints_what_pyflink_prints():
    """The FLOAT field is rounded where the collection is read; the FLOAT state is not: PyFlink's
    state cache hands back the value as it was stored (Bob's 83.29999923706055 + 3.1 is
    86.39999914169312, not the sum of its float32 rounding)."""
    def build(env):
        ds = env.from_collection([('Alice', 110.1), ('Bob', 30.2), ('Alice', 20.0), ('Bob', 53.1), ('Alice', 13.1),
                                  ('Bob', 3.1), ('Bob', 16.1), ('Alice', 20.1)],
                                 type_info=Types.TUPLE([Types.STRING(), Types.FLOAT()]))
        ds.key_by(lambda value: value[0]).process(Sum()).print()

    assert job(build).lines == [
        "('Alice', 110.0999984741211)", "('Bob', 30.200000762939453)", "('Alice', 130.0999984741211)",
        "('Bob', 83.29999923706055)", "('Alice', 143.19999885559082)", "('Bob', 86.39999914169312)",
        "('Bob', 102.49999952316284)", "('Alice', 163.29999923706055)",
    ]


def test_state_keeps_what_was_stored_whatever_its_declared_type():
    class Keep(KeyedProcessFunction):
        def open(self, ctx):
            self.v = ctx.get_state(ValueStateDescriptor("v", Types.FLOAT()))

        def process_element(self, value, ctx):
            before = self.v.value()
            self.v.update(value)
            yield "state before " + repr(before) + " after " + repr(self.v.value())

    run = job(lambda env: env.from_collection([110.1, 20.1, 30.1]).key_by(lambda x: "k").process(Keep()).print())
    assert run.lines == ["state before None after 110.1", "state before 110.1 after 20.1",
                         "state before 20.1 after 30.1"]


def test_execute_and_collect_returns_javas_float_as_pyflink_reads_it_back():
    def collect(chained):
        def build(env):
            env.set_parallelism(1)
            ds = env.from_collection([110.1]).map(lambda x: x, Types.FLOAT())
            if chained:
                ds = ds.map(lambda x: x)
            results.append(ds.execute_and_collect(limit=5))

        results: list = []
        run_job(build)
        return results[0]

    assert collect(chained=False) == [110.1] and collect(chained=True) == [110.1]


# -- values the coder cannot write fail the job -------------------------------------------------------

FAILING = {
    "int overflow": (lambda env: env.from_collection([1, 2**31]).map(lambda x: x, Types.INT()).print(),
                     "OverflowError: value too large to convert to int32_t"),
    "str as INT": (lambda env: env.from_collection(["x"]).map(lambda x: x, Types.INT()).print(),
                   "TypeError: an integer is required"),
    "int as STRING": (lambda env: env.from_collection([5]).map(lambda x: x, Types.STRING()).print(),
                      "AttributeError: 'int' object has no attribute 'encode'"),
    "key_type STRING of an int": (
        lambda env: env.from_collection([1]).key_by(lambda x: x, key_type=Types.STRING()).map(lambda x: x).print(),
        "AttributeError: 'int' object has no attribute 'encode'"),
    "None printed as STRING": (lambda env: env.from_collection([1]).map(lambda x: None, Types.STRING()).print(),
                               'java.lang.NullPointerException: Cannot invoke "Object.toString()" because "record" '
                               'is null'),
}


@pytest.mark.parametrize("what", list(FAILING))
def test_a_value_its_type_cannot_carry_fails_the_job_with_pyflinks_error(what):
    build, error = FAILING[what]
    run = job(build)
    assert run.error is not None and str(run.error).endswith(error)


def test_side_output_values_must_fit_their_tags_type():
    tag = OutputTag("t", Types.INT())

    class Wrong(ProcessFunction):
        def process_element(self, value, ctx):
            yield tag, "x"

    run = job(lambda env: env.from_collection([1]).process(Wrong()).get_side_output(tag).print())
    assert str(run.error).endswith("TypeError: an integer is required")


def test_none_passes_a_typed_boundary_at_the_top_level():
    run = job(lambda env: env.from_collection([1]).map(lambda x: None, Types.DOUBLE()).key_by(lambda x: 1)
              .map(lambda x: "got " + repr(x)).print())
    assert run.lines == ["got None"]


# -- the rule itself ----------------------------------------------------------------------------------

@pytest.fixture
def env():
    from kernel.datastream import StreamExecutionEnvironment

    with use_executor(CapturingExecutor(Session.open(environ={}))):
        yield StreamExecutionEnvironment.get_execution_environment()


def test_only_outputs_leaving_the_python_chain_are_marked(env):
    env.set_parallelism(1)
    source = env.from_collection([1])
    chained = source.map(lambda x: x, Types.FLOAT())
    tail = chained.map(lambda x: x, Types.INT())
    tail.print()
    keyed = source.map(lambda x: x, Types.LONG()).key_by(lambda x: x).map(lambda x: x, Types.STRING())
    keyed.print()
    projected = source.map(lambda x: (x, x), Types.TUPLE([Types.INT(), Types.INT()])).project(1)
    projected.map(lambda x: x).print()
    rows = source.map(lambda x: Row(x), Types.ROW([Types.INT()]))
    rows.print()
    rows_elsewhere = source.map(lambda x: Row(x), Types.ROW([Types.INT()])).set_parallelism(2)
    rows_elsewhere.print()
    marked = serialized_output_types(env._transformations)
    ids = {t.get_transformation().id: name for t, name in [
        (chained, "chained"), (tail, "tail"), (keyed, "keyed"), (projected, "projected"), (rows, "rows"),
        (rows_elsewhere, "rows elsewhere")]}
    long_map = keyed.get_transformation().inputs[0].inputs[0]
    assert isinstance(long_map, OneInputTransformation)
    ids[long_map.id] = "before key_by"
    tuple_map = projected.get_transformation().inputs[0]
    ids[tuple_map.id] = "before projection"
    assert sorted(ids[i] for i in marked) == [
        # print is Java's sink for an INT, a STRING; the projection is Java's operator; print's
        # map runs at the environment's parallelism (1), not the rows' 2
        "before key_by", "before projection", "keyed", "rows elsewhere", "tail"]


class NoTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return None


PRICES = MapStateDescriptor("b", Types.STRING(), Types.FLOAT())


class ReadPrice(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield "bstate " + repr(ctx.get_broadcast_state(PRICES).get("k"))

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(PRICES).put("k", value)


def test_broadcast_state_keeps_what_was_stored_and_a_keyed_print_gets_the_coders_value():
    def build(env):
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)  # the broadcast side first, as in Flink
        env.from_collection([1]).connect(env.from_collection([110.1]).broadcast(PRICES)).process(ReadPrice()).print()
        env.from_collection([110.1]).map(lambda x: x, Types.FLOAT()).key_by(lambda x: 1).print("keyed")

    # PyFlink's KeyedStream.print prints its values without the sink identifier
    assert sorted(by_sink(job(build).lines)[""]) == ["110.1", "bstate 110.1"]


@pytest.mark.parametrize("what, build, error", [
    ("pickled bytes printed", lambda env: env.from_collection([1]).map(lambda x: b"ab").print(),
     "AttributeError: 'bytes' object has no attribute 'encode'"),
    ("no timestamp", lambda env: env.from_collection([1]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(NoTimestamp())).map(lambda x: x).print(),
     "TypeError: an integer is required"),
])
def test_print_and_timestamps_fail_where_pyflinks_coders_fail(what, build, error):
    run = job(build)
    assert run.error is not None and str(run.error).endswith(error)


def test_operators_handing_on_values_a_coder_of_their_type_read_write_them_unchanged(env):
    """A timestamps operator (or a filter) hands on its input values: after from_collection, or
    after an operator serialised with the same type, writing them again gives them back as they
    are when they cannot change (numbers, strings, tuples of them): no conversion is marked.
    Values a function made, rows (mutable), and SQL timestamps (whose coder is not idempotent
    before the epoch) keep theirs."""
    env.set_parallelism(1)
    pairs = Types.TUPLE([Types.STRING(), Types.LONG()])
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda value, ts: 0)

    def timestamps(stream):
        stamped = stream.assign_timestamps_and_watermarks(strategy)
        stamped.map(lambda x: x).print()
        return stamped

    cases = {
        "after from_collection": timestamps(env.from_collection([("a", 1)], pairs)),
        "after a filter": timestamps(env.from_collection([("a", 1)], pairs).filter(lambda x: True)),
        "after a rebalance": timestamps(env.from_collection([("a", 1)], pairs).rebalance()),
        "after a map": timestamps(env.from_collection([("a", 1)], pairs).map(lambda x: x, pairs)),
        "rows": timestamps(env.from_collection([Row(1)], Types.ROW([Types.INT()]))),
        "timestamps": timestamps(env.from_collection([datetime.datetime(2020, 1, 1)], Types.SQL_TIMESTAMP())),
        "pickled": timestamps(env.from_collection([1])),
    }
    marked = serialized_output_types(env._transformations)
    assert sorted(name for name, stream in cases.items() if stream.get_transformation().id in marked) == [
        "after a map", "rows", "timestamps"]


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def test_timestamps_after_from_collection_hand_on_what_the_coder_read():
    """Recorded on PyFlink 2.3.0 (this job with ``pyflink.`` imports): from_collection reads
    110.1 as a FLOAT, 110.0999984741211; the timestamps operator writing it again with the
    same coder changes nothing."""
    def build(env):
        env.from_collection([(110.1, 1)], Types.TUPLE([Types.FLOAT(), Types.LONG()])) \
            .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps()
                                              .with_timestamp_assigner(SecondField())) \
            .map(lambda x: repr(x)).print()

    assert job(build).lines == ["(110.0999984741211, 1)"]

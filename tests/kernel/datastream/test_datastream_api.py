"""The declaring side of the DataStream API: what each call records, and PyFlink's errors."""

from __future__ import annotations

import pytest

from kernel.common import Row, Types
from kernel.datastream import (
    CoMapFunction,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from kernel.datastream.transformations import OneInputTransformation, PartitionTransformation
from kernel.runtime.graph.partitioner import KeyGroupStreamPartitioner
from kernel.lifecycle.executors import CapturingExecutor, use_executor
from kernel.lifecycle.session import Session


@pytest.fixture
def env():
    with use_executor(CapturingExecutor(Session.open(environ={}))):
        yield StreamExecutionEnvironment.get_execution_environment()


def test_every_call_records_a_transformation_in_creation_order(env):
    source = env.from_collection([1, 2])
    mapped = source.map(lambda x: x)
    keyed = mapped.key_by(lambda x: x)
    reduced = keyed.reduce(lambda a, b: a + b)
    sink = reduced.print()
    ids = [s.get_transformation().id for s in (source, mapped, keyed, reduced, sink)]
    assert ids == [1, 2, 3, 4, 5]
    assert isinstance(keyed.get_transformation(), PartitionTransformation)
    assert isinstance(keyed.get_transformation().partitioner, KeyGroupStreamPartitioner)
    assert [t.id for t in env._transformations] == [2, 4, 5]  # operators and sinks, not sources/partitions


def test_default_output_types_follow_pyflink(env):
    typed = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    assert repr(typed.get_type()) == "TupleTypeInfo(String, Integer)"
    assert repr(typed.map(lambda x: x).get_type()) == "PickledByteArrayTypeInfo"
    assert typed.filter(lambda x: True).get_type() == typed.get_type()
    assert typed.key_by(lambda x: x[0]).reduce(lambda a, b: a).get_type() == typed.get_type()
    assert repr(typed.map(lambda x: x, output_type=[Types.STRING(), Types.INT()]).get_type()) == "RowTypeInfo(String, Integer)"
    rows = env.from_collection([("Ann", 3)], Types.ROW_NAMED(["name", "age"], [Types.STRING(), Types.INT()]))
    element = rows.get_transformation().operator.params["elements"][0]
    assert isinstance(element, Row) and element.name == "Ann"


def test_operator_settings_are_recorded(env):
    stream = env.from_collection([1]).map(lambda x: x).name("Parse").uid("parse-uid").set_parallelism(3) \
        .set_max_parallelism(64).slot_sharing_group("g").disable_chaining()
    t = stream.get_transformation()
    assert (t.name, t.uid, t.parallelism, t.max_parallelism, t.slot_sharing_group, t.chaining_strategy.value) == (
        "Parse", "parse-uid", 3, 64, "g", "NEVER",
    )
    with pytest.raises(ValueError, match="Node hash must be a 32 character String"):
        stream.set_uid_hash("xyz")


def test_pyflink_type_errors(env):
    stream = env.from_collection([1])
    with pytest.raises(TypeError, match="The input must be a MapFunction or a callable function"):
        stream.map(42)
    with pytest.raises(TypeError, match="KeyedProcessFunction is required for KeyedStream."):
        stream.key_by(lambda x: x).process(object())
    with pytest.raises(TypeError, match="The input function must be a CoMapFunction!"):
        stream.connect(stream).map(lambda x: x)
    with pytest.raises(ValueError, match="OutputTag tag_id cannot be None or empty string"):
        OutputTag("")


def test_keyed_stream_refuses_what_pyflink_refuses(env):
    keyed = env.from_collection([1]).key_by(lambda x: x)
    with pytest.raises(Exception, match="Set parallelism for KeyedStream is not supported."):
        keyed.set_parallelism(2)
    with pytest.raises(Exception, match="Cannot override partitioning for KeyedStream."):
        keyed.rebalance()


def test_settings_on_a_partitioned_stream_are_refused(env):
    with pytest.raises(TypeError, match="set_parallelism\\(\\) is only supported on the stream of an operator"):
        env.from_collection([1]).rebalance().set_parallelism(2)


def test_union_needs_equal_types(env):
    a = env.from_collection([1], Types.INT())
    b = env.from_collection(["x"], Types.STRING())
    with pytest.raises(TypeError, match="Cannot union streams of different types: Integer and String"):
        a.union(b)


def test_side_output_tags_are_registered_on_the_producing_operator(env):
    tag = OutputTag("odd", Types.INT())

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            yield value

    main = env.from_collection([1]).process(Split(), Types.INT())
    side = main.get_side_output(tag)
    assert main.get_transformation().operator.side_outputs == {"odd": tag}
    assert side.get_type() == Types.INT()
    with pytest.raises(TypeError, match="already used with type"):
        main.get_side_output(OutputTag("odd", Types.STRING()))


def test_keyed_operators_carry_their_key(env):
    class Count(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    selector = lambda x: x % 2  # noqa: E731
    processed = env.from_collection([1]).key_by(selector, Types.INT()).process(Count())
    t = processed.get_transformation()
    assert isinstance(t, OneInputTransformation) and t.name == "KeyedProcess"
    key = t.operator.keys[0]
    # the selector, its key written and read back by the key type's coder (PyFlink's keyed input)
    assert key.selector(3) == 1 and key.selector(2.5) == 0 and key.key_type == Types.INT()


def test_environment_settings(env):
    assert env.get_parallelism() == 1  # parallelism.default
    env.set_parallelism(4)
    assert env.from_collection([1]).map(lambda x: x).get_transformation().parallelism == 4
    assert env.from_collection([1]).get_transformation().parallelism == 1  # non-parallel source
    with pytest.raises(ValueError, match="The parallelism must be at least one."):
        env.set_parallelism(0)
    assert env.get_checkpoint_interval() == -1
    assert env.enable_checkpointing(1000) is env
    assert env.get_checkpoint_interval() == 1000


def test_map_function_classes_are_accepted(env):
    class Double(MapFunction):
        def map(self, value):
            return value * 2

    class Pair(CoMapFunction):
        def map1(self, value):
            return value

        def map2(self, value):
            return value

    stream = env.from_collection([1])
    assert stream.map(Double()).get_transformation().operator.kind == "map"
    assert stream.connect(stream).map(Pair()).get_transformation().name == "Co-Map"

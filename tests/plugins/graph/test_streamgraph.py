"""Transformations -> StreamGraph: ids, virtual nodes, partitioners, slot sharing groups,
two-input type numbers, Flink's JSON execution plan."""

from __future__ import annotations

import json

import pytest

from kernel.common import Types
from kernel.datastream import CoMapFunction, OutputTag, ProcessFunction, StreamExecutionEnvironment
from kernel.errors import JobDefinitionError
from kernel.lifecycle.executors import CapturingExecutor, use_executor
from kernel.lifecycle.session import Session
from tests.graphs import compile_job


def edges(compiled):
    graph = compiled.stream_graph
    return sorted(
        (e.source_id, e.target_id, e.partitioner.name, e.type_number, e.output_tag.tag_id if e.output_tag else None)
        for e in graph.edges()
    )


def test_ids_follow_creation_order_and_virtual_transformations_take_ids():
    def build(env):
        env.from_collection([1]).map(lambda x: x).key_by(lambda x: x).reduce(lambda a, b: a).print()
        env.execute()

    graph = compile_job(build).stream_graph
    assert {n.id: n.name for n in graph.nodes.values()} == {
        1: "Source: Collection Source", 2: "Map", 4: "Keyed Reduce", 5: "Sink: Print to Std. Out",
    }
    assert graph.source_ids == [1] and graph.sink_ids == [5]


def test_default_partitioner_is_forward_for_equal_parallelism_else_rebalance():
    def build(env):
        env.set_parallelism(2)
        source = env.from_collection([1])  # parallelism 1
        source.map(lambda x: x).name("p2").map(lambda x: x).name("also p2").print()
        env.execute()

    assert edges(compile_job(build)) == [
        (1, 2, "REBALANCE", 0, None), (2, 3, "FORWARD", 0, None), (3, 4, "FORWARD", 0, None),
    ]


def test_explicit_forward_between_different_parallelisms_names_both_operators():
    def build(env):
        env.from_collection([1]).map(lambda x: x).name("Narrow").forward().map(lambda x: x).name("Wide") \
            .set_parallelism(4).print()
        env.execute()

    with pytest.raises(JobDefinitionError) as err:
        compile_job(build)
    assert str(err.value) == (
        "Forward partitioning does not allow change of parallelism. Upstream operation: Narrow-2 parallelism: 1, "
        "downstream operation: Wide-4 parallelism: 4 You must use another partitioning strategy, such as broadcast, "
        "rebalance, shuffle or global."
    )


def test_max_parallelism_below_parallelism_names_the_operator():
    def build(env):
        env.from_collection([1]).map(lambda x: x).name("Crowded").set_parallelism(8).set_max_parallelism(4).print()
        env.execute()

    with pytest.raises(JobDefinitionError, match=r"Vertex 'Crowded''s parallelism \(8\) is higher than the max parallelism \(4\)"):
        compile_job(build)


def test_union_side_outputs_and_two_input_type_numbers():
    tag = OutputTag("late", Types.INT())

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            yield value

    class Both(CoMapFunction):
        def map1(self, value):
            return value

        def map2(self, value):
            return value

    def build(env):
        a = env.from_collection([1], Types.INT())
        b = env.from_collection([2], Types.INT())
        split = a.union(b).process(Split(), Types.INT())
        split.connect(split.get_side_output(tag).rebalance()).map(Both()).print()
        env.execute()

    assert edges(compile_job(build)) == [
        (1, 4, "FORWARD", 0, None), (2, 4, "FORWARD", 0, None),
        (4, 7, "FORWARD", 1, None), (4, 7, "REBALANCE", 2, "late"),
        (7, 8, "FORWARD", 0, None),
    ]


def test_slot_sharing_group_is_inherited_only_when_inputs_agree():
    def build(env):
        a = env.from_collection([1]).map(lambda x: x).name("a").slot_sharing_group("x")
        b = env.from_collection([2]).map(lambda x: x).name("b").slot_sharing_group("y")
        a.map(lambda x: x).name("after a").print()
        a.union(b).map(lambda x: x).name("after union").print()
        env.execute()

    groups = {n.name: n.slot_sharing_group for n in compile_job(build).stream_graph.nodes.values()}
    assert groups["after a"] == "x"
    assert groups["after union"] == "default"
    assert groups["Source: Collection Source"] == "default"


def test_execution_plan_json_is_flinks_format():
    env = StreamExecutionEnvironment.get_execution_environment()
    with use_executor(CapturingExecutor(Session.open(environ={}))):
        env.set_parallelism(4)
        env.from_collection([1, 2, 3]).map(lambda x: x).key_by(lambda x: x).reduce(lambda a, b: a + b).print()
        plan = env.get_execution_plan()
    assert plan == """{
  "nodes" : [ {
    "id" : 1,
    "type" : "Source: Collection Source",
    "pact" : "Data Source",
    "contents" : "Source: Collection Source",
    "parallelism" : 1
  }, {
    "id" : 2,
    "type" : "Map",
    "pact" : "Operator",
    "contents" : "Map",
    "parallelism" : 4,
    "predecessors" : [ {
      "id" : 1,
      "ship_strategy" : "REBALANCE",
      "side" : "second"
    } ]
  }, {
    "id" : 4,
    "type" : "Keyed Reduce",
    "pact" : "Operator",
    "contents" : "Keyed Reduce",
    "parallelism" : 4,
    "predecessors" : [ {
      "id" : 2,
      "ship_strategy" : "HASH",
      "side" : "second"
    } ]
  }, {
    "id" : 5,
    "type" : "Sink: Print to Std. Out",
    "pact" : "Data Sink",
    "contents" : "Sink: Print to Std. Out",
    "parallelism" : 4,
    "predecessors" : [ {
      "id" : 4,
      "ship_strategy" : "FORWARD",
      "side" : "second"
    } ]
  } ]
}"""
    assert [node["id"] for node in json.loads(plan)["nodes"]] == [1, 2, 4, 5]


def test_window_node_is_named_after_its_assigner_and_described_like_flink():
    from kernel.common import Time
    from kernel.datastream.window import TumblingEventTimeWindows

    def summing(a, b):
        return a + b

    def build(env):
        env.from_collection([1]).key_by(lambda x: x).window(TumblingEventTimeWindows.of(Time.seconds(5))) \
            .reduce(summing).print()
        env.execute()

    node = compile_job(build).stream_graph.nodes[3]  # 1 source, 2 keyBy (virtual), 3 window, 4 sink
    assert node.name == "TumblingEventTimeWindows"
    assert node.description == "Window(TumblingEventTimeWindows(5000, 0), EventTimeTrigger, summing)"


def test_sink_to_expands_to_a_writer_operator():
    from kernel.common import Encoder
    from kernel.datastream.connectors.file_system import FileSink

    def build(env):
        env.from_collection(["a"], Types.STRING()).sink_to(FileSink.for_row_format("/tmp/out", Encoder.simple_string_encoder()).build())
        env.execute()

    graph = compile_job(build).stream_graph
    writer = [n for n in graph.nodes.values() if n.name == "Sink: Writer"]
    assert len(writer) == 1 and writer[0].id not in graph.sinks  # an operator, as in Flink


def test_the_plan_of_a_keyed_union_has_pyflinks_values_operator():
    """PyFlink 2.3's ``KeyedStream.union`` (and ``DataStream.union`` of a KeyedStream) first
    maps the keyed stream to its values, an operator named ``_keyed_stream_values_operator``
    at the environment's parallelism, read HASH; the union reads it FORWARD. (PyFlink's plan
    also shows its key_by operator, ``_stream_key_by_map_operator``, which rill does not run.)"""
    env = StreamExecutionEnvironment.get_execution_environment()
    with use_executor(CapturingExecutor(Session.open(environ={}))):
        env.set_parallelism(2)
        pairs = Types.TUPLE([Types.INT(), Types.STRING()])
        a = env.from_collection([(1, "a")], pairs)
        b = env.from_collection([(2, "b")], pairs)
        a.key_by(lambda x: x[0]).union(b.key_by(lambda x: x[1], Types.STRING()), a).map(lambda x: x).print()
        plan = json.loads(env.get_execution_plan())
    types = {node["id"]: node["type"] for node in plan["nodes"]}
    assert [(node["type"], node["parallelism"], [(types[p["id"]], p["ship_strategy"]) for p in node.get("predecessors", [])])
            for node in plan["nodes"]] == [
        ("Source: Collection Source", 1, []),
        ("Source: Collection Source", 1, []),
        ("_keyed_stream_values_operator", 2, [("Source: Collection Source", "HASH")]),
        ("_keyed_stream_values_operator", 2, [("Source: Collection Source", "HASH")]),
        ("Map", 2, [("_keyed_stream_values_operator", "FORWARD"), ("_keyed_stream_values_operator", "FORWARD"),
                    ("Source: Collection Source", "REBALANCE")]),
        ("Sink: Print to Std. Out", 2, [("Map", "FORWARD")]),
    ]

"""StreamGraph -> JobGraph: one test per chaining condition where only that condition fails,
chain names, slot sharing groups, vetoes, and seed 001's WindowWordCount."""

from __future__ import annotations

import runpy
from pathlib import Path

from kernel import hookimpl
from kernel.common import Types
from kernel.datastream.transformations import PartitionTransformation
from kernel.runtime.graph.partitioner import ForwardPartitioner
from kernel.runtime.graph.stream import ChainingStrategy, ExchangeMode, StreamEdge, StreamGraph, StreamNode
from kernel.lifecycle.executors import CapturingExecutor, ProgramCaptured, use_executor
from kernel.lifecycle.session import Session
from plugins.graph.chaining import ChainingRules
from tests.graphs import compile_job, vertex_names

ROOT = Path(__file__).resolve().parents[3]


def pipeline(*adjust, sets=(), plugins=()):
    """source -> map "A" -> map "B" -> print, each step adjustable: adjust[i](stream)."""

    def build(env):
        stream = env.from_collection([1, 2, 3], Types.INT())
        a = stream.map(lambda x: x, Types.INT()).name("A")
        if len(adjust) > 0 and adjust[0]:
            a = adjust[0](a) or a
        b = a.map(lambda x: x, Types.INT()).name("B")
        if len(adjust) > 1 and adjust[1]:
            b = adjust[1](b) or b
        b.print()
        env.execute("pipeline")

    return vertex_names(compile_job(build, *sets, plugins=plugins))


BASELINE = ["Source: Collection Source -> A -> B -> Sink: Print to Std. Out"]


def test_everything_chains_when_all_conditions_hold():
    assert pipeline() == BASELINE


def test_downstream_with_two_inputs_is_a_chain_head():
    def build(env):
        one = env.from_collection([1], Types.INT())
        two = env.from_collection([2], Types.INT())
        one.union(two).map(lambda x: x, Types.INT()).name("A").print()
        env.execute()

    assert sorted(vertex_names(compile_job(build))) == [
        "A -> Sink: Print to Std. Out", "Source: Collection Source", "Source: Collection Source",
    ]


def test_chaining_disabled_in_config_or_environment():
    separate = ["Source: Collection Source", "A", "B", "Sink: Print to Std. Out"]
    assert pipeline(sets=["pipeline.operator-chaining.enabled=false"]) == separate

    def build(env):
        env.disable_operator_chaining()
        env.from_collection([1], Types.INT()).map(lambda x: x).name("A").print()
        env.execute()

    assert vertex_names(compile_job(build)) == ["Source: Collection Source", "A", "Sink: Print to Std. Out"]


def test_different_slot_sharing_groups_break_the_chain():
    assert pipeline(None, lambda b: b.slot_sharing_group("other")) == [
        "Source: Collection Source -> A", "B -> Sink: Print to Std. Out",
    ]


def test_upstream_strategy_never():
    graph = compile_job(lambda env: (env.from_collection([1]).map(lambda x: x).name("A").disable_chaining()
                                     .map(lambda x: x).name("B").print(), env.execute()))
    # A is NEVER: neither source -> A (downstream NEVER) nor A -> B (upstream NEVER) chain
    assert vertex_names(graph) == ["Source: Collection Source", "A", "B -> Sink: Print to Std. Out"]


def test_downstream_strategy_never_only_breaks_its_input():
    assert pipeline(None, lambda b: b.disable_chaining()) == [
        "Source: Collection Source -> A", "B", "Sink: Print to Std. Out",
    ]


def test_downstream_strategy_head_starts_a_chain_that_still_chains_onwards():
    assert pipeline(None, lambda b: b.start_new_chain()) == [
        "Source: Collection Source -> A", "B -> Sink: Print to Std. Out",
    ]


def test_downstream_head_with_sources_only_chains_a_flip27_source():
    from kernel.common import WatermarkStrategy
    from kernel.datastream.connectors.number_seq import NumberSequenceSource

    def head_with_sources(stream):
        stream.get_transformation().chaining_strategy = ChainingStrategy.HEAD_WITH_SOURCES

    assert pipeline(None, head_with_sources) == ["Source: Collection Source -> A", "B -> Sink: Print to Std. Out"]

    def build(env):
        env.set_parallelism(1)
        seq = env.from_source(NumberSequenceSource(1, 3), WatermarkStrategy.no_watermarks(), "Seq")
        mapped = seq.map(lambda x: x).name("A")
        head_with_sources(mapped)
        mapped.print()
        env.execute()

    assert vertex_names(compile_job(build)) == ["Source: Seq -> A -> Sink: Print to Std. Out"]


def _rules_for(up: StreamNode, down: StreamNode, edge: StreamEdge, **graph_options) -> ChainingRules:
    up.out_edges.append(edge)
    down.in_edges.append(edge)
    graph = StreamGraph("t", nodes={up.id: up, down.id: down}, sources={up.id}, **graph_options)
    return ChainingRules(graph, lambda *args: False)


def _map_node(node_id: int, **kwargs) -> StreamNode:
    from kernel.datastream.transformations import OperatorSpec

    return StreamNode(node_id, f"n{node_id}", OperatorSpec("map"), **kwargs)


def test_different_parallelism_breaks_the_chain_even_with_a_forward_edge():
    # The API refuses forward edges between different parallelisms; the rule stands on its own.
    up, down = _map_node(1, parallelism=2), _map_node(2, parallelism=3)
    assert not _rules_for(up, down, StreamEdge(1, 2, 0, ForwardPartitioner())).is_chainable(up.out_edges[0])
    up, down = _map_node(1, parallelism=2), _map_node(2, parallelism=2)
    assert _rules_for(up, down, StreamEdge(1, 2, 0, ForwardPartitioner())).is_chainable(up.out_edges[0])


def test_different_max_parallelism_only_matters_when_configured():
    strict = "pipeline.operator-chaining.chain-operators-with-different-max-parallelism=false"
    assert pipeline(None, lambda b: b.set_max_parallelism(64)) == BASELINE
    # from_collection is non-parallel (max parallelism 1), A and the sink are unset (-1), B is 64:
    assert pipeline(None, lambda b: b.set_max_parallelism(64), sets=[strict]) == [
        "Source: Collection Source", "A", "B", "Sink: Print to Std. Out",
    ]
    same = lambda s: s.set_max_parallelism(64)  # noqa: E731
    assert pipeline(same, same, sets=[strict]) == ["Source: Collection Source", "A -> B", "Sink: Print to Std. Out"]


def test_non_forward_partitioners_break_the_chain():
    for partition in ("rebalance", "rescale", "shuffle", "broadcast", "global_"):
        names = pipeline(lambda a, p=partition: getattr(a, p)())
        assert names == ["Source: Collection Source -> A", "B -> Sink: Print to Std. Out"], partition
    names = pipeline(lambda a: a.key_by(lambda x: x))
    assert names == ["Source: Collection Source -> A", "B -> Sink: Print to Std. Out"]


def test_batch_exchange_breaks_a_forward_chain():
    def batch_forward(stream):
        from kernel.datastream import DataStream

        t = PartitionTransformation(stream._env, stream.get_transformation(), ForwardPartitioner(), ExchangeMode.BATCH)
        return DataStream(stream._env, t)

    assert pipeline(batch_forward) == ["Source: Collection Source -> A", "B -> Sink: Print to Std. Out"]


def test_a_plugin_can_veto_one_edge():
    class NoChainingIntoB:
        @hookimpl
        def allow_chaining(self, edge, upstream, downstream, config):
            return False if downstream.name == "B" else None

    assert pipeline(plugins=[NoChainingIntoB()]) == ["Source: Collection Source -> A", "B -> Sink: Print to Std. Out"]


def test_the_never_policy_is_selected_from_config():
    assert pipeline(sets=["plugins.chaining=never"]) == ["Source: Collection Source", "A", "B", "Sink: Print to Std. Out"]


def test_fan_out_chain_name():
    def build(env):
        source = env.from_collection([1], Types.INT())
        source.map(lambda x: x).name("B").print()
        source.map(lambda x: x).name("C").print()
        env.execute()

    assert vertex_names(compile_job(build)) == [
        "Source: Collection Source -> (B -> Sink: Print to Std. Out, C -> Sink: Print to Std. Out)"
    ]


def test_vertices_are_created_downstream_first_and_wired_with_distribution_patterns():
    def build(env):
        env.set_parallelism(4)
        env.from_collection([1]).map(lambda x: x).name("A").rescale().map(lambda x: x).name("B") \
            .set_parallelism(2).key_by(lambda x: x).reduce(lambda a, b: a).print()
        env.execute()

    compiled = compile_job(build)
    job = compiled.job_graph
    assert [v.name for v in job.vertices] == [
        "Keyed Reduce -> Sink: Print to Std. Out", "B", "A", "Source: Collection Source",
    ]
    edges = [(e.source.producer.name, e.target.name, e.ship_strategy, e.distribution_pattern.value)
             for v in job.topological_order() for e in v.inputs]
    assert edges == [
        ("Source: Collection Source", "A", "REBALANCE", "ALL_TO_ALL"),
        ("A", "B", "RESCALE", "POINTWISE"),
        ("B", "Keyed Reduce -> Sink: Print to Std. Out", "HASH", "ALL_TO_ALL"),
    ]
    assert {v.name: v.invokable for v in job.vertices}["Source: Collection Source"] == "SourceStreamTask"


def test_slot_sharing_groups_are_inherited_and_grouped():
    def build(env):
        env.from_collection([1]).map(lambda x: x).name("A").slot_sharing_group("g1") \
            .map(lambda x: x).name("B").print()
        env.execute()

    job = compile_job(build).job_graph
    assert {v.name: v.slot_sharing_group for v in job.vertices} == {
        "Source: Collection Source": "default", "A -> B -> Sink: Print to Std. Out": "g1",
    }
    assert {name: len(group.vertex_ids) for name, group in job.slot_sharing_groups.items()} == {"default": 1, "g1": 1}


def test_seed_001_window_wordcount_has_the_three_vertices_the_seed_describes():
    session = Session.open(environ={})
    with use_executor(CapturingExecutor(session)):
        try:
            runpy.run_path(str(ROOT / "examples" / "window_wordcount.py"), run_name="__main__")
        except ProgramCaptured as captured:
            from kernel.lifecycle.compiler import compile_program

            compiled = compile_program(session, captured.program)
    job = compiled.job_graph
    described = [(v.name, v.parallelism, v.slot_sharing_group) for v in job.topological_order()]
    assert described == [
        ("Source: Text File", 1, "default"),
        ("Flat Map", 4, "flatMap_sg"),
        ("TumblingEventTimeWindows -> Sink: Print to Std. Out", 3, "sum_sg"),
    ]
    # Slots needed = max parallelism per slot sharing group: 1 + 4 + 3
    needed = {g.name: max(job.vertex(v).parallelism for v in g.vertex_ids) for g in job.slot_sharing_groups.values()}
    assert needed == {"default": 1, "flatMap_sg": 4, "sum_sg": 3}

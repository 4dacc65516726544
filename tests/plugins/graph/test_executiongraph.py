from __future__ import annotations

import pytest

from kernel.common import Types
from kernel.runtime.graph.execution import ExecutionState, IllegalStateTransition
from plugins.graph.executiongraph import pointwise_inputs
from tests.graphs import compile_job, execution_graph

S = ExecutionState


@pytest.mark.parametrize("producers, consumers, expected", [
    (4, 2, [[0, 1], [2, 3]]),
    (2, 4, [[0], [0], [1], [1]]),
    (3, 2, [[0], [1, 2]]),
    (2, 3, [[0], [0], [1]]),
    (5, 3, [[0], [1, 2], [3, 4]]),
    (3, 5, [[0], [0], [1], [1], [2]]),
    (7, 3, [[0, 1], [2, 3], [4, 5, 6]]),
    (3, 3, [[0], [1], [2]]),
])
def test_pointwise_wiring_matches_flink(producers, consumers, expected):
    assert pointwise_inputs(producers, consumers) == expected


def rescaled(producers: int, consumers: int):
    def build(env):
        env.from_collection([1]).map(lambda x: x).name("up").set_parallelism(producers).rescale() \
            .map(lambda x: x).name("down").set_parallelism(consumers).print().set_parallelism(consumers)
        env.execute()

    return execution_graph(compile_job(build))


def test_execution_graph_connects_rescale_pointwise_and_counts_subpartitions():
    graph = rescaled(5, 3)
    up, down = graph.job_vertices[1], graph.job_vertices[2]
    assert [ev.name for ev in up.vertices] == [f"up ({i}/5)" for i in range(1, 6)]
    assert [[p.index for p in ev.inputs[0].partitions] for ev in down.vertices] == [[0], [1, 2], [3, 4]]
    result = up.produced[0]
    assert [[c.subtask for c in p.consumer_vertices[0]] for p in result.partitions] == [[0], [1], [1], [2], [2]]
    assert [p.num_subpartitions() for p in result.partitions] == [1, 1, 1, 1, 1]
    graph = rescaled(2, 5)
    result = graph.job_vertices[1].produced[0]
    assert [[c.subtask for c in p.consumer_vertices[0]] for p in result.partitions] == [[0, 1, 2], [3, 4]]
    assert [p.num_subpartitions() for p in result.partitions] == [3, 2]


def test_all_to_all_every_consumer_reads_every_partition():
    def build(env):
        env.set_parallelism(3)
        env.from_collection([1]).map(lambda x: x).set_parallelism(2).key_by(lambda x: x).reduce(lambda a, b: a).print()
        env.execute()

    graph = execution_graph(compile_job(build))
    reduce = graph.job_vertices[-1]
    assert [[p.index for p in ev.inputs[0].partitions] for ev in reduce.vertices] == [[0, 1]] * 3
    assert all(p.num_subpartitions() == 3 for p in graph.job_vertices[1].produced[0].partitions)
    assert [ejv.max_parallelism for ejv in graph.job_vertices] == [1, 128, 128]


def test_topological_order_and_ids():
    def build(env):
        env.from_collection([1], Types.INT()).map(lambda x: x).set_parallelism(2).print().set_parallelism(2)
        env.execute()

    graph = execution_graph(compile_job(build))
    assert [ejv.name for ejv in graph.job_vertices] == ["Source: Collection Source", "Map -> Sink: Print to Std. Out"]
    ev = graph.job_vertices[1].vertices[1]
    assert graph.vertex(ev.id) is ev
    assert ev.current.attempt == 0 and ev.current.state is S.CREATED


def test_execution_state_machine_allows_flinks_transitions_only():
    graph = rescaled(1, 1)
    execution = graph.job_vertices[0].vertices[0].current
    for target in (S.SCHEDULED, S.DEPLOYING, S.INITIALIZING, S.RUNNING, S.FINISHED):
        assert execution.transition(None, target)
    with pytest.raises(IllegalStateTransition, match="FINISHED -> RUNNING is not allowed"):
        execution.transition(None, S.RUNNING)
    ev = graph.job_vertices[1].vertices[0]
    assert not ev.current.transition(S.RUNNING, S.FAILED)  # compare-and-set: not in RUNNING
    assert ev.current.transition(S.CREATED, S.SCHEDULED)
    with pytest.raises(IllegalStateTransition):
        ev.current.transition(None, S.RUNNING)  # SCHEDULED -> RUNNING skips deployment
    assert ev.current.transition(S.SCHEDULED, S.CANCELED)
    attempt = ev.reset_for_new_execution()
    assert (attempt.attempt, attempt.state, ev.prior_attempts[0].state) == (1, S.CREATED, S.CANCELED)
    assert attempt.transition(None, S.SCHEDULED) and attempt.transition(None, S.DEPLOYING)
    assert attempt.transition(None, S.CANCELING) and attempt.transition(None, S.CANCELED)

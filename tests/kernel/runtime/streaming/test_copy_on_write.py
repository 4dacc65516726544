"""Asynchronous snapshots (``kernel.runtime.streaming.copy_on_write``, ``kernel.runtime.checkpointing.snapshots``):
the synchronous part takes views, the task goes on changing its state — in place too — and
what the asynchronous part encodes afterwards is the state at the barrier; in a realtime run
the encoding happens off the task's thread."""

from __future__ import annotations

import random
import threading

import pytest

from kernel.runtime.checkpointing.format import StateHandle
from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState
from kernel.common import Duration, Time, Types
from kernel.common.watermark_strategy import WatermarkStrategy
from kernel.lifecycle.compiler import compile_program
from kernel.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from kernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.lifecycle.executors import CapturingExecutor, ProgramCaptured, use_executor
from kernel.lifecycle.session import Session
from kernel.runtime.streaming.copy_on_write import SharedTables, frozen, private_copy
from kernel.runtime.streaming.keygroups import key_group_range
from kernel.runtime.streaming.operators.factory import create_operator
from kernel.runtime.streaming.outputs import DiscardingOutput
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo
from runtime import run_job


class Averages(AggregateFunction):
    """A mutable accumulator, changed in place (of numbers, or of the numbers of (key, number) pairs)."""

    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        accumulator[0] += value[1] if isinstance(value, tuple) else value
        accumulator[1] += 1
        return accumulator

    def get_result(self, accumulator):
        return list(accumulator)

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


def ttl():
    return StateTtlConfig.new_builder(Time.seconds(60)).build()


class EveryState(KeyedProcessFunction):
    """Every kind of keyed state, each changed in place where the API allows it; with
    ``with_ttl`` the same states with a time-to-live."""

    def __init__(self, with_ttl: bool = False) -> None:
        self.with_ttl = with_ttl

    def open(self, ctx):
        descriptors = [ValueStateDescriptor("seen", Types.PICKLED_BYTE_ARRAY()),
                       ListStateDescriptor("list", Types.LONG()),
                       MapStateDescriptor("map", Types.LONG(), Types.PICKLED_BYTE_ARRAY()),
                       ReducingStateDescriptor("sum", lambda a, b: a + b, Types.LONG()),
                       AggregatingStateDescriptor("average", Averages(), Types.PICKLED_BYTE_ARRAY())]
        if self.with_ttl:
            for descriptor in descriptors:
                descriptor.enable_time_to_live(ttl())
        self.seen, self.list, self.map, self.sum, self.average = (ctx.get_state(d) if i == 0 else
                                                                  (ctx.get_list_state, ctx.get_map_state,
                                                                   ctx.get_reducing_state,
                                                                   ctx.get_aggregating_state)[i - 1](d)
                                                                  for i, d in enumerate(descriptors))

    def process_element(self, value, ctx):
        seen = self.seen.value()
        if seen is None:
            seen = []
        seen.append(value)  # in place, then written back
        self.seen.update(seen)
        self.list.add(value)
        entry = self.map.get(0)
        if entry is None:
            self.map.put(0, [value])
        else:
            entry.append(value)  # in place, not written back: the map state holds that list
        self.map.put(value, value)
        self.sum.add(value)
        self.average.add(value)
        return ()


class ManualRuntime(OperatorRuntime):
    def __init__(self) -> None:
        super().__init__(TaskInfo("Every", 0, 1, 128), random.Random)

    def now_ms(self) -> int:
        return 1_000

    def schedule(self, when_ms, callback):
        raise AssertionError("no processing-time timers")


def operator_of(build, name: str):
    """A new, opened instance of the operator ``name`` of the job ``build(env)`` makes."""
    session = Session.open(environ={})
    with use_executor(CapturingExecutor(session)):
        env = StreamExecutionEnvironment.get_execution_environment()
        build(env)
        try:
            env.execute()
        except ProgramCaptured as captured:
            graph = compile_program(session, captured.program).stream_graph
    [node] = [n for n in graph.nodes.values() if n.name == name]
    operator = create_operator(node, ManualRuntime())
    operator.output = DiscardingOutput()
    operator.open()
    return operator


def every_state_operator(with_ttl: bool = False):
    def build(env):
        env.from_collection([1], Types.LONG()).key_by(lambda v: v % 3, Types.LONG()) \
            .process(EveryState(with_ttl), Types.LONG()).name("Every").print()

    return operator_of(build, "Every")


def synchronous_part(operator) -> OperatorSnapshot:
    snapshot = OperatorSnapshot(operator.key_group_function())
    operator.snapshot_state(snapshot)
    snapshot.freeze()
    return snapshot


def asynchronous_part(snapshot: OperatorSnapshot) -> StateHandle:
    data, key_groups, operator_state, _ = snapshot.encode()
    snapshot.release()
    return StateHandle(data=data, size=len(data), key_groups=key_groups, operator_state=operator_state)


def restored(handle: StateHandle) -> RestoredOperatorState:
    return RestoredOperatorState.read([(0, handle)], None, key_group_range(128, 1, 0), 0, 1, 1)


def tables(restored_state: RestoredOperatorState) -> dict:
    """The restored keyed state: name -> {(key, namespace): value} (TTL values without their timestamps)."""
    found: dict = {}
    for (name, _, with_ttl), entries in restored_state.tables.items():
        for key, namespace, value in entries:
            if with_ttl:
                value = [v.user_value for v in value] if isinstance(value, list) else \
                    {k: v.user_value for k, v in value.items()} if isinstance(value, dict) else value.user_value
            found.setdefault(name, {})[(key, namespace)] = value
    return found


@pytest.mark.parametrize("with_ttl", [False, True], ids=["plain", "ttl"])
def test_state_changed_in_place_after_the_synchronous_part_is_encoded_as_it_was(with_ttl):
    operator = every_state_operator(with_ttl)
    operator.process_batch([1, 2, 3, 4], None)
    barrier = synchronous_part(operator)
    expected_operator = every_state_operator(with_ttl)  # the same records, never snapshotted: the reference
    expected_operator.process_batch([1, 2, 3, 4], None)
    expected = tables(restored(asynchronous_part(synchronous_part(expected_operator))))

    operator.process_batch([4, 5, 6, 7, 1], None)  # every key, every state, changed in place
    assert tables(restored(asynchronous_part(barrier))) == expected
    assert expected["seen"] == {(1, None): [1, 4], (2, None): [2], (0, None): [3]}
    assert expected["average"] == {(1, None): [5, 2], (2, None): [2, 1], (0, None): [3, 1]}
    assert expected["map"][(1, None)] == {0: [1, 4], 1: 1, 4: 4}

    after = tables(restored(asynchronous_part(synchronous_part(operator))))  # the live state went on
    assert after["seen"] == {(1, None): [1, 4, 4, 7, 1], (2, None): [2, 5], (0, None): [3, 6]}
    assert after["map"][(1, None)] == {0: [1, 4, 4, 7, 1], 1: 1, 4: 4, 7: 7}
    assert after["average"][(1, None)] == [17, 5] and after["sum"][(1, None)] == 17
    assert after["list"][(1, None)] == [1, 4, 4, 7, 1]


def test_views_are_released_once_every_pending_snapshot_is_encoded():
    operator = every_state_operator()
    operator.process_batch([1, 2], None)
    backend = operator.backend
    first = synchronous_part(operator)
    second = synchronous_part(operator)
    assert backend.shared_views
    asynchronous_part(second)
    assert backend.shared_views  # the first one's views are still read
    asynchronous_part(first)
    assert not backend.shared_views


class Elements(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, [value for _, value in elements]


def window_operator(function):
    def build(env):
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)) \
            .with_timestamp_assigner(lambda value, previous: value[1])
        windowed = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.LONG()])) \
            .assign_timestamps_and_watermarks(strategy) \
            .key_by(lambda value: value[0], Types.STRING()) \
            .window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
        (windowed.process(function) if isinstance(function, ProcessWindowFunction) else windowed.aggregate(function)) \
            .name("Windows").print()

    return operator_of(build, "Windows")


@pytest.mark.parametrize("function", [Elements(), Averages()], ids=["process", "aggregate"])
def test_window_contents_added_to_after_the_synchronous_part_are_encoded_as_they_were(function):
    operator = window_operator(function)
    records = [("a", 1), ("b", 2), ("a", 3), ("a", 12)]
    operator.process_batch(records, [value for _, value in records])
    barrier = synchronous_part(operator)
    operator.process_batch([("a", 4), ("b", 5), ("a", 13)], [4, 5, 13])
    contents = tables(restored(asynchronous_part(barrier)))["window-contents"]
    by_window = {(key, window.start): value for (key, window), value in contents.items()}
    if isinstance(function, Elements):
        assert by_window == {("a", 0): [("a", 1), ("a", 3)], ("b", 0): [("b", 2)], ("a", 10): [("a", 12)]}
    else:
        assert by_window == {("a", 0): [4, 2], ("b", 0): [2, 1], ("a", 10): [12, 1]}


def test_values_that_cannot_change_are_never_copied():
    for value in (1, "a", b"b", 1.5, None, (1, "a", (2, None)), frozenset({1})):
        assert frozen(value) and private_copy(value) is value
    for value in ([1], {"a": 1}, (1, [2]), Averages()):
        copied = private_copy(value)
        assert not frozen(value) and copied is not value
    nested = {"a": [1, 2]}
    copied = private_copy(nested)
    copied["a"].append(3)
    assert nested == {"a": [1, 2]}


def test_a_value_moved_to_another_slot_is_copied_when_taken():
    shared = SharedTables()
    table = {("k", "w1"): [1], ("k", "w2"): [2]}
    shared.snapshot_started()
    view = shared.share(table)
    moved = shared.own(table, ("k", "w1"), table.pop(("k", "w1")), kept=False)
    moved.append(3)
    assert view == {("k", "w1"): [1], ("k", "w2"): [2]} and ("k", "w1") not in table
    shared.snapshot_released()
    assert not shared.views


# -- in a running job ----------------------------------------------------------------------------

ENCODED_IN: list[str] = []  # the threads a checkpoint pickled Recorder values in


class Recorder:
    """A state value that notes the thread it is pickled in."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __reduce__(self):
        ENCODED_IN.append(threading.current_thread().name)
        return Recorder, (self.count,)


class Count(KeyedProcessFunction):
    def open(self, ctx):
        self.state = ctx.get_state(ValueStateDescriptor("count", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        current = self.state.value() or Recorder(0)
        current.count += 1  # in place: the view of a pending snapshot keeps its own copy
        self.state.update(current)
        yield value, current.count


def counting(env):
    from kernel.datastream.connectors.datagen import DataGeneratorSource

    env.set_parallelism(1)
    env.from_source(DataGeneratorSource(lambda i: i % 5, count=200, records_per_second=1_000),
                    WatermarkStrategy.no_watermarks(), "Numbers") \
        .key_by(lambda v: v, Types.LONG()).process(Count()).name("Count").print()
    env.execute("counting")


def test_a_realtime_task_encodes_its_state_off_its_thread_and_counts_stay_exact(tmp_path):
    ENCODED_IN.clear()
    job = run_job(counting, "rill.clock=realtime", "execution.checkpointing.interval=20ms",
                  f"execution.checkpointing.dir={tmp_path}")
    assert job.outcome.status == "FINISHED"
    assert sorted(job.lines) == sorted(f"({i % 5}, {i // 5 + 1})" for i in range(200))
    # pickled by the checkpoints' asynchronous parts in threads of their own (and, for values a
    # pending snapshot shared when the task changed them, by the task's copy on write)
    assert any(name.startswith("rill-snapshot Count") for name in ENCODED_IN)
    assert {name.split(" ")[0] for name in ENCODED_IN} <= {"rill-snapshot", "rill-task"}

"""State time-to-live: StateTtlConfig as PyFlink declares it, and expiry on the kernel clock
for every keyed state kind, exact at the boundary (expired once last access + ttl <= now)."""

from __future__ import annotations

import pytest

from kernel.common import Types, WatermarkStrategy
from kernel.common.time import Duration, Time
from kernel.datastream import AggregateFunction, KeyedProcessFunction
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from kernel.runtime.streaming.state import KeyedStateBackend, ValueStateImpl
from kernel.runtime.streaming.ttl import TtlValue
from tests.runtime import run_job


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def ttl(millis: int = 100) -> StateTtlConfig.Builder:
    return StateTtlConfig.new_builder(Time.milliseconds(millis))


def state_of(descriptor, config: StateTtlConfig, key: str = "k"):
    clock = Clock()
    backend = KeyedStateBackend(clock)
    descriptor.enable_time_to_live(config)
    backend.current_key = key
    return backend, clock, backend.get_state(descriptor)


# -- the configuration -------------------------------------------------------------------------


def test_builder_defaults_and_getters_as_pyflink():
    config = StateTtlConfig.new_builder(Time.seconds(1)).build()
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert config.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
    assert config.get_ttl_time_characteristic() is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
    assert config.get_ttl().to_milliseconds() == 1000 and config.is_enabled()
    strategies = config.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background() and not strategies.in_full_snapshot()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert (incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record()) == (5, False)
    rocksdb = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert rocksdb.get_query_time_after_num_entries() == 1000
    assert rocksdb.get_periodic_compaction_time() == Duration.of_days(30)


def test_builder_settings():
    config = (StateTtlConfig.new_builder(Duration.of_seconds(5)).update_ttl_on_read_and_write()
              .return_expired_if_not_cleaned_up().use_processing_time().cleanup_full_snapshot()
              .cleanup_incrementally(10, True).cleanup_in_rocksdb_compact_filter(50, Duration.of_hours(1))
              .disable_cleanup_in_background().set_ttl(Time.minutes(1)).build())
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
    assert config.get_state_visibility() is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
    assert config.get_ttl().to_milliseconds() == 60_000
    strategies = config.get_cleanup_strategies()
    assert strategies.in_full_snapshot() and not strategies.is_cleanup_in_background()
    assert strategies.get_incremental_cleanup_strategy().get_cleanup_size() == 10
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy().get_periodic_compaction_time() == Duration.of_hours(1)
    bare = StateTtlConfig.new_builder(Time.seconds(1)).disable_cleanup_in_background().build()
    assert bare.get_cleanup_strategies().get_incremental_cleanup_strategy() is None
    assert not ttl().set_update_type(StateTtlConfig.UpdateType.Disabled).build().is_enabled()
    with pytest.raises(ValueError, match="TTL is expected to be positive"):
        StateTtlConfig.new_builder(Time.milliseconds(0)).build()
    with pytest.raises(TypeError, match="needs a StateTtlConfig"):
        ValueStateDescriptor("v", Types.INT()).enable_time_to_live(Time.seconds(1))


# -- expiry of each state kind -----------------------------------------------------------------


def test_value_expires_exactly_ttl_after_its_write_and_reads_do_not_renew_it():
    backend, clock, state = state_of(ValueStateDescriptor("v", Types.INT()), ttl(100).build())
    state.update(7)
    assert backend.table("v") == {("k", None): TtlValue(7, 0)}  # the stored pair a snapshot carries
    clock.now = 99
    assert state.value() == 7
    clock.now = 100
    assert state.value() is None
    assert backend.table("v") == {}  # removed as it was read
    state.update(8)
    clock.now = 150
    state.update(9)  # writes renew
    clock.now = 249
    assert state.value() == 9


def test_on_read_and_write_renews_on_every_read():
    _, clock, state = state_of(ValueStateDescriptor("v", Types.INT()), ttl(100).update_ttl_on_read_and_write().build())
    state.update(1)
    for clock.now in (90, 180, 270):
        assert state.value() == 1
    clock.now = 370
    assert state.value() is None


def test_return_expired_if_not_cleaned_up_returns_it_once_then_it_is_gone():
    _, clock, state = state_of(ValueStateDescriptor("v", Types.INT()),
                               ttl(100).return_expired_if_not_cleaned_up().disable_cleanup_in_background().build())
    state.update(1)
    clock.now = 500
    assert state.value() == 1
    assert state.value() is None


def test_background_cleanup_runs_before_the_read_it_comes_with():
    """As Flink's TTL states, every access first runs the incremental cleanup: here it checks
    the only entry, finds it expired and removes it, so even ReturnExpiredIfNotCleanedUp reads None."""
    _, clock, state = state_of(ValueStateDescriptor("v", Types.INT()), ttl(100).return_expired_if_not_cleaned_up().build())
    state.update(1)
    clock.now = 500
    assert state.value() is None


def test_disabled_update_type_means_no_ttl():
    _, clock, state = state_of(ValueStateDescriptor("v", Types.INT()),
                               ttl(100).set_update_type(StateTtlConfig.UpdateType.Disabled).build())
    assert type(state) is ValueStateImpl
    state.update(1)
    clock.now = 10**9
    assert state.value() == 1


def test_list_elements_expire_individually():
    backend, clock, state = state_of(ListStateDescriptor("l", Types.STRING()), ttl(100).build())
    state.add("a")
    clock.now = 50
    state.add_all(["b", "c"])
    clock.now = 100
    assert state.get() == ["b", "c"]
    clock.now = 150
    assert state.get() == []
    assert backend.table("l") == {}  # all expired: the list is cleared


def test_list_read_and_write_and_return_expired():
    backend, clock, state = state_of(ListStateDescriptor("l", Types.STRING()),
                                     ttl(100).update_ttl_on_read_and_write().return_expired_if_not_cleaned_up()
                                     .disable_cleanup_in_background().build())
    state.add("a")
    clock.now = 60
    state.add("b")
    clock.now = 120
    assert state.get() == ["a", "b"]  # a is expired but not cleaned up yet
    assert backend.table("l") == {("k", None): [TtlValue("b", 120)]}  # the read renewed b, dropped a
    clock.now = 219
    assert state.get() == ["b"]


def test_map_entries_expire_individually():
    backend, clock, state = state_of(MapStateDescriptor("m", Types.STRING(), Types.INT()), ttl(100).build())
    state.put("x", 1)
    clock.now = 50
    state.put_all({"y": 2, "z": 3})
    clock.now = 100
    assert state.get("x") is None and not state.contains("x")
    assert state.contains("y") and state.get("z") == 3
    assert sorted(state.items()) == [("y", 2), ("z", 3)]
    assert sorted(state.keys()) == ["y", "z"] and not state.is_empty()
    clock.now = 150
    assert state.is_empty() and list(state.values()) == []
    assert backend.table("m") == {}


def test_map_return_expired_lists_an_expired_entry_once():
    _, clock, state = state_of(MapStateDescriptor("m", Types.STRING(), Types.INT()),
                               ttl(100).return_expired_if_not_cleaned_up().disable_cleanup_in_background().build())
    state.put("x", 1)
    clock.now = 30
    state.put("y", 2)
    clock.now = 100
    assert sorted(state.items()) == [("x", 1), ("y", 2)]
    assert state.items() == [("y", 2)]


def test_reducing_state_starts_over_after_expiry():
    _, clock, state = state_of(ReducingStateDescriptor("r", lambda a, b: a + b, Types.INT()), ttl(100).build())
    state.add(1)
    clock.now = 60
    state.add(2)  # 3, renewed at 60
    clock.now = 159
    assert state.get() == 3
    state.add(10)  # 13, renewed at 159
    clock.now = 259
    state.add(5)  # the accumulator expired at 259: 5
    assert state.get() == 5


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


def test_aggregating_state_starts_over_after_expiry():
    _, clock, state = state_of(AggregatingStateDescriptor("avg", Average(), Types.TUPLE([Types.INT(), Types.INT()])),
                               ttl(100).build())
    state.add(2)
    clock.now = 50
    state.add(4)
    assert state.get() == 3.0
    clock.now = 150
    assert state.get() is None
    state.add(10)
    assert state.get() == 10.0


# -- cleanup -------------------------------------------------------------------------------------


def stale_keys(config: StateTtlConfig, count: int):
    """``count`` keys written at t=0; the clock then moved past their expiry."""
    backend, clock, state = state_of(ValueStateDescriptor("v", Types.INT()), config)
    for i in range(count):
        backend.current_key = i
        state.update(i)
    clock.now = 1000
    return backend, state


def test_incremental_cleanup_removes_keys_nobody_reads_again():
    """Background cleanup: each access checks the next 5 keys of a pass, a copy of the state's
    keys taken when the previous pass is used up. The 20 writes (k0..k19, each access before
    its key is added) left a pass of k0..k17 checked up to k9; at t=1000 the accesses remove
    k10..k14, then k15..k17, then from a new pass k0..k4, k5..k9, and k18, k19."""
    backend, state = stale_keys(ttl(100).build(), 20)
    backend.current_key = "live"
    sizes = []
    for _ in range(6):
        state.update(1)
        sizes.append(len(backend.table("v")))
    assert sizes == [16, 13, 8, 3, 1, 1]
    assert backend.table("v") == {("live", None): TtlValue(1, 1000)}


def test_without_background_cleanup_expired_keys_stay_until_read():
    backend, state = stale_keys(ttl(100).disable_cleanup_in_background().build(), 20)
    backend.current_key = "live"
    for _ in range(10):
        state.update(1)
    assert len(backend.table("v")) == 21


def test_cleanup_for_every_record_runs_when_the_key_changes():
    backend, _ = stale_keys(ttl(100).cleanup_incrementally(4, True).build(), 12)
    sizes = []
    for key in ("p", "q", "r", "s"):
        backend.current_key = key  # a record (or timer) of another key: the state is not touched
        sizes.append(len(backend.table("v")))
    assert sizes == [8, 4, 0, 0]
    assert backend.current_key == "s"


# -- in a job, on the simulated clock -------------------------------------------------------------


class Remember(KeyedProcessFunction):
    """Reads then (for writes) updates two TTL states of 1 s: one renewed by writes only, one by
    reads too."""

    def open(self, runtime_context):
        written = ValueStateDescriptor("written", Types.INT())
        written.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1)).build())
        touched = ValueStateDescriptor("touched", Types.INT())
        touched.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1)).update_ttl_on_read_and_write().build())
        self.written = runtime_context.get_state(written)
        self.touched = runtime_context.get_state(touched)

    def process_element(self, value, ctx):
        key, index, write = value
        now = ctx.timer_service().current_processing_time()
        yield f"{now} {key} {self.written.value()} {self.touched.value()}"
        if write:
            self.written.update(index)
            self.touched.update(index)


def test_ttl_expires_on_the_simulated_processing_time():
    """Record i reaches the function at processing time 100 * i (one per 100 ms, sent at once:
    buffer timeout 0)."""
    script = {0: ("a", True), 1: ("b", True), 8: ("b", False), 9: ("a", False), 10: ("a", False),
              11: ("b", False), 19: ("b", False), 20: ("a", False)}
    records = [(script.get(i, ("x", False))[0], i, script.get(i, ("x", False))[1]) for i in range(23)]

    def build(env):
        source = DataGeneratorSource(records.__getitem__, count=len(records), records_per_second=10)
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Script") \
            .key_by(lambda r: r[0], Types.STRING()).process(Remember(), Types.STRING()).print()
        env.execute()

    lines = [line for line in run_job(build, "execution.buffer-timeout.interval=0").lines if " x " not in line]
    assert lines == [
        "0 a None None", "100 b None None",
        "800 b 1 1",  # 700 ms after b's write; the read renews b's "touched" to 800
        "900 a 0 0",
        "1000 a None 0",  # exactly 1000 ms after a's write: "written" has expired, "touched" was read at 900
        "1100 b None 1",  # the same for b at 1100; b's "touched" lives until 800 + 1000, renewed to 1100
        "1900 b None 1",
        "2000 a None None",  # a's "touched" was last read at 1000
    ]


class Unique(KeyedProcessFunction):
    """Every record has its own key: counts it in a TTL state and reports the state's size."""

    def __init__(self, config: StateTtlConfig) -> None:
        self.config = config

    def open(self, runtime_context):
        descriptor = ValueStateDescriptor("seen", Types.INT())
        descriptor.enable_time_to_live(self.config)
        self.seen = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):
        self.seen.update((self.seen.value() or 0) + 1)
        yield len(self.seen.table)


def state_sizes(config: StateTtlConfig) -> list[int]:
    def build(env):
        source = DataGeneratorSource(lambda i: i, count=300, records_per_second=10)
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Keys") \
            .key_by(lambda i: i, Types.INT()).process(Unique(config), Types.INT()).print()
        env.execute()

    return [int(line) for line in run_job(build, "execution.buffer-timeout.interval=0").lines]


def test_incremental_cleanup_keeps_memory_bounded_on_an_unbounded_key_space():
    """300 keys, one every 100 ms (sent at once), TTL 1 s: 10 are alive at any time. With the
    default background cleanup (5 entries per state access, 2 accesses per record) the state
    holds exactly the live keys; without it, every key."""
    sizes = state_sizes(StateTtlConfig.new_builder(Time.seconds(1)).build())
    assert sizes == list(range(1, 11)) + [10] * 290
    unbounded = state_sizes(StateTtlConfig.new_builder(Time.seconds(1)).disable_cleanup_in_background().build())
    assert unbounded == list(range(1, 301))


def test_window_state_with_ttl_merges_only_live_accumulators():
    """Window namespaces of a TTL reducing state merge as Flink's TtlReduceFunction: an expired
    first value is dropped, the merged value is renewed."""
    clock = Clock()
    backend = KeyedStateBackend(clock)
    descriptor = ReducingStateDescriptor("sum", lambda a, b: a + b, Types.INT())
    descriptor.enable_time_to_live(ttl(100).disable_cleanup_in_background().build())
    backend.current_key = "k"
    backend.bound_state(descriptor, "w1").add(1)
    clock.now = 80
    backend.bound_state(descriptor, "w2").add(2)
    backend.bound_state(descriptor, "w3").add(3)
    clock.now = 120
    backend.bound_state(descriptor, "w1").merge("w1", ["w2", "w3"])  # as the WindowOperator merges
    assert backend.table("sum") == {("k", "w1"): TtlValue(5, 120)}  # w1's 1 had expired at 100
    assert backend.bound_state(descriptor, "w1").get() == 5


def test_a_state_cannot_switch_ttl_on_or_off():
    """Flink refuses it too (TTL changes how values are stored: StateMigrationException)."""
    backend = KeyedStateBackend(Clock())
    backend.current_key = "k"
    backend.get_state(ValueStateDescriptor("v", Types.INT())).update(1)
    with_ttl = ValueStateDescriptor("v", Types.INT())
    with_ttl.enable_time_to_live(ttl(100).build())
    with pytest.raises(ValueError, match="state 'v' is registered without a TTL"):
        backend.bound_state(with_ttl, "window")

"""``StateTtlConfig``: state time-to-live as PyFlink declares it (``pyflink.datastream.state``).

``descriptor.enable_time_to_live(config)`` makes keyed state expire ``ttl`` after its last
access, on processing time (rill's kernel clock). The runtime side is
``kernel.runtime.streaming.ttl``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from kernel.common.time import Duration, Time, to_millis


class StateTtlConfig:
    """Configuration of state TTL; built with ``StateTtlConfig.new_builder(ttl)``."""

    class UpdateType(Enum):
        """When the last access timestamp, which prolongs the state's life, is updated."""

        Disabled = 0
        """TTL is disabled: state does not expire."""
        OnCreateAndWrite = 1
        """On creation and on every write."""
        OnReadAndWrite = 2
        """As OnCreateAndWrite, and on every read."""

    class StateVisibility(Enum):
        """Whether an expired value may still be returned."""

        ReturnExpiredIfNotCleanedUp = 0
        """Return an expired value if it is not cleaned up yet (it is cleaned up as it is read)."""
        NeverReturnExpired = 1
        """Never return an expired value."""

    class TtlTimeCharacteristic(Enum):
        """The time scale TTL is measured on: processing time only."""

        ProcessingTime = 0

    def __init__(self, update_type: UpdateType, state_visibility: StateVisibility,
                 ttl_time_characteristic: TtlTimeCharacteristic, ttl: Time | Duration,
                 cleanup_strategies: StateTtlConfig.CleanupStrategies) -> None:
        if to_millis(ttl) <= 0:
            raise ValueError("TTL is expected to be positive.")
        self._update_type = update_type
        self._state_visibility = state_visibility
        self._ttl_time_characteristic = ttl_time_characteristic
        self._ttl = ttl
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: Time | Duration) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self._update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self._state_visibility

    def get_ttl(self) -> Time | Duration:
        return self._ttl

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> StateTtlConfig.CleanupStrategies:
        return self._cleanup_strategies

    def __repr__(self) -> str:
        return (f"StateTtlConfig<update_type={self._update_type}, state_visibility={self._state_visibility},"
                f"ttl_time_characteristic ={self._ttl_time_characteristic},ttl={self._ttl}>")

    class Builder:
        """Builder of a ``StateTtlConfig`` (defaults: OnCreateAndWrite, NeverReturnExpired,
        processing time, cleanup in background)."""

        def __init__(self, ttl: Time | Duration) -> None:
            self._ttl = ttl
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._state_visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._ttl_time_characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._is_cleanup_in_background = True
            self._strategies: dict[StateTtlConfig.CleanupStrategies.Strategies, Any] = {}

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, state_visibility: StateTtlConfig.StateVisibility) -> StateTtlConfig.Builder:
            self._state_visibility = state_visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
                self, ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic) -> StateTtlConfig.Builder:
            self._ttl_time_characteristic = ttl_time_characteristic
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            """Leave expired state out of full snapshots (local state is untouched)."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.FULL_STATE_SCAN_SNAPSHOT] = strategies.EMPTY_STRATEGY
            return self

        def cleanup_incrementally(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> StateTtlConfig.Builder:
            """On every access of the state, check ``cleanup_size`` entries of a lazy pass over all
            of its keys and remove the expired ones; also on every record if asked."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.INCREMENTAL_CLEANUP] = strategies.IncrementalCleanupStrategy(
                cleanup_size, run_cleanup_for_every_record)
            return self

        def cleanup_in_rocksdb_compact_filter(self, query_time_after_num_entries: int,
                                              periodic_compaction_time: Duration | None = None) -> StateTtlConfig.Builder:
            """Drop expired entries in RocksDB compactions (rill keeps state on the heap: no effect)."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.ROCKSDB_COMPACTION_FILTER] = \
                strategies.RocksdbCompactFilterCleanupStrategy(query_time_after_num_entries, periodic_compaction_time)
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """No default background cleanup (a strategy configured explicitly still runs)."""
            self._is_cleanup_in_background = False
            return self

        def set_ttl(self, ttl: Time | Duration) -> StateTtlConfig.Builder:
            self._ttl = ttl
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(self._update_type, self._state_visibility, self._ttl_time_characteristic, self._ttl,
                                  StateTtlConfig.CleanupStrategies(dict(self._strategies), self._is_cleanup_in_background))

    class CleanupStrategies:
        """When expired state is cleaned up besides being read: in full snapshots, incrementally on
        access, in RocksDB compactions. Background cleanup (the default) means incremental
        cleanup of 5 entries per access on the heap."""

        class Strategies(Enum):
            FULL_STATE_SCAN_SNAPSHOT = 0
            INCREMENTAL_CLEANUP = 1
            ROCKSDB_COMPACTION_FILTER = 2

        class CleanupStrategy:
            """Base of the strategies' settings."""

        class EmptyCleanupStrategy(CleanupStrategy):
            pass

        class IncrementalCleanupStrategy(CleanupStrategy):
            def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> None:
                if cleanup_size < 0:
                    raise ValueError("Number of incrementally cleaned up state entries cannot be negative.")
                self._cleanup_size = cleanup_size
                self._run_cleanup_for_every_record = run_cleanup_for_every_record

            def get_cleanup_size(self) -> int:
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                return self._run_cleanup_for_every_record

        class RocksdbCompactFilterCleanupStrategy(CleanupStrategy):
            def __init__(self, query_time_after_num_entries: int, periodic_compaction_time: Duration | None = None) -> None:
                self._query_time_after_num_entries = query_time_after_num_entries
                self._periodic_compaction_time = periodic_compaction_time or Duration.of_days(30)

            def get_query_time_after_num_entries(self) -> int:
                return self._query_time_after_num_entries

            def get_periodic_compaction_time(self) -> Duration:
                return self._periodic_compaction_time

        EMPTY_STRATEGY = EmptyCleanupStrategy()

        def __init__(self, strategies: dict[Any, Any], is_cleanup_in_background: bool) -> None:
            self._strategies = strategies
            self._is_cleanup_in_background = is_cleanup_in_background

        def is_cleanup_in_background(self) -> bool:
            return self._is_cleanup_in_background

        def in_full_snapshot(self) -> bool:
            return StateTtlConfig.CleanupStrategies.Strategies.FULL_STATE_SCAN_SNAPSHOT in self._strategies

        def get_incremental_cleanup_strategy(self) -> StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None:
            strategies = StateTtlConfig.CleanupStrategies
            default = strategies.IncrementalCleanupStrategy(5, False) if self._is_cleanup_in_background else None
            return self._strategies.get(strategies.Strategies.INCREMENTAL_CLEANUP, default)

        def get_rocksdb_compact_filter_cleanup_strategy(
                self) -> StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy | None:
            strategies = StateTtlConfig.CleanupStrategies
            default = strategies.RocksdbCompactFilterCleanupStrategy(1000) if self._is_cleanup_in_background else None
            return self._strategies.get(strategies.Strategies.ROCKSDB_COMPACTION_FILTER, default)

"""Keyed state with time-to-live, as Flink's TTL state decorators (``TtlValueState``, ...).

A TTL state stores every value with its last access time: a ``TtlValue(user_value,
last_access_timestamp)`` in place of the value (value, reducing and aggregating state), of
each list element, of each map entry's value. That pair is what a snapshot carries. A value is
expired once ``last_access_timestamp + ttl <= now`` (processing time from the kernel clock).
Reading an expired value removes it (and returns it only with ReturnExpiredIfNotCleanedUp);
writes, and reads with OnReadAndWrite, renew the timestamp. Incremental cleanup checks a few
entries of a lazy pass over the whole state on every access (and on every record if asked), so
expired keys that are never read again do not stay in memory.

States without TTL are the plain classes of ``kernel.runtime.streaming.state``: no per-access cost.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

from kernel.common.time import to_millis
from kernel.datastream import state as api
from kernel.datastream.state_ttl import StateTtlConfig
from kernel.clock import MAX_LONG
from kernel.runtime.streaming.keyed_state import KeyedState


class TtlValue(NamedTuple):
    user_value: Any
    last_access_timestamp: int


class TtlSettings:
    """The TTL of one state (shared by all objects of it) and its incremental cleanup."""

    __slots__ = ("ttl", "update_on_read", "return_expired", "now", "cleanup", "cleanup_every_record")

    def __init__(self, config: StateTtlConfig, now: Callable[[], int], table: dict, unexpired: Callable) -> None:
        self.ttl = to_millis(config.get_ttl())
        self.update_on_read = config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
        self.return_expired = config.get_state_visibility() is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        self.now = now
        strategy = config.get_cleanup_strategies().get_incremental_cleanup_strategy()
        self.cleanup = IncrementalCleanup(table, strategy.get_cleanup_size(), lambda v: unexpired(self, v)) \
            if strategy is not None and strategy.get_cleanup_size() > 0 else None
        self.cleanup_every_record = self.cleanup is not None and strategy.run_cleanup_for_every_record()

    def expired(self, value: TtlValue, now: int) -> bool:
        stamp = value.last_access_timestamp
        return (stamp + self.ttl if stamp < MAX_LONG - self.ttl else MAX_LONG) <= now

    def accessed(self) -> None:
        if self.cleanup is not None:
            self.cleanup.run()


class IncrementalCleanup:
    """Flink's ``TtlIncrementalCleanup`` on the heap: a lazy pass over a copy of the state's
    slots, ``size`` of them checked per call; a new pass starts when one ends."""

    __slots__ = ("table", "size", "unexpired", "pending", "position")

    def __init__(self, table: dict, size: int, unexpired: Callable[[Any], Any]) -> None:
        self.table = table
        self.size = size
        self.unexpired = unexpired
        self.pending: list = []
        self.position = 0

    def run(self) -> None:
        table, unexpired = self.table, self.unexpired
        if self.position >= len(self.pending):
            self.pending, self.position = list(table), 0
        end = min(self.position + self.size, len(self.pending))
        for slot in self.pending[self.position:end]:
            stored = table.get(slot)
            if stored is None:
                continue
            kept = unexpired(stored)
            if kept is None:
                del table[slot]
            elif kept is not stored:
                table[slot] = kept
        self.position = end


def _unexpired_value(ttl: TtlSettings, stored: TtlValue) -> TtlValue | None:
    return None if ttl.expired(stored, ttl.now()) else stored


def _unexpired_elements(ttl: TtlSettings, stored: list) -> list | None:
    now = ttl.now()
    kept = [element for element in stored if not ttl.expired(element, now)]
    return stored if len(kept) == len(stored) else kept or None


def _unexpired_entries(ttl: TtlSettings, stored: dict) -> dict | None:
    now = ttl.now()
    kept = {k: v for k, v in stored.items() if not ttl.expired(v, now)}
    return stored if len(kept) == len(stored) else kept or None


class _TtlState(KeyedState):
    __slots__ = ("ttl",)

    def __init__(self, ttl: TtlSettings, backend: Any, table: dict, descriptor: api.StateDescriptor,
                 namespace: Any = None) -> None:
        super().__init__(backend, table, descriptor, namespace)
        self.ttl = ttl

    def clear(self) -> None:
        super().clear()
        self.ttl.accessed()

    def _checked(self, slot: Any, stored: TtlValue | None) -> TtlValue | None:
        """Flink's ``getWrappedWithTtlCheckAndUpdate`` on one stored pair of ``slot``."""
        if stored is None:
            return None
        ttl = self.ttl
        now = ttl.now()
        if ttl.expired(stored, now):
            del self.table[slot]
            return stored if ttl.return_expired else None
        if ttl.update_on_read:
            self.table[slot] = TtlValue(stored.user_value, now)
        return stored

    def _live(self, stored: TtlValue, now: int) -> bool:
        return self.ttl.return_expired or not self.ttl.expired(stored, now)


class _TtlMergingState(_TtlState):
    """Reducing and aggregating state: windows' namespaces merge through ``_merge_pair``."""

    __slots__ = ()

    def _merge_pair(self, first: TtlValue, second: TtlValue, now: int) -> TtlValue | None:
        raise NotImplementedError

    def merge(self, target: Any, sources: Iterable[Any]) -> None:
        """Flink's ``mergeNamespaces``: the sources merged in order, then into the target."""
        key, table, now = self.backend.current_key, self.table, self.ttl.now()
        merged = None
        for source in sources:
            if source == target:
                continue
            stored = self._taken((key, source))
            if stored is not None:
                merged = stored if merged is None else self._merge_pair(merged, stored, now)
        if merged is not None:
            current = self._owned((key, target))
            result = merged if current is None else self._merge_pair(current, merged, now)
            if result is None:
                table.pop((key, target), None)
            else:
                table[(key, target)] = result


class TtlValueState(_TtlState, api.ValueState):
    __slots__ = ()

    def value(self) -> Any:
        self.ttl.accessed()
        slot = self._slot()
        checked = self._checked(slot, self._owned(slot))
        return None if checked is None else checked.user_value

    def update(self, value: Any) -> None:
        self.ttl.accessed()
        if value is None:
            self.table.pop(self._slot(), None)
        else:
            self.table[self._slot()] = TtlValue(value, self.ttl.now())


class TtlReducingState(_TtlMergingState, api.ReducingState):
    __slots__ = ()

    def get(self) -> Any:
        self.ttl.accessed()
        slot = self._slot()
        checked = self._checked(slot, self._owned(slot))
        return None if checked is None else checked.user_value

    def _merge_pair(self, first: TtlValue, second: TtlValue, now: int) -> TtlValue:
        """``TtlReduceFunction``: an expired first value is dropped unless expired values are returned."""
        if self._live(first, now):
            return TtlValue(self.descriptor.get_reduce_function()(first.user_value, second.user_value), now)
        return TtlValue(second.user_value, now)

    def add(self, value: Any) -> None:
        self.ttl.accessed()
        slot, now = self._slot(), self.ttl.now()
        current = self._owned(slot)
        added = TtlValue(value, now)
        self.table[slot] = added if current is None else self._merge_pair(current, added, now)


class TtlAggregatingState(_TtlMergingState, api.AggregatingState):
    __slots__ = ()

    def get(self) -> Any:
        self.ttl.accessed()
        slot = self._slot()
        checked = self._checked(slot, self._owned(slot))
        return None if checked is None else self.descriptor.agg_function.get_result(checked.user_value)

    def add(self, value: Any) -> None:
        self.ttl.accessed()
        if value is None:
            self.table.pop(self._slot(), None)
            return
        slot = self._slot()
        function, now = self.descriptor.agg_function, self.ttl.now()
        stored = self._owned(slot)
        accumulator = stored.user_value if stored is not None and self._live(stored, now) else function.create_accumulator()
        self.table[slot] = TtlValue(function.add(value, accumulator), now)

    def _merge_pair(self, first: TtlValue, second: TtlValue, now: int) -> TtlValue | None:
        """``TtlAggregateFunction.merge``: the live accumulators merged, renewed."""
        live = [stored.user_value for stored in (first, second) if self._live(stored, now)]
        if not live:
            return None
        return TtlValue(self.descriptor.agg_function.merge(*live) if len(live) == 2 else live[0], now)


class TtlListState(_TtlState, api.ListState):
    """Each element carries its own timestamp and expires on its own."""

    __slots__ = ()

    def get(self) -> list:
        self.ttl.accessed()
        slot = self._slot()
        stored = self._owned(slot)
        if not stored:
            return []
        ttl = self.ttl
        now = ttl.now()
        alive = [element for element in stored if not ttl.expired(element, now)]
        if not alive:
            del self.table[slot]
        elif ttl.update_on_read:
            self.table[slot] = [TtlValue(element.user_value, now) for element in alive]
        return [element.user_value for element in (stored if ttl.return_expired else alive)]

    def add(self, value: Any) -> None:
        self.ttl.accessed()
        if value is None:
            raise ValueError("You cannot add null to a ListState.")
        self._stored_list().append(TtlValue(value, self.ttl.now()))

    def _stored_list(self) -> list:
        """The stored list of the current slot (a new one if there is none), safe to change in place."""
        slot = self._slot()
        stored = self._owned(slot)
        if stored is None:
            stored = self.table[slot] = []
        return stored

    def add_all(self, values: list) -> None:
        self.ttl.accessed()
        if values:
            now = self.ttl.now()
            self._stored_list().extend(TtlValue(value, now) for value in values)

    def update(self, values: list) -> None:
        self.ttl.accessed()
        if values:
            now = self.ttl.now()
            self.table[self._slot()] = [TtlValue(value, now) for value in values]
        else:
            self.table.pop(self._slot(), None)

    def merge(self, target: Any, sources: Iterable[Any]) -> None:
        key = self.backend.current_key
        merged = self._owned((key, target))
        if merged is None:
            merged = self.table[(key, target)] = []
        for source in sources:
            if source != target:
                merged.extend(self._taken((key, source)) or ())
        if not merged:
            self.table.pop((key, target), None)


class TtlMapState(_TtlState, api.MapState):
    """Each entry carries its own timestamp and expires on its own."""

    __slots__ = ()

    def _entries(self) -> dict | None:
        self.ttl.accessed()
        return self._owned(self._slot())

    def _checked_entry(self, entries: dict, key: Any) -> TtlValue | None:
        stored = entries.get(key)
        if stored is None:
            return None
        ttl = self.ttl
        now = ttl.now()
        if ttl.expired(stored, now):
            del entries[key]
            if not entries:
                self.table.pop(self._slot(), None)
            return stored if ttl.return_expired else None
        if ttl.update_on_read:
            entries[key] = TtlValue(stored.user_value, now)
        return stored

    def get(self, key: Any) -> Any:
        entries = self._entries()
        checked = None if entries is None else self._checked_entry(entries, key)
        return None if checked is None else checked.user_value

    def contains(self, key: Any) -> bool:
        entries = self._entries()
        return entries is not None and self._checked_entry(entries, key) is not None

    def put(self, key: Any, value: Any) -> None:
        self.ttl.accessed()
        slot = self._slot()
        entries = self._owned(slot)
        if entries is None:
            entries = self.table[slot] = {}
        entries[key] = TtlValue(value, self.ttl.now())

    def put_all(self, dict_value: dict) -> None:
        self.ttl.accessed()
        if dict_value:
            now = self.ttl.now()
            slot = self._slot()
            entries = self._owned(slot)
            if entries is None:
                entries = self.table[slot] = {}
            entries.update((k, TtlValue(v, now)) for k, v in dict_value.items())

    def remove(self, key: Any) -> None:
        entries = self._entries()
        if entries is not None:
            entries.pop(key, None)
            if not entries:
                self.table.pop(self._slot(), None)

    def items(self) -> Iterable[tuple[Any, Any]]:
        """Every entry is checked as it is iterated: expired ones are removed (and listed only
        with ReturnExpiredIfNotCleanedUp), OnReadAndWrite renews the others."""
        entries = self._entries()
        if entries is None:
            return []
        listed = []
        for key in list(entries):
            checked = self._checked_entry(entries, key)
            if checked is not None:
                listed.append((key, checked.user_value))
        return listed

    def keys(self) -> Iterable[Any]:
        return [key for key, _ in self.items()]

    def values(self) -> Iterable[Any]:
        return [value for _, value in self.items()]

    def is_empty(self) -> bool:
        return not self.items()


#: descriptor type -> (TTL state class, what incremental cleanup keeps of a stored value)
TTL_STATES: dict[type, tuple[type, Callable[[TtlSettings, Any], Any]]] = {
    api.ValueStateDescriptor: (TtlValueState, _unexpired_value),
    api.ListStateDescriptor: (TtlListState, _unexpired_elements),
    api.MapStateDescriptor: (TtlMapState, _unexpired_entries),
    api.ReducingStateDescriptor: (TtlReducingState, _unexpired_value),
    api.AggregatingStateDescriptor: (TtlAggregatingState, _unexpired_value),
}

"""Keyed state on the heap: every state is a dict of (key, namespace) -> value.

The operator sets the current key before user code runs; state objects read and write under
it and their own namespace: None for the keyed state user functions get (Flink's
VoidNamespace), a window for a window operator's contents, which it moves from window to window
(PyFlink's ``set_current_namespace``), and for ``bound_state`` objects (a trigger's state).
The current key is the key as state holds it (``kernel.jvm.keyidentity``: the key itself, or
a ``JavaKey`` where Python's equality is not Java's), chosen per record as PyFlink's Python
operators choose it (:meth:`KeyedStateBackend.state_keys`) and per timer by the timer service
(:meth:`KeyedStateBackend.select_key`).
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, Iterable

from kernel.jvm.javavalues import hash_set_order
from kernel.jvm.keyidentity import PLAIN_KEY_TYPES, JavaKey, user_key
from kernel.datastream import state as api
from kernel.runtime.streaming.copy_on_write import SharedTables
from kernel.runtime.streaming.keyed_state import KeyedState

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState


class KeyedStateBackend:
    """The keyed state of one operator. ``now`` is the processing time states with a TTL
    (``descriptor.enable_time_to_live``) expire on; states without TTL never read it.
    ``state_key``: what state holds a key under (``keyidentity.state_key_function`` of the
    key type; None when every key is its own)."""

    def __init__(self, now: Callable[[], int], state_key: Callable[[Any], Any] | None = None) -> None:
        self.current_key: Any = None
        self.now = now
        self._state_key = state_key
        #: the Python key whose state the backend holds (PyFlink's current key) and its state key;
        #: whether a timer's key made it current
        self._held_key: Any = _NO_KEY
        self._held_state_key: Any = None
        self._held_by_timer = False
        self._tables: dict[str, dict] = {}
        self._states: dict[tuple[str, type], Any] = {}
        self._ttl: dict[str, Any] = {}
        self._with_ttl: dict[str, tuple[bool, str]] = {}  # name -> (with a TTL, kind)
        #: the tables pending snapshots' views share (:mod:`kernel.runtime.streaming.copy_on_write`); its
        #: ``views``, false while no snapshot is pending, is what accessors test before :meth:`own`
        self.shared = SharedTables()
        self.shared_views = self.shared.views
        self.own = self.shared.own

    # -- the current key ------------------------------------------------------------------------

    def state_keys(self, keys: list) -> list:
        """The keys the state of a batch's records is held under, one per record (``keys``: as
        ``key_by`` gives them). As PyFlink's Python operator sets its state backend's key per
        record: a record whose key equals, by Python's ``==``, the key the backend holds keeps
        that key's state — PyFlink compares ``Row(key)`` with the Row it holds and switches only
        when they differ —, so ``True`` right after ``1`` (different keys to Java) reads and
        writes the state of ``1``, registers its timers for ``1`` and its window function gets
        ``1``; any other record switches to its own key. A key a timer made current never equals
        a record's: PyFlink reads a timer's key as a Row with field names (``Row(f0=key)``), and a
        named Row is never equal to a record's ``Row(key)``."""
        to_state = self._state_key
        if to_state is None or not keys:
            return keys
        if self._held_by_timer:
            self._held_key, self._held_by_timer = _NO_KEY, False
        held = self._held_key
        if _own_state_keys(keys) and (held is _NO_KEY or _own_state_keys((held,))):
            self._held_key = self._held_state_key = keys[-1]
            return keys
        state = self._held_state_key
        state_keys = []
        append = state_keys.append
        for key in keys:
            if not (key is held or key == held):
                held, state = key, to_state(key)
            append(state)
        self._held_key, self._held_state_key = held, state
        return state_keys

    @property
    def switches_keys(self) -> bool:
        """Whether keys are switched as PyFlink's (:meth:`state_keys`, :meth:`select_key`); when
        not, every key is its own state key and a timer's key simply becomes current."""
        return self._state_key is not None

    def select_key(self, state_key: Any) -> Any:
        """Make a timer's key (as state holds it) current, as PyFlink sets a timer's key: after a
        record's key always (see :meth:`state_keys`), after another timer's unless its Python key
        equals the one held (a timer of True right after one of 1 keeps 1's state). The timer's
        Python key (what its context reports). The timer service calls this for every timer."""
        key = state_key.value if type(state_key) is JavaKey else state_key
        held = self._held_key
        if self._held_by_timer and (key is held or key == held):
            state_key = self._held_state_key
        else:
            self._held_key, self._held_state_key, self._held_by_timer = key, state_key, True
        self.current_key = state_key
        return key

    def table(self, name: str) -> dict:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = {}
        return table

    def get_state(self, descriptor: api.StateDescriptor) -> Any:
        """The state object of a descriptor (one per name and kind)."""
        kind = _STATE_OF[type(descriptor)]
        key = (descriptor.name, kind)
        state = self._states.get(key)
        if state is None:
            for other_name, other_kind in self._states:
                if other_name == descriptor.name and other_kind is not kind:
                    raise ValueError(f"state {descriptor.name!r} is already registered as {other_kind.__name__}")
            state = self._states[key] = self._create(descriptor, None)
        return state

    def bound_state(self, descriptor: api.StateDescriptor, namespace: Any) -> Any:
        """A new state object of ``descriptor`` in one namespace (window or None)."""
        return self._create(descriptor, namespace)

    def _create(self, descriptor: api.StateDescriptor, namespace: Any) -> Any:
        name = descriptor.name
        config = descriptor._ttl_config
        with_ttl = config is not None and config.is_enabled()
        if self._with_ttl.setdefault(name, (with_ttl, _KIND[type(descriptor)]))[0] is not with_ttl:
            raise ValueError(f"state {name!r} is registered {'without' if with_ttl else 'with'} a TTL: "
                             "its values cannot be read with another setting")
        table = self.table(name)
        if not with_ttl:
            return _STATE_OF[type(descriptor)](self, table, descriptor, namespace)
        from kernel.runtime.streaming.ttl import TTL_STATES, TtlSettings

        kind, unexpired = TTL_STATES[type(descriptor)]
        ttl = self._ttl.get(name)
        if ttl is None:
            ttl = self._ttl[name] = TtlSettings(config, self.now, table, unexpired)
            if ttl.cleanup_every_record:
                if not isinstance(self, _RecordCleanupKeyedStateBackend):
                    current_key = self.__dict__.pop("current_key")
                    self.__class__ = _RecordCleanupKeyedStateBackend
                    self._current_key = current_key
                self._record_cleanups = [t.cleanup for t in self._ttl.values() if t.cleanup_every_record]
        return kind(ttl, self, table, descriptor, namespace)

    def keys(self, state_name: str) -> list[Any]:
        """The keys (as state holds them) with state of that name outside any window, in the
        order the backend holds them (when each got its state)."""
        return list(dict.fromkeys(key for key, namespace in self._tables.get(state_name, {}) if namespace is None))

    def apply_to_all_keys(self, descriptor: api.StateDescriptor, function: Callable[[Any, Any], Any]) -> None:
        """``function(key, state)`` for every key with state of ``descriptor`` (Flink's
        ``applyToAllKeys``): the keys are listed first, so the function may clear states; each
        becomes the current key in turn, and the last one stays current, as in Flink."""
        state = self.get_state(descriptor)
        process = function if callable(function) else function.process
        for key in self.keys(descriptor.name):
            self._held_key, self._held_state_key, self._held_by_timer = user_key(key), key, False
            self.current_key = key
            process(user_key(key), state)

    # -- checkpoints ------------------------------------------------------------------------------

    def snapshot(self, snapshot: OperatorSnapshot) -> None:
        """Every state's entries (key, namespace, value) — TTL values with their timestamps; the
        keys as Python keys (what Flink's snapshot holds: the Java key). The synchronous part
        takes a copy-on-write view of each table; the entries are made from the views in the
        asynchronous part. The operator's own tables may be shared too (:meth:`share`) until
        the snapshot is released."""
        shared = self.shared
        shared.snapshot_started()
        snapshot.on_release(shared.snapshot_released)
        for name, table in self._tables.items():
            if table:
                with_ttl, kind = self._with_ttl.get(name, (False, "internal"))
                view = shared.share(table)
                snapshot.defer(lambda into, name=name, kind=kind, view=view, ttl=with_ttl: into.add_keyed(
                    name, kind, ((user_key(key), namespace, value) for (key, namespace), value in view.items()),
                    ttl=ttl))

    def share(self, table: dict) -> dict:
        """A copy-on-write view of one of the operator's own tables for the snapshot being
        taken (after :meth:`snapshot`); the operator changes a value of ``table`` in place only
        after :meth:`own` while ``shared_views`` is not empty."""
        return self.shared.share(table)

    def restored_key(self, key: Any) -> Any:
        """The state key of a key read from a checkpoint."""
        return key if self._state_key is None else self._state_key(key)

    def restore(self, restored: RestoredOperatorState) -> None:
        """Put the restored entries of every state back (into the tables state objects use)."""
        for (name, kind, ttl), entries in restored.tables.items():
            registered = self._with_ttl.setdefault(name, (ttl, kind))
            if registered[0] is not ttl:
                raise ValueError(f"state {name!r} was checkpointed {'with' if ttl else 'without'} a TTL and is "
                                 f"registered {'with' if registered[0] else 'without'} one: it cannot be restored")
            restored_key = self.restored_key
            self.table(name).update(((restored_key(key), namespace), value) for key, namespace, value in entries)


class _RecordCleanupKeyedStateBackend(KeyedStateBackend):
    """A backend with a TTL state cleaned up on every record (``cleanup_incrementally(n, True)``):
    setting the current key, which operators do per record and per timer, runs those cleanups
    (Flink's key selection listener). Backends become this class only then, so setting the key
    stays a plain attribute write for all others."""

    @property
    def current_key(self) -> Any:
        return self._current_key

    @current_key.setter
    def current_key(self, key: Any) -> None:
        self._current_key = key
        for cleanup in self._record_cleanups:
            cleanup.run()


def _own_state_keys(keys: list | tuple) -> bool:
    """Whether every key is its own state key and equal keys are equal by Python's ``==`` only
    (str, int, bytes and None keys and tuples of them: PyFlink's switching changes nothing)."""
    kinds = set(map(type, keys))
    if kinds <= PLAIN_KEY_TYPES:
        return True
    if not kinds <= _PLAIN_OR_TUPLE:
        return False
    tuples = keys if len(kinds) == 1 else [key for key in keys if type(key) is tuple]
    return PLAIN_KEY_TYPES.issuperset(map(type, chain.from_iterable(tuples)))


_PLAIN_OR_TUPLE = PLAIN_KEY_TYPES | {tuple}
_NO_KEY = object()  # no key held yet (PyFlink's None, equal to no Row)


class ValueStateImpl(KeyedState, api.ValueState):
    """(The slot is spelled out in the accessors: they run per record.)"""

    __slots__ = ()

    def value(self) -> Any:
        slot = (self.backend.current_key, self.namespace)
        value = self.table.get(slot)
        if value is not None and self.backend.shared_views:
            return self.backend.own(self.table, slot, value)
        return value

    def update(self, value: Any) -> None:
        if value is None:
            self.table.pop((self.backend.current_key, self.namespace), None)
        else:
            self.table[(self.backend.current_key, self.namespace)] = value


class ListStateImpl(KeyedState, api.ListState):
    __slots__ = ()

    def get(self) -> list:
        return list(self._owned(self._slot()) or ())

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("You cannot add null to a ListState.")
        slot = self.backend.current_key, self.namespace
        values = self._owned(slot)
        if values is None:
            self.table[slot] = [value]
        else:
            values.append(value)

    def add_all(self, values: list) -> None:
        if values:
            slot = self._slot()
            stored = self._owned(slot)
            if stored is None:
                self.table[slot] = list(values)
            else:
                stored.extend(values)

    def update(self, values: list) -> None:
        if values:
            self.table[self._slot()] = list(values)
        else:
            self.clear()

    def merge(self, target: Any, sources: Iterable[Any]) -> None:
        """As the JVM merges PyFlink's list states: the sources' lists (each taken away) in
        :func:`merge_order`, appended to the target's."""
        key, table = self.backend.current_key, self.table
        merged: list = []
        for source in merge_order(sources):
            merged.extend(self._taken((key, source)) or ())
        if merged:
            values = self._owned((key, target))
            if values is None:
                table[(key, target)] = merged
            else:
                values.extend(merged)


def merge_order(sources: Iterable[Any]) -> list:
    """The order in which the JVM merges the namespaces PyFlink's Python state names: it reads
    them into a ``java.util.HashSet`` (PyFlink's ``BeamBagStateHandler``), so windows come in
    the order that set iterates the JVM's TimeWindows (by their Java ``hashCode()``,
    ``java_hash_code``). Namespaces without one in the order given."""
    ordered = list(sources)
    if len(ordered) > 1 and all(hasattr(source, "java_hash_code") for source in ordered):
        return hash_set_order(ordered, lambda window: window.java_hash_code())
    return ordered


def _merge_one_value_bags(state: KeyedState, target: Any, sources: Iterable[Any]) -> None:
    """``merge`` of a reducing or aggregating state, as PyFlink's: each namespace's value is a
    bag of one value, the JVM merges namespaces by appending the sources' bags (each taken away)
    in :func:`merge_order` to the target's, and the state reads (and reduces further) the first
    value of the bag. So the target keeps its own value, or takes the first source's in that
    order when it has none; the other sources' values are dropped (Java's operators reduce
    them; PyFlink's window operator does not)."""
    key, table = state.backend.current_key, state.table
    values = [state._taken((key, source)) for source in merge_order(sources)]
    result = table.get((key, target))
    for value in values:
        if result is not None:
            break
        result = value
    if result is not None:
        table[(key, target)] = result


class ReducingStateImpl(KeyedState, api.ReducingState):
    __slots__ = ()

    def get(self) -> Any:
        return self._owned(self._slot())

    def add(self, value: Any) -> None:
        slot = self.backend.current_key, self.namespace
        current = self._owned(slot)
        self.table[slot] = value if current is None else self.descriptor.get_reduce_function()(current, value)

    merge = _merge_one_value_bags


class AggregatingStateImpl(KeyedState, api.AggregatingState):
    __slots__ = ()

    def get(self) -> Any:
        accumulator = self._owned(self._slot())
        return None if accumulator is None else self.descriptor.agg_function.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        slot = self._slot()
        function = self.descriptor.agg_function
        accumulator = self._owned(slot)
        if accumulator is None:
            accumulator = function.create_accumulator()
        self.table[slot] = function.add(value, accumulator)

    merge = _merge_one_value_bags


class MapStateImpl(KeyedState, api.MapState):
    __slots__ = ()

    def _map(self, create: bool = False) -> dict | None:
        slot = self._slot()
        mapping = self._owned(slot)
        if mapping is None and create:
            mapping = self.table[slot] = {}
        return mapping

    def get(self, key: Any) -> Any:
        mapping = self._map()
        return None if mapping is None else mapping.get(key)

    def put(self, key: Any, value: Any) -> None:
        self._map(True)[key] = value

    def put_all(self, dict_value: dict) -> None:
        self._map(True).update(dict_value)

    def remove(self, key: Any) -> None:
        mapping = self._map()
        if mapping is not None:
            mapping.pop(key, None)
            if not mapping:
                self.clear()

    def contains(self, key: Any) -> bool:
        mapping = self._map()
        return mapping is not None and key in mapping

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list((self._map() or {}).items())

    def keys(self) -> Iterable[Any]:
        return list((self._map() or {}).keys())

    def values(self) -> Iterable[Any]:
        return list((self._map() or {}).values())

    def is_empty(self) -> bool:
        return not self._map()


_KIND = {
    api.ValueStateDescriptor: "value",
    api.ListStateDescriptor: "list",
    api.MapStateDescriptor: "map",
    api.ReducingStateDescriptor: "reducing",
    api.AggregatingStateDescriptor: "aggregating",
}

_STATE_OF = {
    api.ValueStateDescriptor: ValueStateImpl,
    api.ListStateDescriptor: ListStateImpl,
    api.MapStateDescriptor: MapStateImpl,
    api.ReducingStateDescriptor: ReducingStateImpl,
    api.AggregatingStateDescriptor: AggregatingStateImpl,
}

"""Copy-on-write views of keyed state: what lets a checkpoint encode state in its asynchronous
part while the task goes on changing it (Flink's ``CopyOnWriteStateMap`` of the heap backend).

The synchronous part of a snapshot takes a *view* of each table (:meth:`SharedTables.share`):
a shallow copy of the dict, its values' objects shared with the live table. The asynchronous
part encodes the views off the task's thread. Until the last pending snapshot is encoded, the
task must not change an object a view shares: putting, replacing and removing entries of the
live table is always safe (the view is another dict), but a value about to be changed in place
or handed out — a list state's list, a map state's dict, an accumulator a user function
changes and returns, a user's object in a value state — is first replaced in the live table
by a private copy (:meth:`SharedTables.own`), as Flink's heap backend copies an entry older
than its latest snapshot when it is accessed. Values that cannot change (numbers, strings,
bytes, None, times, and tuples of them) are never copied.

Only the task's thread shares, owns and releases; the asynchronous part only reads views.
"""

from __future__ import annotations

import datetime
import decimal
import pickle
from typing import Any

#: the types whose values never change
IMMUTABLE = frozenset((int, str, float, bool, bytes, complex, type(None), decimal.Decimal, datetime.date,
                       datetime.datetime, datetime.time, datetime.timedelta, frozenset))


def frozen(value: Any) -> bool:
    """Whether ``value`` can never change: an immutable value, or a tuple (named or not) of them."""
    if type(value) in IMMUTABLE:
        return True
    return isinstance(value, tuple) and not hasattr(value, "__dict__") and all(map(frozen, value))


def private_copy(value: Any) -> Any:
    """A copy of ``value`` that shares nothing changeable with it (``value`` itself when it
    cannot change): lists and dicts of values that cannot change are copied shallow, anything
    else goes through pickle, as its checkpoint does. A value pickle cannot copy is returned
    as it is: its checkpoint cannot be written either (the asynchronous part declines it)."""
    if frozen(value):
        return value
    kind = type(value)
    if kind is list and all(map(frozen, value)):
        return value.copy()
    if kind is dict and all(map(frozen, value.values())):
        return value.copy()
    try:
        return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return value


class SharedTables:
    """The tables of one operator whose views pending snapshots hold. ``views`` (empty, so
    false, while no snapshot is pending) maps each shared table's id to the view of the latest
    snapshot: an object of the live table that an older view shares is in the latest view too
    (the live table has put nothing but private copies and new objects since), so comparing with
    the latest view is enough."""

    __slots__ = ("views", "_pending")

    def __init__(self) -> None:
        self.views: dict[int, dict] = {}
        self._pending = 0

    def snapshot_started(self) -> None:
        """A snapshot takes views now; :meth:`snapshot_released` once it is encoded (or dropped)."""
        self._pending += 1

    def snapshot_released(self) -> None:
        self._pending -= 1
        if self._pending <= 0:
            self._pending = 0
            self.views.clear()

    def share(self, table: dict) -> dict:
        """The view of ``table`` for the snapshot being taken (between :meth:`snapshot_started`
        and its release)."""
        view = table.copy()
        self.views[id(table)] = view
        return view

    def own(self, table: dict, slot: Any, value: Any, kept: bool = True) -> Any:
        """``value``, the live value of ``slot`` in ``table`` (``kept``) or just taken out of it,
        safe to change in place and to hand out: a private copy (a kept one replaces ``value`` in
        the table) when a pending snapshot's view shares it. A value moved to another slot is
        owned when it is taken: the view knows it by the slot it had."""
        if type(value) in IMMUTABLE:
            return value
        view = self.views.get(id(table))
        if view is None or view.get(slot) is not value:
            return value
        copied = private_copy(value)
        if kept and copied is not value:
            table[slot] = copied
        return copied

"""SQL views over recorded runs, registered by plugins (hook ``register_views``).

A view is one SELECT over the event tables ``rill.ev_<kind>`` (:mod:`kernel.eventtables`),
``rill.runs`` and other views, named unqualified. Every engine that reads recorded runs (DuckDB
over the event log or over an export, Spark SQL) creates the same views, so their SQL keeps to
what DuckDB and Spark SQL both run with the same results: no ASOF joins, no correlated
subqueries with inequalities, no ties left to the engine (``max_by``); window functions and
``CAST`` are fine.

An engine creates the views :meth:`ViewRegistry.readable` gives for the event kinds it can
read: each view after the views it reads; an event table the log lacks reads as empty when its
event type is registered; a view reading a kind neither recorded nor registered (its plugin is
absent) is left out, as is every view reading that view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection

from kernel.errors import PluginError

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_EVENT_TABLE = re.compile(r"\brill\.ev_([a-z0-9_]+)\b", re.IGNORECASE)
#: names of the log's own tables, which no view may take
TABLE_NAMES = frozenset({"runs", "events", "migrations", "event_tables"})


@dataclass(frozen=True)
class View:
    name: str
    select: str

    @property
    def kinds(self) -> frozenset[str]:
        """The event kinds it reads (``rill.ev_<kind>``)."""
        return frozenset(kind.lower() for kind in _EVENT_TABLE.findall(self.select))

    def mentions(self, name: str) -> bool:
        """Whether its SQL names ``name`` (a table or another view)."""
        return re.search(rf"\b{name}\b", self.select, re.IGNORECASE) is not None


class ViewRegistry:
    """The views of a session, by name, in the order engines create them."""

    def __init__(self) -> None:
        self._views: dict[str, View] = {}
        self._ordered: list[View] | None = None

    def register(self, name: str, select: str) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name.startswith("ev_") or name in TABLE_NAMES:
            raise PluginError(f"view name {name!r} must be a snake_case SQL name, not ev_<kind> or a table of the log "
                              f"({', '.join(sorted(TABLE_NAMES))})")
        if name in self._views:
            raise PluginError(f"two plugins register the view {name!r}")
        self._views[name] = View(name, select)
        self._ordered = None

    def reads(self, view: View) -> set[str]:
        """The other views ``view`` reads."""
        return {name for name in self._views if name != view.name and view.mentions(name)}

    def views(self) -> list[View]:
        """Every view, each after the views it reads, else in the order they were registered."""
        if self._ordered is None:
            ordered: list[View] = []
            placed: set[str] = set()

            def place(view: View, path: tuple[str, ...]) -> None:
                if view.name in placed:
                    return
                if view.name in path:
                    cycle = " -> ".join((*path[path.index(view.name):], view.name))
                    raise PluginError(f"views read each other in a cycle: {cycle}")
                for name in sorted(self.reads(view), key=list(self._views).index):
                    place(self._views[name], (*path, view.name))
                placed.add(view.name)
                ordered.append(view)

            for view in self._views.values():
                place(view, ())
            self._ordered = ordered
        return list(self._ordered)

    def readable(self, kinds: Collection[str]) -> list[View]:
        """The views that can be created where the event kinds ``kinds`` can be read (recorded,
        or registered and read as empty), in the order to create them."""
        created: set[str] = set()
        found = []
        for view in self.views():
            if view.kinds <= set(kinds) and self.reads(view) <= created:
                created.add(view.name)
                found.append(view)
        return found

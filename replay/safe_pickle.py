"""Reading the pickled values of a checkpoint without running any of its code.

rill's snapshots pickle keyed state (``kernel.runtime.checkpointing.format``), and unpickling an
untrusted file with :mod:`pickle` runs whatever callable it names. :func:`safe_loads` unpickles
with an ``Unpickler`` whose ``find_class`` imports nothing: it returns only value types whose
construction runs no user code (``set``, ``frozenset``, ``complex``, ``datetime``'s types,
``Decimal``, ``OrderedDict``) and, for every other class or function a pickle names, a stand-in
class that only records what the pickle says of it — its arguments, state and items —
(:class:`Opaque`). Plain values (numbers, strings, bytes, tuples, lists, dicts, sets) decode as
themselves; objects of rill's own classes are shown by what they hold (``TimeWindow(start=0,
end=10)``, rows, TTL values); anything else readably, by its class name and recorded parts.

Rendering is bounded: a shared or cyclic structure (a pickle can build one of exponential
size from a few bytes) stops at :data:`MAX_NODES` values or :data:`MAX_DEPTH` levels, marked
with ``…``; integers too large to print become ``<int of N bits>``.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import io
import json
import math
import pickle
from typing import Any

from kernel.runtime.checkpointing.format import moved_module

MAX_NODES = 2000
MAX_DEPTH = 32
TRUNCATED = "…"
#: what pickles of rill's rows call
ROW = "kernel.common.types._create_row"

_VALUE_TYPES: dict[tuple[str, str], Any] = {
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("datetime", "datetime"): datetime.datetime,
    ("datetime", "date"): datetime.date,
    ("datetime", "time"): datetime.time,
    ("datetime", "timedelta"): datetime.timedelta,
    ("datetime", "timezone"): datetime.timezone,
    ("decimal", "Decimal"): decimal.Decimal,
    ("collections", "OrderedDict"): collections.OrderedDict,
}


class Opaque:
    """An object of a class (or the result of a function) the reader did not load: the
    qualified name the pickle gave and what it passed — constructor arguments, state, items."""

    qualname = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Opaque:
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state, obj.items = args, kwargs, None, []
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Nothing runs: ``__new__`` recorded the arguments."""

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def append(self, item: Any) -> None:
        self.items.append(item)

    def extend(self, items: Any) -> None:
        self.items.extend(items)

    def add(self, item: Any) -> None:
        self.items.append(item)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items.append((key, value))

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self._stand_ins: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> Any:
        module = moved_module(module)
        value_type = _VALUE_TYPES.get((module, name))
        if value_type is not None:
            return value_type
        stand_in = self._stand_ins.get((module, name))
        if stand_in is None:
            stand_in = self._stand_ins[(module, name)] = type(name.rpartition(".")[2] or "object", (Opaque,),
                                                              {"qualname": f"{module}.{name}"})
        return stand_in


def safe_loads(data: bytes) -> Any:
    """Unpickle ``data`` without importing or calling anything it names (see the module)."""
    return _Unpickler(data).load()


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0


def _state_fields(obj: Opaque) -> dict[str, Any]:
    """An object's state as named fields: a dict, or (dict, slots dict) as pickle gives it."""
    state = obj.state
    if isinstance(state, tuple) and len(state) == 2 and (state[0] is None or isinstance(state[0], dict)):
        return {**(state[0] or {}), **(state[1] if isinstance(state[1], dict) else {})}
    return dict(state) if isinstance(state, dict) else ({} if state is None else {"state": state})


def unwrap(value: Any) -> Any:
    """rill's own objects as what they hold: a row's fields (a dict when named), a TTL value's
    user value; anything else unchanged."""
    if isinstance(value, Opaque):
        if value.qualname == ROW and len(value.args) >= 2:
            fields, values = value.args[0], value.args[1]
            if isinstance(fields, list) and isinstance(values, tuple) and len(fields) == len(values):
                return dict(zip(fields, values))
            return values
        if value.qualname == "kernel.runtime.streaming.ttl.TtlValue" and len(value.args) == 2:
            return value.args[0]
    return value


def readable(value: Any, budget: _Budget | None = None, depth: int = 0, path: frozenset = frozenset()) -> str:
    """A Python-like text of a decoded value, bounded as the module says."""
    budget = budget or _Budget()
    budget.nodes += 1
    if budget.nodes > MAX_NODES or depth > MAX_DEPTH or id(value) in path:
        return TRUNCATED
    inner = path | {id(value)}

    def part(item: Any) -> str:
        return readable(item, budget, depth + 1, inner)

    if isinstance(value, Opaque) and value.qualname == ROW:
        fields = unwrap(value)
        if isinstance(fields, dict):
            return f"Row({', '.join(f'{key}={part(item)}' for key, item in fields.items())})"
        if isinstance(fields, tuple):
            return f"Row({', '.join(part(item) for item in fields)})"
    value = unwrap(value)

    if isinstance(value, Opaque):
        if value.qualname == "kernel.datastream.windows.GlobalWindow":
            return "GlobalWindow"
        parts = [part(arg) for arg in value.args]
        parts += [f"{key}={part(item)}" for key, item in {**value.kwargs, **_state_fields(value)}.items()]
        parts += [part(item) for item in value.items]
        return f"{value.name}({', '.join(parts)})"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"<int of {value.bit_length()} bits>"
    if isinstance(value, tuple):
        items = [part(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(part(item) for item in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"{{{', '.join(sorted(part(item) for item in value))}}}" if value else "set()"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{part(key)}: {part(item)}' for key, item in value.items())}}}"
    try:
        return repr(value)
    except Exception:  # a value type that cannot show itself (an extreme Decimal, ...)
        return f"<{type(value).__name__}>"


def json_value(value: Any) -> str:
    """JSON text of a decoded value: finite numbers, strings, booleans and null as themselves,
    tuples, lists and sets as arrays, dicts with string keys as objects (other dicts as arrays
    of [key, value] pairs), rows as arrays or objects, a time window as {"start", "end"}, bytes
    and anything else as a string of its readable form (:func:`readable`)."""
    budget = _Budget()
    try:
        return json.dumps(_jsonable(value, budget, 0, frozenset()), ensure_ascii=False, allow_nan=False)
    except _TooLarge:
        return json.dumps(readable(value), ensure_ascii=False)


class _TooLarge(Exception):
    pass


def _jsonable(value: Any, budget: _Budget, depth: int, path: frozenset) -> Any:
    budget.nodes += 1
    if budget.nodes > MAX_NODES or depth > MAX_DEPTH or id(value) in path:
        raise _TooLarge
    value = unwrap(value)
    inner = path | {id(value)}
    if value is None or isinstance(value, (bool, str)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else readable(value)
    if isinstance(value, (tuple, list, set, frozenset)):
        if isinstance(value, (set, frozenset)) and len(value) > MAX_NODES:
            raise _TooLarge
        items = sorted(value, key=readable) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(item, budget, depth + 1, inner) for item in items]
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _jsonable(item, budget, depth + 1, inner) for key, item in value.items()}
        return [[_jsonable(key, budget, depth + 1, inner), _jsonable(item, budget, depth + 1, inner)]
                for key, item in value.items()]
    if isinstance(value, Opaque) and value.qualname == "kernel.datastream.windows.TimeWindow":
        fields = _state_fields(value)
        if set(fields) == {"start", "end"}:
            return {"start": _jsonable(fields["start"], budget, depth + 1, inner),
                    "end": _jsonable(fields["end"], budget, depth + 1, inner)}
    return readable(value)

"""Which values a conversion gives back as they are, tested without a call per value.

A conversion at a typed boundary (PyFlink's coders, ``kernel.jvm.coders``; the JVM's
conversion of ``from_collection``'s elements, ``kernel.jvm.bridge``) leaves most values as
they are: a str declared STRING, an int in range declared INT, a tuple of such fields declared
TUPLE. Each conversion says which values those are by a :data:`KindOf`: for a basic type, the
exact Python type it keeps (None: any value) and, for integers, the inclusive range. From it
this module builds the tests once per declared type: :func:`expression`, a Python expression
over one value (inlined where a conversion runs per value), and :func:`batch_test`, a test of a
whole batch: for a basic type its loops run in C (``set(map(type, values))``, ``min``, ``max``);
tuples are checked for their type (the set of their types, in C) and unpacked once each, their
fields' tests inline. Both are
true exactly when every value passes.
"""

from __future__ import annotations

from typing import Any, Callable

from kernel.common.typeinfo import TupleTypeInfo, TypeInformation

#: (the exact type kept, or None for any value; the lowest and highest int kept, or None)
Kind = tuple[type | None, int | None, int | None]
KindOf = Callable[[TypeInformation], Kind | None]

__all__ = ["Kind", "KindOf", "batch_test", "compiled", "expression"]


def compiled(name: str, source: str, **names: Any) -> Callable[..., Any]:
    """The function ``name`` defined by ``source``, which may use :func:`expression`'s tests
    (built once per declared type, so the tests run inline on the per-record path). Its
    ``__module__`` is this module's, which does not have it: pickled for another process it goes
    by value, found without a search through every loaded module for a function of its name."""
    namespace = {"__name__": __name__, "_TUPLE": _TUPLE, **_TYPES, **names}
    exec(source, namespace)
    return namespace[name]


def expression(type_info: TypeInformation, value: str, kind_of: KindOf) -> str | None:
    """A Python expression over the variable ``value`` that is true when the conversion gives
    it back as it is (for :func:`compiled`); None when there is no such cheap test."""
    if isinstance(type_info, TupleTypeInfo):
        fields = [expression(t, f"{value}[{i}]", kind_of) for i, t in enumerate(type_info.get_field_types())]
        if None in fields:
            return None
        return " and ".join([f"(type({value}) is tuple", f"len({value}) == {len(fields)}", *fields]) + ")"
    kind = kind_of(type_info)
    if kind is None:
        return None
    exact, low, high = kind
    if exact is None:
        return "True"
    test = f"type({value}) is {_type_name(exact)}"
    if low is not None:
        test = f"({test} and {low} <= {value} <= {high})"
    return test


def batch_test(type_info: TypeInformation, kind_of: KindOf) -> Callable[[list], bool] | None:
    """``all(<expression>(value) for value in values)`` without a call per value; None when the
    type has no cheap test. Values of a basic type are tested by the set of their types (and the
    least and greatest int); tuples by the set of their types, then one unpacking each (a
    tuple of another length fails to unpack) with its fields' tests inline."""
    if isinstance(type_info, TupleTypeInfo):
        names = [f"field{i}" for i in range(len(type_info.get_field_types()))]
        fields = [expression(t, name, kind_of) for t, name in zip(type_info.get_field_types(), names)]
        if None in fields:
            return None
        if not names:
            return lambda values: all(type(value) is tuple and not value for value in values)
        # the names the tests use are bound as defaults: locals, not globals, in the loop
        used = sorted({"type", "str", "int", "float", "bool", "set", "map", "_TUPLE", *_TYPES})
        return compiled("unchanged", f"""
def unchanged(values, {", ".join(f"{name}={name}" for name in used)}):
    if not set(map(type, values)) <= _TUPLE:
        return False
    try:
        for {", ".join(names)}, in values:
            if not ({" and ".join(fields)}):
                return False
    except ValueError:
        return False
    return True
""")
    kind = kind_of(type_info)
    if kind is None:
        return None
    exact, low, high = kind
    if exact is None:
        return lambda values: True
    only = frozenset([exact])
    if low is None:
        return lambda values: set(map(type, values)) <= only

    def in_range(values: list) -> bool:
        return set(map(type, values)) <= only and (not values or (low <= min(values) and max(values) <= high))

    return in_range


#: the types tests name that are not builtins, by the names they use
_TYPES: dict[str, type] = {}
_TUPLE = frozenset([tuple])


def _type_name(kind: type) -> str:
    if kind.__module__ == "builtins":
        return kind.__name__
    name = f"{kind.__module__}.{kind.__qualname__}".replace(".", "_")
    _TYPES[name] = kind
    return name

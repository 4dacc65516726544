"""Which keys of a ``key_by`` are one key: Java's equality of PyFlink's keys, as a Python value.

PyFlink keeps keyed state, timers and windows by the Java key ``Row.of(key)`` (see
``kernel.jvm.keyhash``), so two records share them when their Java keys are equal, whatever
Python thinks. Without a ``key_type`` the key is the ``byte[]`` of the pickled key: keys are equal
when their pickled bytes are (``1``, ``True`` and ``1.0`` are three keys; ``{'a': 1, 'b': 2}``
and ``{'b': 2, 'a': 1}`` two; a list, a dict, a set, a bytearray or an object without
``__hash__`` is a key like any other). With a ``key_type`` the key is the Java object its
serializer reads: ``Double.equals`` (0.0 and -0.0 differ, every NaN is one key),
``BigDecimal.equals`` (1.0 and 1.00 differ), ``ArrayList``, ``HashMap``, ``Row`` (with its kind)
and ``TupleN`` field by field.

:func:`state_key_function` gives what rill's keyed state, timers and windows hold a key under:
the key itself where Python's equality is Java's and the key is hashable (str, int, bytes and
None keys and tuples of them; every key of a type whose values all are, such as ``STRING`` or
``ROW([STRING(), INT()])``), else a :class:`JavaKey` holding the key's Java identity
(:func:`java_identity`) and the key.
"""

from __future__ import annotations

import decimal
import math
import struct
from typing import Any, Callable, Hashable

from kernel.jvm.javavalues import pickled_bytes
from kernel.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from kernel.common.types import Row

Identity = Callable[[Any], Hashable]

#: types of keys whose Python equality is the equality of their pickled bytes (and hashable)
PLAIN_KEY_TYPES = frozenset((str, int, bytes, type(None)))

__all__ = ["PLAIN_KEY_TYPES", "JavaKey", "java_identity", "state_key_function", "user_key"]


class JavaKey:
    """A key as keyed state and timers hold it where Python's equality is not Java's: equal to
    another when their Java keys are equal (``identity``); ``value`` is the Python key."""

    __slots__ = ("identity", "value", "_hash")

    def __init__(self, identity: Hashable, value: Any) -> None:
        self.identity = identity
        self.value = value
        self._hash = hash(identity)

    def __eq__(self, other: object) -> bool:
        return type(other) is JavaKey and self._hash == other._hash and self.identity == other.identity

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"JavaKey({self.value!r})"

    def __reduce__(self) -> tuple:
        return JavaKey, (self.identity, self.value)


def user_key(state_key: Any) -> Any:
    """The Python key of a key as state holds it."""
    return state_key.value if type(state_key) is JavaKey else state_key


def state_key_function(key_type: TypeInformation | None) -> Callable[[Any], Any] | None:
    """``key -> what state holds it under`` for keys of ``key_type`` (None: pickled keys);
    None when every key of the type is its own (a hashable value whose equality is Java's)."""
    if key_type is not None and not isinstance(key_type, PickledBytesTypeInfo):
        if _own_identities(key_type):
            return None
        identity = java_identity(key_type)
        return lambda key: JavaKey(identity(key), key)
    plain = PLAIN_KEY_TYPES

    def pickled_key(key: Any) -> Any:
        kind = type(key)
        if kind in plain or (kind is tuple and plain.issuperset(map(type, key))):
            return key
        return JavaKey(pickled_bytes(key), key)

    return pickled_key


def _own_identities(t: TypeInformation) -> bool:
    """Whether every value of ``t`` (as its coder reads it back) is hashable and equal to
    another exactly when the Java objects are."""
    if isinstance(t, BasicTypeInfo):
        return t._basic_type not in (BasicType.FLOAT, BasicType.DOUBLE, BasicType.BIG_DEC)
    if isinstance(t, SqlTimeTypeInfo):
        return True
    if isinstance(t, (RowTypeInfo, TupleTypeInfo)):
        return all(_own_identities(f) for f in t.get_field_types())
    return False


def java_identity(t: TypeInformation | None) -> Identity:
    """A hashable value of a key of type ``t``, equal for two keys exactly when the Java
    objects PyFlink makes of them are equal (None: pickled keys, equal by their bytes)."""
    if t is None or isinstance(t, PickledBytesTypeInfo):
        return pickled_bytes
    if isinstance(t, BasicTypeInfo):
        return _BASIC.get(t._basic_type, _same)
    if isinstance(t, RowTypeInfo):
        fields, names = [_nullable(java_identity(f)) for f in t.get_field_types()], t.get_field_names()

        def row(value: Any) -> Hashable:
            if isinstance(value, Row):
                kind, values = value.get_row_kind().value, value.get_fields_by_names(names)
            else:
                kind, values = 0, value
            return kind, tuple(f(v) for f, v in zip(fields, values))

        return row
    if isinstance(t, TupleTypeInfo):
        fields = [_nullable(java_identity(f)) for f in t.get_field_types()]
        return lambda value: tuple(f(v) for f, v in zip(fields, value))
    if isinstance(t, MapTypeInfo):
        keys, values = _nullable(java_identity(t._key_type_info)), _nullable(java_identity(t._value_type_info))
        return lambda value: frozenset((keys(k), values(v)) for k, v in value.items())
    if isinstance(t, (ListTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo, PrimitiveArrayTypeInfo)):
        element = _nullable(java_identity(t.elem_type))

        def sequence(value: Any) -> Hashable:
            if isinstance(value, (bytes, bytearray)):
                return bytes(value)
            return tuple(map(element, value))

        return sequence
    return _same


def _same(value: Any) -> Any:
    return value


def _nullable(identity: Identity) -> Identity:
    return lambda value: None if value is None else identity(value)


_LONG_BITS = struct.Struct(">q")
_INT_BITS = struct.Struct(">i")


def _double_bits(value: Any) -> int:
    """``Double.doubleToLongBits``: every NaN is one value, 0.0 and -0.0 are two."""
    value = float(value)
    return 0x7FF8000000000000 if math.isnan(value) else _LONG_BITS.unpack(struct.pack(">d", value))[0]


def _float_bits(value: Any) -> int:
    """``Float.floatToIntBits`` of the value rounded to 32 bits."""
    value = float(value)
    if math.isnan(value):
        return 0x7FC00000
    try:
        return _INT_BITS.unpack(struct.pack(">f", value))[0]
    except OverflowError:
        return 0x7F800000 if value > 0 else -0x800000


def _decimal(value: Any) -> tuple[int, int]:
    """``BigDecimal.equals``: the unscaled value and the scale (1.0 and 1.00 differ)."""
    sign, digits, exponent = decimal.Decimal(str(value)).as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    return (-unscaled if sign else unscaled), -int(exponent)


_BASIC: dict[BasicType, Identity] = {
    BasicType.DOUBLE: _double_bits,
    BasicType.FLOAT: _float_bits,
    BasicType.BIG_DEC: _decimal,
}

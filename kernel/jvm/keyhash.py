"""The hash a key of PyFlink's ``key_by`` is routed by, without a JVM.

PyFlink's ``key_by(selector, key_type)`` runs the selector in Python and emits
``Row(key, value)`` typed ``ROW([key_type, value_type])``; Java decodes the key with
``key_type``'s serializer and keys the stream by ``KeyByKeySelector``: a new one-field Row
(kind INSERT) holding it. ``KeyGroupStreamPartitioner`` hashes that Row, so the key's hash is
``Row.hashCode()`` = ``31 * 0 + deepHashCodeArray([key])`` = ``31 + deepHashCode(key)``, where
(Flink 2.x ``RowUtils``) ``deepHashCode`` of a List is ``fold(1, 31 * h + deepHashCode(e))``,
of a Map ``1 + sum(deepHashCode(k) ^ deepHashCode(v))``, of an ``Object[]`` like a List, of null 0,
and of anything else ``Arrays.deepHashCode(new Object[]{x})`` = ``31 + hash(x)``; a plain key
therefore hashes to ``62 + hash(key)`` (int32), and a None key, whatever its type, to 31 (PyFlink
writes it as a null field; recorded for untyped None too). ``hash(x)`` is the ``hashCode()`` of the Java
object ``key_type`` decodes to: String, Integer/Short/Byte, Long, Float, Double, Boolean,
BigDecimal (from ``str(value)``), java.sql.Date/Time/Timestamp (a JVM in UTC), Instant,
``TupleN`` (``h = hash(f0); h = 31 * h + hash(fi)``), Row (the rule above, with its kind),
ArrayList, HashMap. Without ``key_type`` the key is ``PICKLED_BYTE_ARRAY``: a ``byte[]`` of
``cloudpickle.dumps(key)`` (``javavalues.pickled_bytes``), hashed by ``Arrays.hashCode``.

``key_hasher(key_type)`` compiles that rule for one type into a function of the key, once per
partitioner. ``check_key_type`` refuses what Flink's ``KeyedStream`` refuses (arrays anywhere in
a Row/Tuple key type) and the two types PyFlink 2.3 cannot carry as keys.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

from kernel.jvm import javavalues as jv
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

Hasher = Callable[[Any], int]

_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_DAY_MILLIS = 86_400_000


def key_hasher(key_type: TypeInformation | None) -> Hasher:
    """``hashCode()`` of PyFlink's Java key ``Row.of(key)`` for keys of ``key_type``
    (None: pickled bytes, PyFlink's default)."""
    deep = deep_hasher(key_type if key_type is not None else PickledBytesTypeInfo())
    int32 = jv.int32
    return lambda key: int32(31 + deep(key))


def check_key_type(key_type: TypeInformation | None) -> None:
    """Refuse a key type as Flink's ``KeyedStream.validateKeyType`` and PyFlink 2.3 do."""
    if key_type is None:
        return
    unsupported, pending = [], [key_type]
    while pending:
        t = pending.pop()
        if isinstance(t, (PrimitiveArrayTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo)):
            unsupported.append(t)
        elif isinstance(t, BasicTypeInfo) and t._basic_type in _UNCARRIED:
            raise TypeError(f"{t!r} cannot be used as a key type: {_UNCARRIED[t._basic_type]}")
        elif isinstance(t, (RowTypeInfo, TupleTypeInfo)):
            pending.extend(t.get_field_types())
    if unsupported:
        raise TypeError(
            f"Type {key_type!r} cannot be used as key. Contained UNSUPPORTED key types: "
            f"{', '.join(repr(t) for t in unsupported)}. Look at the keyBy() documentation for the "
            "conditions a type has to satisfy in order to be eligible for a key."
        )
    key_hasher(key_type)  # a type rill cannot hash fails here, not when the job runs


def equal_keys_hash_equal(key_type: TypeInformation | None) -> bool:
    """Whether keys equal in Python are one Java key for ``key_type`` (routing may then be
    remembered per key): not for pickled keys (1, True and 1.0 pickle differently) nor for
    FLOAT, DOUBLE (0.0 and -0.0) and BIG_DEC (1 and 1.0) anywhere in the type."""
    pending = [key_type]
    while pending:
        t = pending.pop()
        if t is None or isinstance(t, PickledBytesTypeInfo):
            return False
        if isinstance(t, BasicTypeInfo) and t._basic_type in (BasicType.FLOAT, BasicType.DOUBLE, BasicType.BIG_DEC):
            return False
        if isinstance(t, (RowTypeInfo, TupleTypeInfo)):
            pending.extend(t.get_field_types())
        elif isinstance(t, ListTypeInfo):
            pending.append(t.elem_type)
        elif isinstance(t, MapTypeInfo):
            pending.extend((t._key_type_info, t._value_type_info))
    return True


_UNCARRIED = {
    BasicType.CHAR: "PyFlink 2.3 writes it as a string and Java reads a char (keys and records are corrupted)",
    BasicType.BIG_INT: "PyFlink 2.3 writes it as a long and Java reads a BigInteger (the job fails)",
}


def deep_hasher(t: TypeInformation) -> Hasher:
    """``RowUtils.deepHashCodeInternal`` of the Java object a value of ``t`` decodes to."""
    int32 = jv.int32
    if isinstance(t, (BasicArrayTypeInfo, ObjectArrayTypeInfo)) or type(t) is ListTypeInfo:
        element = deep_hasher(t.elem_type)

        def deep_sequence(value: Any) -> int:  # deepHashCodeArray / deepHashCodeList
            if value is None:
                return 0
            h = 1
            for item in value:
                h = int32(31 * h + element(item))
            return h

        return deep_sequence
    if isinstance(t, MapTypeInfo):
        key, val = deep_hasher(t._key_type_info), deep_hasher(t._value_type_info)

        def deep_map(value: Any) -> int:
            if value is None:
                return 0
            h = 1
            for k, v in value.items():
                h = int32(h + (key(k) ^ val(v)))
            return h

        return deep_map
    if isinstance(t, (PrimitiveArrayTypeInfo, PickledBytesTypeInfo)):
        plain = _array_hasher(t)
    else:
        plain = java_hasher(t)
    return lambda value: 0 if value is None else int32(31 + plain(value))  # Arrays.deepHashCode([x])


def java_hasher(t: TypeInformation) -> Hasher:
    """``hashCode()`` of the Java object a value of ``t`` decodes to (null: 0)."""
    int32 = jv.int32
    if isinstance(t, BasicTypeInfo):
        plain = _basic_hasher(t._basic_type)
    elif isinstance(t, SqlTimeTypeInfo):
        plain = _SQL_TIME_HASHERS[repr(t)]
    elif isinstance(t, RowTypeInfo):
        plain = _row_hasher(t)
    elif isinstance(t, TupleTypeInfo):
        plain = _tuple_hasher(t)
    elif type(t) is ListTypeInfo:
        element = java_hasher(t.elem_type)

        def plain(value: Any) -> int:  # ArrayList.hashCode
            h = 1
            for item in value:
                h = int32(31 * h + element(item))
            return h
    elif isinstance(t, MapTypeInfo):
        key, val = java_hasher(t._key_type_info), java_hasher(t._value_type_info)

        def plain(value: Any) -> int:  # HashMap.hashCode
            return int32(sum(key(k) ^ val(v) for k, v in value.items()))
    elif isinstance(t, (PrimitiveArrayTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo, PickledBytesTypeInfo)):
        raise TypeError(f"a {t!r} inside a Tuple key hashes by Java object identity, which is not reproducible")
    else:
        raise TypeError(f"rill cannot hash keys of type {t!r}")
    return lambda value: 0 if value is None else plain(value)


def _basic_hasher(basic: BasicType) -> Hasher:
    if basic is BasicType.STRING:
        return lambda value: jv.string_hash(str(value))
    if basic in (BasicType.INT, BasicType.SHORT, BasicType.BYTE):
        return lambda value: jv.int32(int(value))
    if basic is BasicType.LONG:
        return lambda value: jv.long_hash(int(value))
    if basic is BasicType.BOOLEAN:
        return lambda value: 1231 if value else 1237
    if basic is BasicType.DOUBLE:
        return lambda value: jv.double_hash(float(value))
    if basic is BasicType.FLOAT:
        return lambda value: jv.float_hash(float(value))
    if basic is BasicType.BIG_DEC:
        return lambda value: jv.big_decimal_hash(str(value))
    if basic is BasicType.INSTANT:
        return lambda value: jv.instant_hash(value.seconds, value.nanos)
    raise TypeError(f"{basic.value} cannot be used in a key: {_UNCARRIED[basic]}")


def _timestamp_millis(value: datetime.datetime) -> int:
    """PyFlink's TimestampCoder: whole seconds truncated towards zero, then the milliseconds."""
    seconds = int(value.replace(tzinfo=datetime.timezone.utc).timestamp())
    return seconds * 1000 + value.microsecond // 1000


_SQL_TIME_HASHERS: dict[str, Hasher] = {
    "DateTypeInfo": lambda value: jv.long_hash((value.toordinal() - _EPOCH_ORDINAL) * _DAY_MILLIS),
    "TimeTypeInfo": lambda value: jv.long_hash(
        value.hour * 3_600_000 + value.minute * 60_000 + value.second * 1000 + value.microsecond // 1000),
    "TimestampTypeInfo": lambda value: jv.long_hash(_timestamp_millis(value)),
}


def _row_hasher(t: RowTypeInfo) -> Hasher:
    """``Row.hashCode()``: ``31 * kind + deepHashCodeArray(fields)``."""
    fields = [deep_hasher(f) for f in t.get_field_types()]
    names = t.get_field_names()
    int32 = jv.int32

    def row_hash(value: Any) -> int:
        if isinstance(value, Row):
            values, kind = value.get_fields_by_names(names), value.get_row_kind().value
        else:
            values, kind = value, 0
        h = 1
        for field, item in zip(fields, values):
            h = int32(31 * h + field(item))
        return int32(31 * kind + h)

    return row_hash


def _tuple_hasher(t: TupleTypeInfo) -> Hasher:
    """``TupleN.hashCode()``: ``h = hash(f0); h = 31 * h + hash(fi)``."""
    fields = [java_hasher(f) for f in t.get_field_types()]
    int32 = jv.int32

    def tuple_hash(value: Any) -> int:
        h = 0
        for i, (field, item) in enumerate(zip(fields, value)):
            h = field(item) if i == 0 else int32(31 * h + field(item))
        return h

    return tuple_hash


def _array_hasher(t: TypeInformation) -> Hasher:
    """``Arrays.hashCode`` of a primitive array (pickled bytes: of their ``byte[]``)."""
    if isinstance(t, PickledBytesTypeInfo):
        return lambda value: jv.bytes_hash(jv.pickled_bytes(value))
    element = java_hasher(t.elem_type)

    def array_hash(value: Any) -> int:
        if isinstance(value, (bytes, bytearray)):
            return jv.bytes_hash(bytes(value))
        h = 1
        for item in value:
            h = jv.int32(31 * h + element(item))
        return h

    return array_hash

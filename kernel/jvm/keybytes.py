"""The bytes Flink sorts keys by in BATCH execution, without a JVM.

In BATCH a keyed operator's input is sorted (Flink's ``SortingDataInput``): each record's key
is serialized with the key's ``TypeSerializer`` and the records are ordered by those bytes —
compared as signed bytes, then the shorter first (``VariableLengthByteKeyComparator``) — then
by timestamp. PyFlink's key is ``Row.of(key)`` typed ``ROW([key_type])`` (see
``kernel.jvm.keyhash``), so the bytes are a ``RowSerializer``'s: a null mask whose first two
bits are the row kind (``Row``s: the fields after it, non-null ones only), then the key as
``key_type``'s serializer writes it: ``StringValue.writeString`` for a String (the length + 1,
then each UTF-16 unit, both as 7-bit groups, low first, continued by the high bit), big-endian
Java primitives, a Tuple's fields one after another, and for ``PICKLED_BYTE_ARRAY`` (no
``key_type``) the length of ``cloudpickle.dumps(key)`` as an int, then its bytes.

``key_sort_bytes(key_type)`` compiles that into a function of the key whose result sorts as
Flink sorts: each byte's sign bit flipped, so Python's unsigned bytes order is Java's signed one.
"""

from __future__ import annotations

import datetime
import struct
from typing import Any, Callable

from kernel.jvm import javavalues as jv
from kernel.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    PickledBytesTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from kernel.common.types import Row

Writer = Callable[[bytearray, Any], None]

_SIGNED_ORDER = bytes(b ^ 0x80 for b in range(256))
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_DAY_MILLIS = 86_400_000


def key_sort_bytes(key_type: TypeInformation | None) -> Callable[[Any], bytes]:
    """The sort key of a record with key ``key`` of ``key_type`` (None: pickled bytes, PyFlink's
    default); a TypeError for a type whose serialized form rill does not know."""
    write = _row_writer([key_type if key_type is not None else PickledBytesTypeInfo()], None)
    table = _SIGNED_ORDER

    def sort_bytes(key: Any) -> bytes:
        out = bytearray()
        write(out, (key,))
        return bytes(out).translate(table)

    return sort_bytes


def _writer(t: TypeInformation) -> Writer:
    if isinstance(t, BasicTypeInfo):
        return _basic_writer(t._basic_type)
    if isinstance(t, PickledBytesTypeInfo):
        return _pickled
    if isinstance(t, SqlTimeTypeInfo):
        return _SQL_TIME_WRITERS[repr(t)]
    if isinstance(t, RowTypeInfo):
        return _row_writer(t.get_field_types(), t.get_field_names())
    if isinstance(t, TupleTypeInfo):
        fields = [_writer(f) for f in t.get_field_types()]

        def write_tuple(out: bytearray, value: Any) -> None:
            for field, item in zip(fields, value):
                field(out, item)

        return write_tuple
    raise TypeError(f"rill does not know how Flink serializes keys of type {t!r}")


def _basic_writer(basic: BasicType) -> Writer:
    if basic is BasicType.STRING:
        return _string
    packed = _PACKED.get(basic)
    if packed is None:
        raise TypeError(f"rill does not know how Flink serializes keys of type {basic.value}")
    pack, convert = packed
    return lambda out, value: out.extend(pack(convert(value)))


_PACKED: dict[BasicType, tuple[Callable[[Any], bytes], Callable[[Any], Any]]] = {
    BasicType.BOOLEAN: (struct.Struct(">?").pack, bool),
    BasicType.BYTE: (struct.Struct(">b").pack, int),
    BasicType.SHORT: (struct.Struct(">h").pack, int),
    BasicType.INT: (struct.Struct(">i").pack, int),
    BasicType.LONG: (struct.Struct(">q").pack, int),
    BasicType.FLOAT: (struct.Struct(">f").pack, float),
    BasicType.DOUBLE: (struct.Struct(">d").pack, float),
}

_LONG = struct.Struct(">q").pack
_INT = struct.Struct(">i").pack


def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _string(out: bytearray, value: Any) -> None:
    """``StringValue.writeString``: 0 for null, else the length + 1 and each UTF-16 unit."""
    if value is None:
        out.append(0)
        return
    text = str(value)
    if text.isascii():
        _varint(out, len(text) + 1)
        out.extend(text.encode("ascii"))
        return
    units = text.encode("utf-16-be", "surrogatepass")
    _varint(out, len(units) // 2 + 1)
    for i in range(0, len(units), 2):
        _varint(out, (units[i] << 8) | units[i + 1])


def _pickled(out: bytearray, value: Any) -> None:
    """``BytePrimitiveArraySerializer`` of the pickled key: its length, then its bytes."""
    data = jv.pickled_bytes(value)
    out.extend(_INT(len(data)))
    out.extend(data)


def _row_writer(field_types: list[TypeInformation], names: list[str] | None) -> Writer:
    """``RowSerializer``: a mask of ``2 + arity`` bits (row kind, then one per null field), most
    significant bit first, then the non-null fields."""
    fields = [_writer(f) for f in field_types]
    arity = len(fields)

    def write_row(out: bytearray, value: Any) -> None:
        if isinstance(value, Row):
            kind = value.get_row_kind().value
            values = value.get_fields_by_names(names) if names else list(value)
        else:
            kind, values = 0, value
        bits = [bool(kind & 1), bool(kind & 2), *(item is None for item in values)]
        for start in range(0, 2 + arity, 8):
            chunk = bits[start:start + 8]
            byte = 0
            for bit in chunk:
                byte = (byte << 1) | bit
            out.append(byte << (8 - len(chunk)))
        for field, item in zip(fields, values):
            if item is not None:
                field(out, item)

    return write_row


def _timestamp(out: bytearray, value: datetime.datetime) -> None:
    """``SqlTimestampSerializer``: the epoch milliseconds, then the nanoseconds of the second."""
    seconds = int(value.replace(tzinfo=datetime.timezone.utc).timestamp())
    out.extend(_LONG(seconds * 1000 + value.microsecond // 1000))
    out.extend(_INT(value.microsecond * 1000))


_SQL_TIME_WRITERS: dict[str, Writer] = {
    "DateTypeInfo": lambda out, value: out.extend(_LONG((value.toordinal() - _EPOCH_ORDINAL) * _DAY_MILLIS)),
    "TimeTypeInfo": lambda out, value: out.extend(_LONG(
        value.hour * 3_600_000 + value.minute * 60_000 + value.second * 1000 + value.microsecond // 1000)),
    "TimestampTypeInfo": _timestamp,
}

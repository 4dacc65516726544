"""What crosses PyFlink's Python-Java bridge outside operators: the elements of
``from_collection`` and the records ``execute_and_collect`` returns.

``from_collection(elements, type_info)``: PyFlink pickles the elements, the JVM unpickles them
(Pyrolite: a Python int is an Integer, Long or BigInteger by size, a float a Double, a tuple an
Object[]) and converts each to the declared type (``PythonTypeUtils``) before the source emits
it; a Python operator reads it with the type's coder. Integers are cut to the type's width as
Java's ``intValue()`` does (2**31 as INT is -2147483648), a value of another kind becomes null
(a null field of a row stays None; a null element fails the job when the collection is read,
or for a BIG_DEC ends the collection there; a CHAR or LIST type, which the conversion cannot
produce, fails too). A LIST inside a row, tuple, map or array is the one thing not converted:
its serializer casts the ArrayList Pyrolite made and each element as it is (:func:`_unconverted`).
:func:`collection_elements`
gives the elements a Python operator receives, or raises the failure as a JobDefinitionError
when ``from_collection`` is called.

``execute_and_collect``: each collected Java object comes back through PyFlink's
``convert_to_python_obj``: a FLOAT is parsed from Java's ``Float.toString`` (110.1, not
110.0999984741211), a BIG_DEC from ``toEngineeringString``, a SQL_TIME loses its milliseconds,
a pickled field of a row is the bytearray of its pickle (a KeyedStream's key), and SQL_TIMESTAMP
and INSTANT values fail as they do there. :func:`collected_conversion`.
"""

from __future__ import annotations

import ast
import datetime
import decimal
import zlib
from typing import Any

from kernel.jvm import javavalues as jv
from kernel.jvm.coders import Conversion, coder_conversion
from kernel.common.time import Instant
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
from kernel.jvm.unchanged import Kind, batch_test
from kernel.errors import JobDefinitionError

__all__ = ["collected_conversion", "collection_elements", "engineering_string"]

_BOXES = {
    BasicType.BYTE: ("Byte", "byte", 8), BasicType.SHORT: ("Short", "short", 16),
    BasicType.INT: ("Integer", "int", 32), BasicType.LONG: ("Long", "long", 64),
    BasicType.FLOAT: ("Float", "float", 0), BasicType.DOUBLE: ("Double", "double", 0),
    BasicType.BOOLEAN: ("Boolean", "boolean", 0),
}


class _JavaNull(Exception):
    """The JVM's conversion gave null for a value of the wrong kind: ``box`` names the type,
    whose serializer fails on null; None for a type whose serializer takes it."""

    def __init__(self, box: str | None, primitive: str | None) -> None:
        super().__init__(box)
        self.box, self.primitive = box, primitive


def _java_class(value: Any) -> str:
    """The class Pyrolite unpickles a Python value into."""
    if type(value) is int:
        return "java.lang.Integer" if -(1 << 31) <= value < (1 << 31) else \
            "java.lang.Long" if -(1 << 63) <= value < (1 << 63) else "java.math.BigInteger"
    return {bool: "java.lang.Boolean", float: "java.lang.Double", str: "java.lang.String", bytes: "[B",
            list: "java.util.ArrayList", dict: "java.util.HashMap", decimal.Decimal: "java.math.BigDecimal",
            datetime.date: "java.util.GregorianCalendar", datetime.datetime: "java.util.GregorianCalendar",
            }.get(type(value), "[Ljava.lang.Object;")


def _module(java_class: str) -> str:
    if java_class.startswith("java.sql."):
        return "module java.sql of loader 'platform'"
    if java_class.startswith(("java.", "[")):
        return "module java.base of loader 'bootstrap'"
    return "unnamed module of loader 'app'"


def _cast(source: str, target: str) -> str:
    """The message of Java's ClassCastException casting a ``source`` object to ``target``."""
    source_module, target_module = _module(source), _module(target)
    where = f"{source} and {target} are in {source_module}" if source_module == target_module \
        else f"{source} is in {source_module}; {target} is in {target_module}"
    return f"class {source} cannot be cast to class {target} ({where})"


def _fail(element: Any, type_info: TypeInformation, java_error: str) -> JobDefinitionError:
    return JobDefinitionError(f"from_collection: {element!r} cannot be read as {type_info!r}: {java_error} "
                              "(PyFlink fails the same way)")


def collection_elements(type_info: TypeInformation, elements: list[Any]) -> list[Any]:
    """The elements a Python operator reads from ``from_collection(elements, type_info)``;
    raises JobDefinitionError where PyFlink fails. An element converted to null where the
    type's serializer takes null (a BIG_DEC that is not a Decimal) ends the collection there:
    Flink's InputFormatSourceFunction stops at a null record."""
    elements = list(elements)
    unchanged = batch_test(type_info, _kept)
    if unchanged is not None and unchanged(elements):
        return elements
    java = _java(type_info)
    read = coder_conversion(type_info) or _same
    converted = []
    for element in elements:
        if element is None:
            raise _fail(element, type_info, 'java.lang.NullPointerException: Cannot invoke "Object.getClass()" '
                                            'because "obj" is null')
        try:
            converted.append(read(java(element)))
        except _JavaNull as null:
            if null.box is None:
                break
            raise _fail(element, type_info, f'java.lang.NullPointerException: Cannot invoke '
                                            f'"java.lang.{null.box}.{null.primitive}Value()" because "record" is null')
        except JobDefinitionError:
            raise
        except Exception as exc:
            raise _fail(element, type_info, f"{type(exc).__name__}: {exc}") from exc
    return converted


def _same(value: Any) -> Any:
    return value


_RANGES = {BasicType.BYTE: 8, BasicType.SHORT: 16, BasicType.INT: 32, BasicType.LONG: 64}
_KINDS = {BasicType.STRING: str, BasicType.BOOLEAN: bool, BasicType.DOUBLE: float}


def _kept(type_info: TypeInformation) -> Kind | None:
    """The elements of a basic type both the JVM's conversion and the coder give back as they
    are (``kernel.jvm.unchanged``'s kind: strings, booleans, doubles and integers in range,
    also as the fields of tuples); None for the other types (they take the conversion per
    element)."""
    if type(type_info) is not BasicTypeInfo:
        return None
    kind = type_info._basic_type
    if kind in _KINDS:
        return _KINDS[kind], None, None
    if kind in _RANGES:
        bits = _RANGES[kind] - 1
        return int, -(1 << bits), (1 << bits) - 1
    return None


def _java(type_info: TypeInformation) -> Conversion:
    """The JVM's conversion of an unpickled element to ``type_info``."""
    if isinstance(type_info, BasicTypeInfo):
        return _java_basic(type_info)
    if isinstance(type_info, RowTypeInfo):
        fields = [_nested(t) for t in type_info.get_field_types()]

        def row(value: Any) -> Row:
            shaped = type_info.to_internal_type(value)
            converted = Row(*[_nullable(f, v) for f, v in zip(fields, shaped)])
            converted.set_field_names(type_info.get_field_names())
            converted.set_row_kind(shaped.get_row_kind())
            return converted

        return row
    if isinstance(type_info, TupleTypeInfo):
        fields = [_nested(t) for t in type_info.get_field_types()]
        return lambda value: tuple(_tuple_field(i, f, v)
                                   for i, (f, v) in enumerate(zip(fields, type_info.to_internal_type(value))))
    if isinstance(type_info, PrimitiveArrayTypeInfo):
        if _is_bytes(type_info):
            return _cast_failure("[B", "[Ljava.lang.Object;")
        element_conversion = _nested(type_info.elem_type)
        return lambda value: [_primitive(element_conversion, v) for v in value]
    if isinstance(type_info, (BasicArrayTypeInfo, ObjectArrayTypeInfo)):
        element_conversion = _nested(type_info.elem_type)
        return lambda value: [_nullable(element_conversion, v) for v in value]
    if isinstance(type_info, ListTypeInfo):  # an element itself: the JVM reads it as an Object[]
        return _cast_failure("[Ljava.lang.Object;", "java.util.List")
    if isinstance(type_info, MapTypeInfo):
        keys, values = _nested(type_info._key_type_info), _nested(type_info._value_type_info)
        return lambda value: {keys(k): _map_value(values, v) for k, v in value.items()}
    if isinstance(type_info, PickledBytesTypeInfo):
        def pickled(value: Any) -> Any:
            raise JobDefinitionError(f"from_collection: {value!r} cannot be read as {type_info!r}: "
                                     f"java.lang.ClassCastException: {_cast(_java_class(value), '[B')}")

        return pickled
    if isinstance(type_info, SqlTimeTypeInfo):
        return _same
    raise JobDefinitionError(f"from_collection: rill cannot read elements of {type_info!r} as PyFlink does")


def _nested(type_info: TypeInformation) -> Conversion:
    """The JVM's conversion of a field, a map's key or value or an array's element: as of an
    element, but a LIST there is not converted (:func:`_unconverted`)."""
    if type(type_info) is ListTypeInfo:
        return _unconverted(type_info)
    return _java(type_info)


#: the class a basic type's serializer casts its value to
_SERIALIZED = {kind: f"java.lang.{kind.value}" for kind in BasicType} | {
    BasicType.CHAR: "java.lang.Character", BasicType.BIG_INT: "java.math.BigInteger",
    BasicType.BIG_DEC: "java.math.BigDecimal", BasicType.INSTANT: "java.time.Instant"}
_SQL_TIME = {"DateTypeInfo": "java.sql.Date", "TimeTypeInfo": "java.sql.Time", "TimestampTypeInfo": "java.sql.Timestamp"}
_PICKLED_ROW = ("org.apache.flink.api.python.shaded.net.razorvine.pickle.PickleException: expected zero arguments "
                "for construction of ClassDict (for pyflink.common.types.RowKind)")


def _unconverted(type_info: TypeInformation) -> Conversion:
    """A value the JVM does not convert (a LIST below the top level, and what it holds): the
    object Pyrolite unpickled, which the type's serializer casts to its class. A list stays an
    ArrayList, so a LIST(INT) takes ints of 32 bits only, a LIST(LONG) only ints beyond them, a
    LIST(FLOAT) nothing (Pyrolite gives Doubles); a null element fails a boxed type's serializer
    (and a STRING's Python coder). A Row inside cannot be unpickled there (PyFlink converts
    only the rows its type declares); a tuple is an Object[], which no ROW or TUPLE takes."""
    if isinstance(type_info, BasicTypeInfo):
        kind = type_info._basic_type
        target = _SERIALIZED[kind]

        def basic(value: Any) -> Any:
            if value is None:
                if kind in _BOXES:
                    box, primitive, _ = _BOXES[kind]
                    raise _fail(value, type_info, f'java.lang.NullPointerException: Cannot invoke '
                                                  f'"java.lang.{box}.{primitive}Value()" because "record" is null')
                if kind is BasicType.STRING:
                    raise _fail(value, type_info, "java.lang.IllegalArgumentException: The String record must not "
                                                  "be null.")
                return None
            return _cast_as(value, type_info, target)

        return basic
    if type(type_info) is ListTypeInfo:
        element = _unconverted(type_info.elem_type)
        return lambda value: [element(v) for v in _cast_as(value, type_info, "java.util.List", list)]
    if isinstance(type_info, MapTypeInfo):
        keys, values = _unconverted(type_info._key_type_info), _unconverted(type_info._value_type_info)
        return lambda value: {keys(k): None if v is None else values(v)
                              for k, v in _cast_as(value, type_info, "java.util.Map", dict).items()}
    if isinstance(type_info, (BasicArrayTypeInfo, ObjectArrayTypeInfo)):
        element = _unconverted(type_info.elem_type)
        return lambda value: [element(v) for v in _cast_as(value, type_info, "[Ljava.lang.Object;", tuple)]
    target = {RowTypeInfo: "org.apache.flink.types.Row", TupleTypeInfo: "org.apache.flink.api.java.tuple.Tuple",
              SqlTimeTypeInfo: _SQL_TIME.get(repr(type_info))}.get(type(type_info))
    if target is None:
        raise JobDefinitionError(f"from_collection: rill cannot read elements of {type_info!r} inside a LIST as "
                                 "PyFlink does")
    return lambda value: None if value is None else _cast_as(value, type_info, target)


def _cast_as(value: Any, type_info: TypeInformation, target: str, kept: type | None = None) -> Any:
    """``value`` when Pyrolite's object for it is a ``target`` (or a Python ``kept``), else the
    serializer's ClassCastException."""
    if isinstance(value, Row):
        raise _fail(value, type_info, _PICKLED_ROW)
    source = _java_class(value)
    if (type(value) is kept) if kept is not None else source == target:
        return value
    raise _fail(value, type_info, f"java.lang.ClassCastException: {_cast(source, target)}")


def _nullable(conversion: Conversion, value: Any) -> Any:
    """A field or boxed element: null stays null, a value of the wrong kind becomes null."""
    if value is None:
        return None
    try:
        return conversion(value)
    except _JavaNull:
        return None


def _tuple_field(position: int, conversion: Conversion, value: Any) -> Any:
    """A tuple field converted to null fails the job (Flink's tuples hold no nulls)."""
    converted = _nullable(conversion, value)
    if converted is None:
        raise JobDefinitionError(f"from_collection: a tuple holds {value!r}: org.apache.flink.types."
                                 f"NullFieldException: Field {position} is null, but expected to hold a value.")
    return converted


def _primitive(conversion: Conversion, value: Any) -> Any:
    try:
        if value is None:
            raise _JavaNull("", "")
        return conversion(value)
    except _JavaNull:
        raise JobDefinitionError(f"from_collection: a primitive array holds {value!r}: java.lang.NullPointerException: "
                                 'Cannot invoke "java.lang.Integer.intValue()" because the return value of '
                                 '"java.util.function.Function.apply(Object)" is null') from None


def _map_value(conversion: Conversion, value: Any) -> Any:
    if value is None:
        raise JobDefinitionError("from_collection: a map holds a None value: java.lang.NullPointerException")
    return conversion(value)


def _cast_failure(source: str, target: str) -> Conversion:
    def fail(value: Any) -> Any:
        raise JobDefinitionError(f"from_collection: {value!r} cannot be read: java.lang.ClassCastException: "
                                 f"{_cast(source, target)} (PyFlink fails the same way)")

    return fail


def _java_basic(type_info: BasicTypeInfo) -> Conversion:
    kind = type_info._basic_type
    if kind in _BOXES:
        box, primitive, bits = _BOXES[kind]
        if bits:
            def integer(value: Any) -> int:
                if type(value) is not int or not -(1 << 63) <= value < (1 << 63):
                    raise _JavaNull(box, primitive)
                value &= (1 << bits) - 1
                return value - (1 << bits) if value >> (bits - 1) else value

            return integer
        exact = bool if kind is BasicType.BOOLEAN else float

        def same_kind(value: Any) -> Any:
            if type(value) is not exact:
                raise _JavaNull(box, primitive)
            return value

        return same_kind
    if kind is BasicType.STRING:
        return _java_string
    if kind is BasicType.BIG_INT:
        def big_integer(value: Any) -> int:
            if type(value) is int and -(1 << 63) <= value < (1 << 63) or type(value) is not int:
                raise JobDefinitionError(f"from_collection: {value!r} cannot be read as BigInteger: java.lang."
                                         f"ClassCastException: {_cast(_java_class(value), 'java.math.BigInteger')}")
            return value

        return big_integer
    if kind is BasicType.CHAR:
        return _character
    if kind is BasicType.BIG_DEC:
        return _big_decimal
    if kind is BasicType.INSTANT:
        return _instant_millis
    return _same


def _instant_millis(value: Any) -> Instant:
    """PyFlink's ``InstantTypeInfo.to_internal_type`` hands the JVM ``to_epoch_milli() * 1000``:
    what is below the millisecond is lost."""
    return Instant.of_epoch_milli(value.to_epoch_milli())


def _big_decimal(value: Any) -> decimal.Decimal:
    """Pyrolite reads a Decimal as a BigDecimal; anything else converts to null."""
    if type(value) is not decimal.Decimal:
        raise _JavaNull(None, None)
    return value


def _character(value: Any) -> str:
    """Pyrolite gives a String, which the conversion casts to a Character."""
    raise JobDefinitionError(f"from_collection: {value!r} cannot be read as Char: java.lang.ClassCastException: "
                             f"{_cast(_java_class(value), 'java.lang.Character')}")


def _java_string(value: Any) -> str:
    """The element's Java ``toString()``."""
    if type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return jv.double_to_string(value)
    return f"{_java_class(value)}@{zlib.crc32(repr(value).encode()):x}"


# -- execute_and_collect -----------------------------------------------------------------------

def collected_conversion(type_info: TypeInformation) -> Conversion | None:
    """What ``execute_and_collect`` returns for a collected value of ``type_info`` (None: the
    value itself)."""
    if isinstance(type_info, PickledBytesTypeInfo) or not _changes_when_collected(type_info):
        return None
    field = _collected(type_info)
    return lambda value: None if value is None else field(value)


def _changes_when_collected(type_info: TypeInformation) -> bool:
    if isinstance(type_info, BasicTypeInfo):
        return type_info._basic_type in (BasicType.FLOAT, BasicType.BIG_DEC, BasicType.INSTANT)
    if isinstance(type_info, SqlTimeTypeInfo):
        return repr(type_info) != "DateTypeInfo"
    return not isinstance(type_info, PickledBytesTypeInfo)


def _collected(type_info: TypeInformation) -> Conversion:
    if isinstance(type_info, PickledBytesTypeInfo):  # inside a row: the byte[] Java holds
        return lambda value: bytearray(jv.pickled_bytes(value))
    if isinstance(type_info, BasicTypeInfo):
        kind = type_info._basic_type
        if kind is BasicType.FLOAT:
            return lambda value: ast.literal_eval(jv.float_to_string(value))
        if kind is BasicType.BIG_DEC:
            return lambda value: decimal.Decimal(engineering_string(value))
        if kind is BasicType.INSTANT:
            return _instant_fails
        return _same
    if isinstance(type_info, SqlTimeTypeInfo):
        return {"TimeTypeInfo": _whole_seconds, "TimestampTypeInfo": _timestamp_fails}.get(repr(type_info), _same)
    if isinstance(type_info, RowTypeInfo):
        fields, names = [_collected(t) for t in type_info.get_field_types()], type_info.get_field_names()

        def row(value: Row) -> Row:
            collected = Row.of_kind(value.get_row_kind(), *[None if v is None else f(v) for f, v in zip(fields, value)])
            collected.set_field_names(names)
            return collected

        return row
    if isinstance(type_info, TupleTypeInfo):
        fields = [_collected(t) for t in type_info.get_field_types()]
        return lambda value: tuple(None if v is None else f(v) for f, v in zip(fields, value))
    if isinstance(type_info, MapTypeInfo):
        keys, values = _collected(type_info._key_type_info), _collected(type_info._value_type_info)
        return lambda value: {keys(k): None if v is None else values(v) for k, v in value.items()}
    if isinstance(type_info, ListTypeInfo) and not _is_bytes(type_info):
        element = _collected(type_info.elem_type)
        return lambda value: [None if v is None else element(v) for v in value]
    return _same


def _is_bytes(type_info: ListTypeInfo) -> bool:
    element = type_info.elem_type
    return isinstance(type_info, PrimitiveArrayTypeInfo) and isinstance(element, BasicTypeInfo) \
        and element._basic_type is BasicType.BYTE


def _whole_seconds(value: datetime.time) -> datetime.time:
    return datetime.time(value.hour, value.minute, value.second)


def _timestamp_fails(value: Any) -> Any:
    raise AttributeError("'bytearray' object has no attribute 'timestamp'")


def _instant_fails(value: Any) -> Any:
    raise RuntimeError("net.razorvine.pickle.PickleException: couldn't introspect javabean: "
                       "java.lang.IllegalArgumentException: wrong number of arguments")


def engineering_string(value: decimal.Decimal) -> str:
    """Java's ``BigDecimal.toEngineeringString()`` of the BigDecimal a Decimal becomes."""
    sign, digits, exponent = value.as_tuple()
    coefficient = "".join(map(str, digits)).lstrip("0") or "0"
    scale = -int(exponent)
    adjusted = -scale + len(coefficient) - 1
    text = "-" if sign and coefficient != "0" else ""
    if scale == 0:
        return text + coefficient
    if scale > 0 and adjusted >= -6:
        pad = scale - len(coefficient)
        if pad >= 0:
            return f"{text}0.{'0' * pad}{coefficient}"
        return f"{text}{coefficient[:-pad]}.{coefficient[-pad:]}"
    significant = adjusted % 3
    adjusted -= significant
    significant += 1
    if coefficient == "0":
        body = {1: "0", 2: "0.00", 3: "0.0"}[significant]
        adjusted += 0 if significant == 1 else 3
    elif significant >= len(coefficient):
        body = coefficient + "0" * (significant - len(coefficient))
    else:
        body = f"{coefficient[:significant]}.{coefficient[significant:]}"
    if adjusted:
        body += f"E{'+' if adjusted > 0 else ''}{adjusted}"
    return text + body

"""What PyFlink's coders do to a value that crosses a typed boundary.

Where PyFlink serialises a value (``kernel.datastream.python_chaining`` says where), the field
coder of its declared type writes it and the reader gets back what the coder reads: a FLOAT
is rounded to 32 bits, a Row gets the type's field names, a SQL_TIME loses everything below the
millisecond, and a value the coder cannot write fails the job with the coder's own error
(``TypeError: an integer is required``, ``OverflowError: value too large to convert to int32_t``,
``AttributeError: 'int' object has no attribute 'encode'``, ...). :func:`coder_conversion` gives
that round trip as a function, built once per declared type; it is None for pickled values,
which come back as they were. The rules and messages are those of PyFlink 2.3's Cython coders
(``pyflink/fn_execution/coder_impl_fast.pyx``), checked by writing and reading values with them.

A value of None at the top level passes (PyFlink hands it on as null); inside a tuple, a
primitive array or as a map key it is given to the field's coder, which fails on it.
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct
from operator import index
from typing import Any, Callable

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
from kernel.jvm.unchanged import Kind, batch_test, compiled, expression

Conversion = Callable[[Any], Any]

__all__ = ["Conversion", "batch_conversion", "batch_results", "coder_conversion", "converted_results", "field_conversion"]


def coder_conversion(type_info: TypeInformation | None) -> Conversion | None:
    """What a value declared ``type_info`` becomes once PyFlink's coder wrote and read it (None
    passes); None when values come back unchanged (pickled values, no declared type)."""
    field = None if type_info is None else field_conversion(type_info)
    if field is None or field is _same:
        return None
    test = expression(type_info, "value", _kept)
    if test is None:
        def convert(value: Any) -> Any:
            return None if value is None else field(value)

        return convert
    # values the coder gives back as they are pass one inline test (a tuple of a str and an int:
    # no call per field); the others take the field conversion
    return compiled("convert", f"""
def convert(value):
    if value is None or {test}:
        return value
    return field(value)
""", field=field)


def batch_conversion(type_info: TypeInformation | None) -> Callable[[list], list] | None:
    """:func:`coder_conversion` over a batch of values: the batch itself when the coder gives
    every value back as it is (a test of the whole batch, its loops in C where the type allows:
    ``kernel.jvm.unchanged``), else a new list of the converted values; None when values
    come back unchanged anyway."""
    convert = coder_conversion(type_info)
    if convert is None:
        return None
    unchanged = batch_test(type_info, _kept)
    if unchanged is None:
        return lambda values: [convert(value) for value in values]

    def convert_batch(values: list) -> list:
        return values if unchanged(values) else [convert(value) for value in values]

    return convert_batch


def batch_results(function: Callable[[Any], Any], type_info: TypeInformation | None) -> Callable[[list], list]:
    """``[converted_results(function, type_info)(value) for value in values]`` as a function of
    the batch: ``function`` mapped over it, then its results converted as a batch. When
    ``function`` fails on a value, the conversion of the results before it fails first, as it
    would value by value."""
    convert = batch_conversion(type_info)
    if convert is None:
        return lambda values: list(map(function, values))

    def results(values: list) -> list:
        found: list = []
        try:
            found.extend(map(function, values))  # keeps the results before a failure
        except BaseException:
            convert(found)
            raise
        return convert(found)

    return results


def converted_results(function: Callable[..., Any], type_info: TypeInformation | None) -> Callable[..., Any]:
    """``function`` with its result converted as the coder of ``type_info`` converts it (a key
    selector whose keys PyFlink writes with ``key_type``); ``function`` itself when nothing
    changes."""
    convert = coder_conversion(type_info)
    if convert is None:
        return function
    test = expression(type_info, "result", _kept) or "False"
    return compiled("converted", f"""
def converted(*args):
    result = function(*args)
    if result is None or {test}:
        return result
    return convert(result)
""", function=function, convert=convert)


_INTEGER_BITS = {BasicType.BYTE: 8, BasicType.SHORT: 16, BasicType.INT: 32, BasicType.LONG: 64, BasicType.BIG_INT: 64}
_EXACT_TYPE = {BasicType.STRING: str, BasicType.CHAR: str, BasicType.DOUBLE: float, BasicType.BIG_DEC: decimal.Decimal,
               BasicType.BOOLEAN: bool}


def _kept(type_info: TypeInformation) -> Kind | None:
    """The values of a basic type the coder reads back equal and of the same type (so the
    value itself may be passed on): ``kernel.jvm.unchanged``'s kind; None when there is no
    such cheap test (a FLOAT is rounded, a Row renamed, a list copied)."""
    if isinstance(type_info, PickledBytesTypeInfo):
        return None, None, None
    if isinstance(type_info, BasicTypeInfo):
        kind = type_info._basic_type
        if kind in _INTEGER_BITS:
            bits = _INTEGER_BITS[kind]
            return int, -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if kind in _EXACT_TYPE:
            return _EXACT_TYPE[kind], None, None
        return None
    if isinstance(type_info, SqlTimeTypeInfo) and repr(type_info) == "DateTypeInfo":
        return datetime.date, None, None
    return None


def field_conversion(type_info: TypeInformation) -> Conversion:
    """The round trip through the field coder of ``type_info`` (which does not accept None)."""
    if isinstance(type_info, PickledBytesTypeInfo):
        return _same
    if isinstance(type_info, BasicTypeInfo):
        return _BASIC[type_info._basic_type]
    if isinstance(type_info, SqlTimeTypeInfo):
        return _SQL_TIME[repr(type_info)]
    if isinstance(type_info, RowTypeInfo):
        return _row(type_info)
    if isinstance(type_info, TupleTypeInfo):
        return _tuple(type_info)
    if isinstance(type_info, PrimitiveArrayTypeInfo):
        element = type_info.elem_type
        if isinstance(element, BasicTypeInfo) and element._basic_type is BasicType.BYTE:
            return _binary
        return _list(field_conversion(element), nullable=False)
    if isinstance(type_info, (BasicArrayTypeInfo, ObjectArrayTypeInfo, ListTypeInfo)):
        return _list(field_conversion(type_info.elem_type), nullable=True)
    if isinstance(type_info, MapTypeInfo):
        return _map(field_conversion(type_info._key_type_info), field_conversion(type_info._value_type_info))
    return _same  # a TypeInformation PyFlink has no coder for: values pass as they are


def _same(value: Any) -> Any:
    return value


# -- numbers: Cython's conversions to C integers and floats -----------------------------------

def _c_integer(value: Any) -> int:
    """Cython's ``__Pyx_PyNumber_IntOrLong``: ints as they are, else ``__int__`` (floats
    truncate), else ``TypeError: an integer is required``."""
    if isinstance(value, int):
        return int(value)
    if hasattr(type(value), "__int__"):
        return int(value)
    raise TypeError("an integer is required")


def _small_integer(bits: int) -> Conversion:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    message = f"value too large to convert to int{bits}_t"

    def convert(value: Any) -> int:
        if type(value) is int and low <= value <= high:
            return value
        number = _c_integer(value)
        if not low <= number <= high:
            raise OverflowError(message)
        return number

    return convert


def _long(value: Any) -> int:
    if type(value) is int and -(1 << 63) <= value < (1 << 63):
        return value
    number = _c_integer(value)
    if not -(1 << 63) <= number < (1 << 63):
        raise OverflowError("Python int too large to convert to C long")
    return number


def _boolean(value: Any) -> bool:
    """Written as an unsigned char, read back as ``not not byte``."""
    if value is True or value is False:
        return value
    number = _c_integer(value)
    if number < 0:
        raise OverflowError("can't convert negative value to unsigned char")
    if number > 255:
        raise OverflowError("value too large to convert to unsigned char")
    return number != 0


def _c_double(value: Any) -> float:
    """``PyFloat_AsDouble``: ``__float__``, else ``__index__``, else ``TypeError: must be real
    number, not str``."""
    kind = type(value)
    if hasattr(kind, "__float__"):
        return float(value)
    if hasattr(kind, "__index__"):
        return float(index(value))
    raise TypeError(f"must be real number, not {kind.__name__}")


def _double(value: Any) -> float:
    return value if type(value) is float else _c_double(value)


_SINGLE = struct.Struct("f")


def _float(value: Any) -> float:
    """Rounded to 32 bits, as the C cast to ``float`` (beyond its range: infinity)."""
    number = value if type(value) is float else _c_double(value)
    try:
        return _SINGLE.unpack(_SINGLE.pack(number))[0]
    except OverflowError:
        return math.copysign(math.inf, number)


# -- strings, decimals, binary -------------------------------------------------------------------

def _string(value: Any) -> str:
    """Written as ``value.encode('utf-8')``."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    raise AttributeError(f"'{type(value).__name__}' object has no attribute 'encode'")


def _big_decimal(value: Any) -> decimal.Decimal:
    """Written as ``str(value)``, read as ``Decimal(text)``."""
    if type(value) is decimal.Decimal:
        return value
    return decimal.Decimal(str(value))


def _binary(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"expected bytes, {type(value).__name__} found")


def _instant(value: Any) -> Instant | None:
    """The one coder that writes None (as a sentinel), so None stays None inside tuples too."""
    if value is None or type(value) is Instant:
        return value
    return Instant(value.seconds, value.nanos)


# -- SQL date and time -----------------------------------------------------------------------------

def _sql_date(value: Any) -> datetime.date:
    if type(value) is datetime.date:
        return value
    return datetime.date.fromordinal(value.toordinal())


def _sql_time(value: Any) -> datetime.time:
    """Milliseconds of the day: the microseconds below a millisecond and the zone are lost."""
    return datetime.time(value.hour, value.minute, value.second, value.microsecond // 1000 * 1000)


_EPOCH = datetime.datetime(1970, 1, 1)


def _sql_timestamp(value: Any) -> datetime.datetime:
    """Milliseconds since the epoch of the wall-clock time (a zone is dropped, not applied),
    as the coder computes them: whole seconds truncated towards zero, then the milliseconds
    of the value's microseconds."""
    if type(value) is datetime.datetime and value.tzinfo is None and value.microsecond == 0:
        return value
    seconds = int(value.replace(tzinfo=datetime.timezone.utc).timestamp())
    second, millisecond = divmod(seconds * 1000 + value.microsecond // 1000, 1000)
    return _EPOCH + datetime.timedelta(seconds=second, microseconds=millisecond * 1000)


_SQL_TIME = {"DateTypeInfo": _sql_date, "TimeTypeInfo": _sql_time, "TimestampTypeInfo": _sql_timestamp}

_BASIC: dict[BasicType, Conversion] = {
    BasicType.BYTE: _small_integer(8),
    BasicType.SHORT: _small_integer(16),
    BasicType.INT: _small_integer(32),
    BasicType.LONG: _long,
    BasicType.BIG_INT: _long,
    BasicType.FLOAT: _float,
    BasicType.DOUBLE: _double,
    BasicType.BOOLEAN: _boolean,
    BasicType.STRING: _string,
    BasicType.CHAR: _string,
    BasicType.BIG_DEC: _big_decimal,
    BasicType.INSTANT: _instant,
}


# -- composites --------------------------------------------------------------------------------------

def _row(type_info: RowTypeInfo) -> Conversion:
    """Fields taken by the type's names (``Row.get_fields_by_names``: a tuple fails with
    ``AttributeError: 'tuple' object has no attribute 'get_fields_by_names'``); the result is a
    Row with the type's field names and the value's row kind; None fields stay None."""
    names = type_info.get_field_names()
    fields = [field_conversion(t) for t in type_info.get_field_types()]
    width = len(fields)

    def convert(value: Any) -> Row:
        values = value.get_fields_by_names(names)
        if len(values) < width:
            raise ValueError(f"{value!r} has {len(values)} fields, {type_info!r} expects {width}")
        row = Row(*[None if v is None else f(v) for f, v in zip(fields, values)])
        row.set_field_names(names)
        row.set_row_kind(value.get_row_kind())
        return row

    return convert


def _exact(value: Any, kind: type) -> None:
    """Cython's typed assignment (``cdef tuple t = value``): exactly that type."""
    if type(value) is not kind:
        raise TypeError(f"Expected {kind.__name__}, got {type(value).__name__}")


def _tuple(type_info: TupleTypeInfo) -> Conversion:
    fields = [field_conversion(t) for t in type_info.get_field_types()]
    width = len(fields)

    def convert(value: Any) -> tuple:
        _exact(value, tuple)
        if len(value) < width:
            raise ValueError(f"{value!r} has {len(value)} fields, {type_info!r} expects {width}")
        return tuple([f(v) for f, v in zip(fields, value)])

    return convert


def _list(element: Conversion, nullable: bool) -> Conversion:
    """A list (exactly); arrays of boxed values and lists keep None elements, primitive arrays
    hand them to the element's coder."""
    if nullable:
        def convert(value: Any) -> list:
            _exact(value, list)
            return [None if v is None else element(v) for v in value]
    else:
        def convert(value: Any) -> list:
            _exact(value, list)
            return [element(v) for v in value]
    return convert


def _map(key: Conversion, value_of: Conversion) -> Conversion:
    def convert(value: Any) -> dict:
        return {key(k): None if v is None else value_of(v) for k, v in value.items()}

    return convert

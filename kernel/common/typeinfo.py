"""Type information, as PyFlink's ``Types``.

Besides describing a stream's values, a type decides three observable things, as it does in
PyFlink: how ``from_collection`` converts elements (``to_internal_type``), what a print sink
writes (``format_print``: Java's ``toString`` of the value, PyFlink's ``+I[a,1]`` for rows,
Python's ``str`` for untyped values), and the Java ``hashCode`` a key hashes to, which decides
its key group (``kernel.jvm.keyhash``).
"""

from __future__ import annotations

import datetime
from enum import Enum
from typing import Any, Iterable

from kernel.pyflink import unsupported
from kernel.jvm import javavalues as jv
from kernel.common.types import Row


@unsupported.members("pyflink.common.typeinfo:TypeInformation")
class TypeInformation:
    """Base of all type information."""

    def need_conversion(self) -> bool:
        """Whether values are converted between their Python form and an internal one: rill's
        records are the Python values themselves."""
        return False

    def to_internal_type(self, obj: Any) -> Any:
        return obj

    def to_internal_list(self, elements: Iterable[Any]) -> list:
        """``to_internal_type`` of every element, as a new list; without a call per element when
        the elements stay as they are (``from_collection`` of a large collection)."""
        if not self.converts():
            return list(elements)
        convert = self.to_internal_type
        return [convert(element) for element in elements]

    def converts(self) -> bool:
        """Whether ``to_internal_type`` may return anything but its argument."""
        return type(self).to_internal_type is not TypeInformation.to_internal_type

    def from_internal_type(self, obj: Any) -> Any:
        return obj

    def java_string(self, value: Any) -> str:
        """``toString()`` of the Java object."""
        return "null" if value is None else str(value)

    def format_print(self, value: Any) -> str:
        """The line a print sink writes for a value of this type: the Java object's
        ``toString()`` (a None value fails the sink, as the null record fails Java's)."""
        if value is None:
            raise RuntimeError('java.lang.NullPointerException: Cannot invoke "Object.toString()" because "record" '
                               'is null')
        return self.java_string(value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and repr(other) == repr(self)

    def __hash__(self) -> int:
        return hash(repr(self))


class BasicType(Enum):
    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    def __init__(self, basic_type: BasicType) -> None:
        self._basic_type = basic_type

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        t = self._basic_type
        if t is BasicType.BOOLEAN:
            return "true" if value else "false"
        if t is BasicType.DOUBLE:
            return jv.double_to_string(float(value))
        if t is BasicType.FLOAT:
            return jv.float_to_string(float(value))
        if t is BasicType.INSTANT:
            return jv.instant_to_string(value.seconds, value.nanos)
        return str(value)

    def __repr__(self) -> str:
        return self._basic_type.value


class PickledBytesTypeInfo(TypeInformation):
    """Any Python object (PyFlink pickles it); the default when no type is declared."""

    def java_string(self, value: Any) -> str:
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return value if isinstance(value, str) else str(value)

    def format_print(self, value: Any) -> str:
        """PyFlink prints pickled values through a map to STRING: ``str`` of the value (bytes
        fail that map's coder)."""
        if isinstance(value, bytes):
            raise AttributeError("'bytes' object has no attribute 'encode'")
        return value if isinstance(value, str) else str(value)

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"


class RowTypeInfo(TypeInformation):
    def __init__(self, field_types: list[TypeInformation], field_names: list[str] | None = None) -> None:
        self._field_types = list(field_types)
        self._field_names = list(field_names) if field_names is not None else None
        if self._field_names is not None and len(self._field_names) != len(self._field_types):
            raise ValueError("the number of field names and field types must be equal")

    def get_field_names(self) -> list[str]:
        return self._field_names or [f"f{i}" for i in range(len(self._field_types))]

    def get_field_index(self, field_name: str) -> int:
        return self._field_names.index(field_name) if self._field_names and field_name in self._field_names else -1

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def to_internal_type(self, obj: Any) -> Any:
        names = self.get_field_names()
        if isinstance(obj, Row):
            if hasattr(obj, "_fields"):
                values = obj.get_fields_by_names(names)
            else:
                values = list(obj)
            kind = obj.get_row_kind()
        elif isinstance(obj, dict):
            values, kind = [obj.get(n) for n in names], None
        elif isinstance(obj, (tuple, list)):
            values, kind = list(obj), None
        elif hasattr(obj, "__dict__"):
            values, kind = [obj.__dict__.get(n) for n in names], None
        else:
            raise ValueError(f"Unexpected row value {obj!r} for {self!r}")
        if len(values) != len(self._field_types):
            raise ValueError(f"{obj!r} has {len(values)} fields, {self!r} expects {len(self._field_types)}")
        row = Row(*(t.to_internal_type(v) for t, v in zip(self._field_types, values)))
        row.set_field_names(names)
        if kind is not None:
            row.set_row_kind(kind)
        return row

    def java_string(self, value: Any) -> str:
        """Java ``Row.toString``: ``+I[a, 1]``."""
        if value is None:
            return "null"
        kind = value.get_row_kind() if isinstance(value, Row) else "+I"
        return f"{kind}[{', '.join(t.java_string(v) for t, v in zip(self._field_types, value))}]"

    def format_print(self, value: Any) -> str:
        """PyFlink formats printed rows itself: ``+I[a,1]`` with Python's ``str`` of fields."""
        if not isinstance(value, Row):
            raise TypeError(f"a stream of {self!r} must hold Row values to be printed, got {value!r}")
        return "{}[{}]".format(value.get_row_kind(), ",".join(str(item) for item in value._values))

    def __repr__(self) -> str:
        if self._field_names is not None:
            return "RowTypeInfo(%s)" % ", ".join(f"{n}: {t!r}" for n, t in zip(self._field_names, self._field_types))
        return "RowTypeInfo(%s)" % ", ".join(repr(t) for t in self._field_types)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowTypeInfo) and other._field_types == self._field_types

    __hash__ = TypeInformation.__hash__


class TupleTypeInfo(TypeInformation):
    def __init__(self, field_types: list[TypeInformation]) -> None:
        self._field_types = list(field_types)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def to_internal_type(self, obj: Any) -> Any:
        values = list(obj)
        if len(values) != len(self._field_types):
            raise ValueError(f"{obj!r} has {len(values)} fields, {self!r} expects {len(self._field_types)}")
        return tuple(t.to_internal_type(v) for t, v in zip(self._field_types, values))

    def to_internal_list(self, elements: Iterable[Any]) -> list:
        """With fields that stay as they are, ``to_internal_type`` is ``tuple(obj)`` once the arity
        is right (a tuple stays the very same object): done for all elements at once."""
        elements = elements if isinstance(elements, list) else list(elements)
        if not any(t.converts() for t in self._field_types):
            converted = list(map(tuple, elements))
            if set(map(len, converted)) <= {len(self._field_types)}:
                return converted
        convert = self.to_internal_type
        return [convert(element) for element in elements]

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        return "(" + ",".join(t.java_string(v) for t, v in zip(self._field_types, value)) + ")"

    def __repr__(self) -> str:
        return "TupleTypeInfo(%s)" % ", ".join(repr(t) for t in self._field_types)


class ListTypeInfo(TypeInformation):
    def __init__(self, element_type: TypeInformation) -> None:
        self.elem_type = element_type

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        return "[" + ", ".join(self.elem_type.java_string(v) for v in value) + "]"

    def __repr__(self) -> str:
        return f"ListTypeInfo<{self.elem_type!r}>"


class BasicArrayTypeInfo(ListTypeInfo):
    def __repr__(self) -> str:
        return f"BasicArrayTypeInfo<{self.elem_type!r}>"


class ObjectArrayTypeInfo(ListTypeInfo):
    def __repr__(self) -> str:
        return f"ObjectArrayTypeInfo<{self.elem_type!r}>"


class PrimitiveArrayTypeInfo(ListTypeInfo):
    def to_internal_type(self, obj: Any) -> Any:
        return bytes(obj) if isinstance(obj, bytearray) else obj

    def __repr__(self) -> str:
        return f"PrimitiveArrayTypeInfo<{self.elem_type!r}>"


class MapTypeInfo(TypeInformation):
    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        self._key_type_info = key_type_info
        self._value_type_info = value_type_info

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        items = ", ".join(
            f"{self._key_type_info.java_string(k)}={self._value_type_info.java_string(v)}" for k, v in value.items()
        )
        return "{" + items + "}"

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info!r}, {self._value_type_info!r}>"


class SqlTimeTypeInfo(TypeInformation):
    """SQL_DATE, SQL_TIME, SQL_TIMESTAMP: ``datetime.date``, ``time``, ``datetime`` values."""

    def __init__(self, name: str) -> None:
        self._name = name

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        if isinstance(value, datetime.datetime):
            text = value.strftime("%Y-%m-%d %H:%M:%S")
            nanos = value.microsecond * 1000
            fraction = f"{nanos:09d}".rstrip("0") or "0"
            return f"{text}.{fraction}"
        if isinstance(value, datetime.time):
            return value.strftime("%H:%M:%S")
        return str(value)

    def __repr__(self) -> str:
        return self._name


class Types:
    """Factories of type information (``Types.STRING()``, ``Types.ROW([...])``, ...)."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT() -> TypeInformation:
        return BasicTypeInfo(BasicType.INSTANT)

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return SqlTimeTypeInfo("DateTypeInfo")

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return SqlTimeTypeInfo("TimeTypeInfo")

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return SqlTimeTypeInfo("TimestampTypeInfo")

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TypeInformation:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


def resolve_type(type_info: Any) -> TypeInformation:
    """PyFlink's rule for ``output_type``: None -> pickled, a list -> a row of those types."""
    if type_info is None:
        return PickledBytesTypeInfo()
    if isinstance(type_info, list):
        return RowTypeInfo(type_info)
    if not isinstance(type_info, TypeInformation):
        raise TypeError(f"{type_info!r} is not a TypeInformation (use Types.STRING(), Types.ROW([...]), ...)")
    return type_info


__all__ = [
    "BasicType", "BasicTypeInfo", "BasicArrayTypeInfo", "ListTypeInfo", "MapTypeInfo", "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo", "PrimitiveArrayTypeInfo", "RowTypeInfo", "SqlTimeTypeInfo", "TupleTypeInfo",
    "TypeInformation", "Types", "resolve_type",
]

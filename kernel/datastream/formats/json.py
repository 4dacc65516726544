"""PyFlink's ``pyflink.datastream.formats.json``: rows as JSON objects (Flink's
``JsonRowSerializationSchema`` / ``JsonRowDeserializationSchema``), for Kafka's schemas.

A row is a JSON object of its fields by the names of its ``RowTypeInfo`` (Jackson's compact
output: no spaces); reading, fields missing from the object are None (or an error with
``fail_on_missing_field``), other fields are ignored, and a message that is no JSON object is an
error (None with ``ignore_parse_errors``).
"""

from __future__ import annotations

import json
from typing import Any

from kernel.pyflink import unsupported
from kernel.common.typeinfo import RowTypeInfo, TypeInformation
from kernel.common.types import Row


def _row_type(type_info: Any) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(f"JSON row schemas need a row type (Types.ROW_NAMED), not {type_info!r}")
    return type_info


def _json_value(value: Any) -> Any:
    if isinstance(value, Row):
        return {name: _json_value(v) for name, v in value.as_dict().items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


class JsonRowSerializationSchema:
    def __init__(self, type_info: RowTypeInfo) -> None:
        self.type_info = _row_type(type_info)
        self._names = type_info.get_field_names()

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        return JsonRowSerializationSchema.Builder()

    def serialize(self, value: Any) -> bytes:
        fields = list(value) if isinstance(value, (Row, tuple, list)) else [value]
        if len(fields) != len(self._names):
            raise ValueError(f"cannot serialize {value!r} as JSON: {len(self._names)} fields expected, "
                             f"{len(fields)} found")
        obj = {name: _json_value(field) for name, field in zip(self._names, fields)}
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    class Builder:
        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None

        def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchema.Builder:
            self._type_info = _row_type(type_info)
            return self

        def build(self) -> JsonRowSerializationSchema:
            if self._type_info is None:
                raise ValueError("JsonRowSerializationSchema needs with_type_info(...)")
            return JsonRowSerializationSchema(self._type_info)


@unsupported.members("pyflink.datastream.formats.json:JsonRowDeserializationSchema")
class JsonRowDeserializationSchema:
    def __init__(self, type_info: RowTypeInfo, fail_on_missing_field: bool = False,
                 ignore_parse_errors: bool = False) -> None:
        self.type_info = _row_type(type_info)
        self._names = type_info.get_field_names()
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        return JsonRowDeserializationSchema.Builder()

    def produced_type(self) -> TypeInformation:
        return self.type_info

    def deserialize(self, message: bytes) -> Row | None:
        try:
            obj = json.loads(message)
            if not isinstance(obj, dict):
                raise ValueError(f"a JSON object expected, found {type(obj).__name__}")
            missing = [name for name in self._names if name not in obj]
            if missing and self.fail_on_missing_field:
                raise ValueError(f"field {missing[0]!r} is missing")
        except ValueError as exc:
            if self.ignore_parse_errors:
                return None
            raise ValueError(f"failed to deserialize JSON {message[:200]!r}: {exc}") from None
        row = Row(*(obj.get(name) for name in self._names))
        row.set_field_names(self._names)
        return row

    class Builder:
        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None
            self._fail_on_missing_field = False
            self._ignore_parse_errors = False

        def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchema.Builder:
            self._type_info = _row_type(type_info)
            return self

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            self._fail_on_missing_field = True
            return self

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            self._ignore_parse_errors = True
            return self

        def build(self) -> JsonRowDeserializationSchema:
            if self._type_info is None:
                raise ValueError("JsonRowDeserializationSchema needs type_info(...)")
            return JsonRowDeserializationSchema(self._type_info, self._fail_on_missing_field,
                                                self._ignore_parse_errors)


__getattr__ = unsupported.module_getattr(__name__)

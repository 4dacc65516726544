"""Encoders and schemas (``pyflink.common.serialization``).

A serialization schema turns a record into bytes (``serialize``), a deserialization schema
bytes into a record (``deserialize``) — what Kafka's sink and source apply to each record.
"""

from __future__ import annotations

from typing import Any

from kernel.pyflink import unsupported
from kernel.common.typeinfo import TypeInformation, Types


class Encoder:
    """Turns one record into bytes written by a file sink."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Writes ``toString()`` of each record followed by a newline."""
        return Encoder(charset_name)


class SimpleStringSchema:
    """Strings as bytes in ``charset`` (both ways); a record that is not a ``str`` is written as
    its ``str``."""

    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset

    def serialize(self, value: Any) -> bytes:
        return (value if isinstance(value, str) else str(value)).encode(self.charset)

    def deserialize(self, message: bytes) -> str:
        return message.decode(self.charset)

    def produced_type(self) -> TypeInformation:
        return Types.STRING()


__getattr__ = unsupported.module_getattr(__name__)

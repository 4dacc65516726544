"""Encoders and schemas (``pyflink.common.serialization``)."""

from __future__ import annotations

from kernel.pyflink import unsupported


class Encoder:
    """Turns one record into bytes written by a file sink."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Writes ``toString()`` of each record followed by a newline."""
        return Encoder(charset_name)


class SimpleStringSchema:
    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset


__getattr__ = unsupported.module_getattr(__name__)

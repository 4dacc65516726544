"""``TypeSerializer`` (``pyflink.common.serializer``): how a value of a type is written to and
read from a byte stream (window serializers use it)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from io import BytesIO
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["TypeSerializer"]


class TypeSerializer(ABC, Generic[T]):
    """Serialises values of one type; two serializers of the same class and settings are equal."""

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, self.__class__) and self.__dict__ == other.__dict__

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"

    def __hash__(self) -> int:
        return hash(str(self))

    @abstractmethod
    def serialize(self, element: T, stream: BytesIO) -> None:
        """Write ``element`` to ``stream``."""

    @abstractmethod
    def deserialize(self, stream: BytesIO) -> T:
        """Read one element from ``stream``."""

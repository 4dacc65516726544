"""``ConfigOptions`` and ``ConfigOption`` (``pyflink.common``): typed configuration keys::

    ConfigOptions.key("tmp.dir").string_type().default_value("/tmp")
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["ConfigOptions", "ConfigOption"]


class ConfigOption(Generic[T]):
    """A configuration key with the type of its value and an optional default; immutable."""

    def __init__(self, key: str, value_type: type, default: Any = None) -> None:
        self._key = key
        self._type = value_type
        self._default = default

    def key(self) -> str:
        return self._key

    def default_value(self) -> Any:
        return self._default

    def has_default_value(self) -> bool:
        return self._default is not None

    def __repr__(self) -> str:
        return f"Key: '{self._key}' , default: {self._default}"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ConfigOption) and (other._key, other._default) == (self._key, self._default)

    def __hash__(self) -> int:
        return hash((self._key, self._default))


class ConfigOptions:
    @staticmethod
    def key(key: str) -> ConfigOptions.OptionBuilder:
        """Start building the option ``key``."""
        if not key:
            raise ValueError("the configuration key must not be empty")
        return ConfigOptions.OptionBuilder(key)

    class OptionBuilder:
        def __init__(self, key: str) -> None:
            self._key = key

        def boolean_type(self) -> ConfigOptions.TypedConfigOptionBuilder[bool]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, bool)

        def int_type(self) -> ConfigOptions.TypedConfigOptionBuilder[int]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, int)

        def long_type(self) -> ConfigOptions.TypedConfigOptionBuilder[int]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, int)

        def float_type(self) -> ConfigOptions.TypedConfigOptionBuilder[float]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, float)

        def double_type(self) -> ConfigOptions.TypedConfigOptionBuilder[float]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, float)

        def string_type(self) -> ConfigOptions.TypedConfigOptionBuilder[str]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, str)

    class TypedConfigOptionBuilder(Generic[T]):
        def __init__(self, key: str, value_type: type) -> None:
            self._key = key
            self._type = value_type

        def default_value(self, value: T) -> ConfigOption[T]:
            return ConfigOption(self._key, self._type, value)

        def no_default_value(self) -> ConfigOption[str]:
            return ConfigOption(self._key, self._type)

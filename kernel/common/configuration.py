"""``Configuration`` (``pyflink.common.Configuration``): string keys and values (byte arrays
kept as such)."""

from __future__ import annotations

from typing import Any

__all__ = ["Configuration"]


class Configuration:
    def __init__(self, other: Configuration | None = None) -> None:
        self._values: dict[str, Any] = dict(other._values) if other is not None else {}

    @classmethod
    def from_dict(cls, map: dict[str, str]) -> Configuration:
        configuration = cls()
        for key, value in map.items():
            configuration.set_string(key, value)
        return configuration

    @staticmethod
    def parse_list_value(value: str | None) -> list[Any]:
        """A list option's value: a YAML list (``[a, b]``) or ``;``-separated values."""
        if not value:
            return []
        import yaml

        parsed = yaml.safe_load(value)
        if isinstance(parsed, list):
            return parsed
        return value.split(";")

    def set_string(self, key: str, value: str) -> Configuration:
        self._values[key] = str(value)
        return self

    def get_string(self, key: str, default_value: str | None = None) -> str | None:
        return self._values.get(key, default_value)

    def set_integer(self, key: str, value: int) -> Configuration:
        return self.set_string(key, str(int(value)))

    def get_integer(self, key: str, default_value: int = 0) -> int:
        return int(self._values[key]) if key in self._values else default_value

    def set_boolean(self, key: str, value: bool) -> Configuration:
        return self.set_string(key, "true" if value else "false")

    def get_boolean(self, key: str, default_value: bool = False) -> bool:
        return self._values[key].lower() == "true" if key in self._values else default_value

    def set_float(self, key: str, value: float) -> Configuration:
        return self.set_string(key, str(float(value)))

    def get_float(self, key: str, default_value: float = 0.0) -> float:
        return float(self._values[key]) if key in self._values else default_value

    def get_bytearray(self, key: str, default_value: bytearray) -> bytearray:
        value = self._values.get(key)
        if value is None:
            return bytearray(default_value)
        if not isinstance(value, (bytes, bytearray)):
            raise ValueError(f"Configuration cannot evaluate value {value} as a byte[] value")
        return bytearray(value)

    def set_bytearray(self, key: str, value: bytearray) -> Configuration:
        self._values[key] = bytes(value)
        return self

    def contains_key(self, key: str) -> bool:
        return key in self._values

    def key_set(self) -> set[str]:
        return set(self._values)

    def remove_config(self, key: str) -> bool:
        return self._values.pop(key, None) is not None

    def add_all(self, other: Configuration, prefix: str | None = None) -> Configuration:
        for key, value in other._values.items():
            self._values[(prefix or "") + key] = value
        return self

    def add_all_to_dict(self, target_dict: dict) -> None:
        target_dict.update(self.to_dict())

    def to_dict(self) -> dict[str, str]:
        return {key: value for key, value in self._values.items() if isinstance(value, str)}

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Configuration) and other._values == self._values

    def __repr__(self) -> str:
        return f"Configuration({self._values})"

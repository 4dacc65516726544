"""Value types of config keys with Flink's textual formats: durations and memory sizes."""

from __future__ import annotations

import re
from typing import Annotated, Any, get_args, get_origin

_DURATION_UNITS_NS = {
    ("ns", "nano", "nanos", "nanosecond", "nanoseconds"): 1,
    ("us", "µs", "micro", "micros", "microsecond", "microseconds"): 1_000,
    ("ms", "milli", "millis", "millisecond", "milliseconds"): 1_000_000,
    ("s", "sec", "secs", "second", "seconds"): 1_000_000_000,
    ("m", "min", "mins", "minute", "minutes"): 60_000_000_000,
    ("h", "hour", "hours"): 3_600_000_000_000,
    ("d", "day", "days"): 86_400_000_000_000,
}
_DURATION_UNIT = {alias: factor for aliases, factor in _DURATION_UNITS_NS.items() for alias in aliases}

_MEMORY_UNITS = {
    ("b", "bytes"): 1,
    ("k", "kb", "kibibytes"): 1 << 10,
    ("m", "mb", "mebibytes"): 1 << 20,
    ("g", "gb", "gibibytes"): 1 << 30,
    ("t", "tb", "tebibytes"): 1 << 40,
}
_MEMORY_UNIT = {alias: factor for aliases, factor in _MEMORY_UNITS.items() for alias in aliases}

#: the longest duration a key takes: what the kernel clock counts (nanoseconds in 64 bits, 106,751 days)
MAX_DURATION_MS = ((1 << 63) - 1) // 1_000_000

_AMOUNT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([^\d\s]*)\s*$")


class _Unit:
    """Marker in ``Annotated`` metadata: the key accepts a number with a unit."""

    def __init__(self, name: str, example: str, parse):
        self.name = name
        self.example = example
        self.parse = parse

    def __repr__(self) -> str:
        return self.name


def parse_duration_ms(value: Any) -> int:
    """Parse a Flink duration ("10 s", "1 min", "500ms", or a plain number of ms) into ms."""
    if isinstance(value, bool):
        raise ValueError("expected a duration")
    if isinstance(value, (int, float)):
        return _within_clock(int(value))
    match = _AMOUNT.match(str(value))
    if not match:
        raise ValueError("expected a duration like '10 s'")
    number, unit = match.groups()
    factor = _DURATION_UNIT.get(unit.lower() if unit else "ms")
    if factor is None:
        raise ValueError(f"unknown time unit {unit!r} (use ms, s, min, h, d)")
    return _within_clock(int(float(number) * factor) // 1_000_000)


def _within_clock(ms: int) -> int:
    if abs(ms) > MAX_DURATION_MS:
        raise ValueError(f"a duration of at most {MAX_DURATION_MS // 86_400_000} d")
    return ms


def parse_memory_bytes(value: Any) -> int:
    """Parse a Flink memory size ("32 kb", "1 mb", or a plain number of bytes) into bytes."""
    if isinstance(value, bool):
        raise ValueError("expected a memory size")
    if isinstance(value, (int, float)):
        return int(value)
    match = _AMOUNT.match(str(value))
    if not match:
        raise ValueError("expected a memory size like '32 kb'")
    number, unit = match.groups()
    factor = _MEMORY_UNIT.get(unit.lower() if unit else "b")
    if factor is None:
        raise ValueError(f"unknown memory unit {unit!r} (use b, kb, mb, gb)")
    return int(float(number) * factor)


DURATION = _Unit("duration", "10 s", parse_duration_ms)
MEMORY = _Unit("memory size", "32 kb", parse_memory_bytes)

#: An int of milliseconds, written in config as a Flink duration ("10 s", "200 ms").
DurationMs = Annotated[int, DURATION]
#: An int of bytes, written in config as a Flink memory size ("32 kb").
MemoryBytes = Annotated[int, MEMORY]


def unit_of(annotation: Any) -> _Unit | None:
    """The unit marker of an annotation, if it is ``DurationMs``, ``MemoryBytes`` or optional of one."""
    if get_origin(annotation) is Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, _Unit):
                return meta
    for arg in get_args(annotation):
        found = unit_of(arg)
        if found is not None:
            return found
    return None

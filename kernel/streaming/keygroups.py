"""Key groups exactly as Flink assigns them (KeyGroupRangeAssignment).

``key_group = murmur(javaHashCode(key)) % max_parallelism``;
``subtask = key_group * parallelism // max_parallelism``. The Java hash of a Python key is
computed the way the JVM would for the corresponding Java type (String, Integer/Long,
Double, Boolean, Row/Tuple), so routing is stable across processes and runs — never
Python's salted ``hash()``.
"""

from __future__ import annotations

import struct

import mmh3

from kernel.common import javavalues as jv

UPPER_BOUND_MAX_PARALLELISM = 1 << 15
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 1 << 7


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: Murmur3 32-bit of one int, made non-negative."""
    h = mmh3.hash(struct.pack("<i", jv.int32(code)), 0, signed=True)
    if h >= 0:
        return h
    return -h if h != -(1 << 31) else 0


def round_up_to_power_of_two(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def default_max_parallelism(parallelism: int) -> int:
    """``min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768)``."""
    return min(
        max(round_up_to_power_of_two(parallelism + parallelism // 2), DEFAULT_LOWER_BOUND_MAX_PARALLELISM),
        UPPER_BOUND_MAX_PARALLELISM,
    )


def java_hash(key: object) -> int:
    """The ``hashCode()`` a JVM would compute for the Java value Python's ``key`` maps to."""
    if isinstance(key, str):
        return jv.string_hash(key)
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        return key if -(1 << 31) <= key < (1 << 31) else jv.long_hash(key)  # Integer / Long
    if isinstance(key, float):
        return jv.double_hash(key)
    if isinstance(key, bytes):
        return jv.bytes_hash(key)
    if isinstance(key, (tuple, list)):
        h = 1
        for item in key:  # List.hashCode
            h = jv.int32(31 * h + (0 if item is None else java_hash(item)))
        return h
    if key is None:
        return 0
    raise TypeError(f"key of type {type(key).__name__} has no Java hash; use str, int, float, bool, tuple or Row keys")


def assign_to_key_group(key: object, max_parallelism: int) -> int:
    return murmur_hash(java_hash(key)) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    return key_group * parallelism // max_parallelism


def key_group_range(max_parallelism: int, parallelism: int, index: int) -> tuple[int, int]:
    """Inclusive range of key groups owned by subtask ``index``."""
    start = (index * max_parallelism + parallelism - 1) // parallelism
    end = ((index + 1) * max_parallelism + parallelism - 1) // parallelism - 1
    return start, end

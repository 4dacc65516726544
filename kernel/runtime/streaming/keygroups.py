"""Key groups exactly as Flink assigns them (KeyGroupRangeAssignment).

``key_group = murmur(key.hashCode()) % max_parallelism``;
``subtask = key_group * parallelism // max_parallelism``. The ``hashCode()`` of a PyFlink key
(a Java Row holding the key decoded by its key type) comes from ``kernel.jvm.keyhash``, so
routing is stable across processes and runs — never Python's salted ``hash()``.
"""

from __future__ import annotations

import struct

import mmh3

from kernel.jvm import javavalues as jv

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


def assign_to_key_group(key_hash: int, max_parallelism: int) -> int:
    """``computeKeyGroupForKeyHash``: the key group of a key whose ``hashCode()`` is ``key_hash``."""
    return murmur_hash(key_hash) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    return key_group * parallelism // max_parallelism


def key_group_range(max_parallelism: int, parallelism: int, index: int) -> tuple[int, int]:
    """Inclusive range of key groups owned by subtask ``index``."""
    start = (index * max_parallelism + parallelism - 1) // parallelism
    end = ((index + 1) * max_parallelism + parallelism - 1) // parallelism - 1
    return start, end

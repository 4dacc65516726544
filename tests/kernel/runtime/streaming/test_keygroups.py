from __future__ import annotations

import pytest

from kernel.jvm import javavalues as jv
from kernel.runtime.streaming.keygroups import (
    assign_to_key_group,
    default_max_parallelism,
    key_group_range,
    murmur_hash,
    operator_index_for_key_group,
)


@pytest.mark.parametrize("code, expected", [
    (0, 593689054), (42, 1134849565), (-42, 189366624), (-(1 << 31), 1718298732), ((1 << 31) - 1, 1653689534),
    (1, 68075478), (-1, 1982413648),
])
def test_murmur_hash_of_int_matches_flink(code, expected):
    """Flink's MathUtils.murmurHash(int): Guava's murmur3_32 of the int, made non-negative."""
    assert murmur_hash(code) == expected


def test_java_string_hash():
    assert jv.string_hash("hello") == 99162322
    assert jv.string_hash("") == 0
    assert jv.string_hash("Aa") == jv.string_hash("BB")  # the classic Java collision
    assert jv.string_hash("日本") == 835047  # UTF-16 units 0x65E5, 0x672C
    assert jv.string_hash("😀") == 0xD83D * 31 + 0xDE00  # a surrogate pair hashes as two units


@pytest.mark.parametrize("key_hash, key_group, operator", [
    (159, 64, 2),  # Row.of("a") with Types.STRING(): 62 + "a".hashCode() (97)
    (63, 44, 1),  # Row.of(1) with Types.INT() or Types.LONG(): 62 + 1
    (1293, 67, 2),  # Row.of(True) with Types.BOOLEAN(): 62 + 1231
    (-2088826310, 33, 1),  # Row.of(pickled "a"): 31 + 31 + Arrays.hashCode(80 05 95 05 .. 8c 01 61 94 2e)
])
def test_key_groups_of_key_hashes(key_hash, key_group, operator):
    """murmur(hash) % 128, then key_group * 4 // 128 (reference §9.4, §16). The subtasks are the
    ones real PyFlink 2.3 printed at parallelism 4 for these keys ("a" 3>, 1 2>, True 3>,
    untyped "a" 2>; tests/kernel/jvm/test_keyhash.py has the recordings)."""
    assert assign_to_key_group(key_hash, 128) == key_group
    assert operator_index_for_key_group(128, 4, key_group) == operator


def test_default_max_parallelism():
    assert [default_max_parallelism(p) for p in (1, 85, 86, 1000, 30000)] == [128, 128, 256, 2048, 32768]


def test_key_group_ranges_cover_everything_once():
    for parallelism in (1, 3, 7, 128):
        covered = []
        for index in range(parallelism):
            start, end = key_group_range(128, parallelism, index)
            covered.extend(range(start, end + 1))
            for key_group in range(start, end + 1):
                assert operator_index_for_key_group(128, parallelism, key_group) == index
        assert covered == list(range(128))

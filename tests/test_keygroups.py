from __future__ import annotations

import pytest

from kernel.common import Row, Types
from kernel.common import javavalues as jv
from kernel.common.typeinfo import key_hash
from kernel.streaming.keygroups import (
    assign_to_key_group,
    default_max_parallelism,
    java_hash,
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


@pytest.mark.parametrize("key, key_group, operator", [
    ("hello", 35, 1), ("a", 81, 2), ("b", 22, 0), ("key1", 41, 1), ("flink", 98, 3),
    (0, 94, 2), (42, 29, 0),
])
def test_key_groups_of_java_keys(key, key_group, operator):
    assert assign_to_key_group(key, 128) == key_group
    assert operator_index_for_key_group(128, 4, key_group) == operator


def test_long_keys_hash_like_java_long():
    assert assign_to_key_group(1 << 40, 128) == murmur_hash(((1 << 40) ^ ((1 << 40) >> 32)) & 0xFFFFFFFF) % 128


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


def test_pyflink_key_by_hashes_row_of_the_typed_key():
    """PyFlink keys by Java Row.of(key): hash = 31 * RowKind.INSERT(0) + (31 + key.hashCode())."""
    assert key_hash("hello", Types.STRING()) == 31 + 99162322
    assert key_hash(7, Types.INT()) == 31 + 7
    assert key_hash(("a", 1), Types.TUPLE([Types.STRING(), Types.INT()])) == 31 + (97 * 31 + 1)
    assert key_hash(Row("a", 1), Types.ROW([Types.STRING(), Types.INT()])) == (31 * (31 + 97) + 31 + 1)


def test_untyped_keys_hash_their_pickled_bytes_stably():
    import pickle

    from kernel.common.javavalues import bytes_hash

    assert key_hash("hello", None) == 31 + bytes_hash(pickle.dumps("hello"))
    assert key_hash(("a", 1), None) == key_hash(("a", 1), None)


def test_java_hash_of_python_values_follows_java_types():
    assert java_hash("hello") == 99162322
    assert java_hash(7) == 7 and java_hash(True) == 1231
    assert java_hash(1 << 40) == 256  # Long.hashCode: (int)(v ^ v >>> 32)
    assert java_hash(1.0) == 1072693248  # Double.hashCode
    assert java_hash(("a", 1)) == (31 + 97) * 31 + 1  # List.hashCode

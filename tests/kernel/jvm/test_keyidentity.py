"""Which keys are one key: Java's equality of PyFlink's keys (``kernel.jvm.keyidentity``)."""

from __future__ import annotations

import decimal
import pickle

from kernel.common import Row, Types
from kernel.jvm.keyidentity import JavaKey, java_identity, state_key_function, user_key


def test_untyped_keys_are_one_key_when_their_pickled_bytes_are():
    state_key = state_key_function(None)
    assert state_key("a") == "a" and state_key(7) == 7 and state_key(("a", 1)) == ("a", 1) and state_key(None) is None
    assert len({state_key(k) for k in (1, True, 1.0)}) == 3  # one key each, as in PyFlink
    assert state_key([1, 2]) == state_key([1, 2]) != state_key((1, 2))
    assert state_key({"a": 1, "b": 2}) != state_key({"b": 2, "a": 1})  # pickled in insertion order
    assert state_key(float("nan")) == state_key(float("nan"))
    assert state_key(bytearray(b"x")) != state_key(b"x")
    assert user_key(state_key([1])) == [1] and user_key("a") == "a"


def test_typed_keys_are_one_key_when_the_java_objects_are_equal():
    assert state_key_function(Types.STRING()) is None  # a str is its own key
    assert state_key_function(Types.ROW([Types.STRING(), Types.INT()])) is None
    double = state_key_function(Types.DOUBLE())
    assert double(0.0) != double(-0.0) and double(float("nan")) == double(-float("nan"))
    big = state_key_function(Types.BIG_DEC())
    assert big(decimal.Decimal("1.0")) != big(decimal.Decimal("1.00")) and big(decimal.Decimal("-0")) == big(decimal.Decimal("0"))
    mapped = state_key_function(Types.MAP(Types.STRING(), Types.LIST(Types.INT())))
    assert mapped({"a": [1], "b": [2]}) == mapped({"b": [2], "a": [1]})  # HashMap.equals
    row = java_identity(Types.ROW([Types.INT(), Types.LIST(Types.INT())]))
    assert row(Row(1, [2])) == row(Row(1, [2])) != row(Row(1, [3]))


def test_a_java_key_pickles_and_compares_only_with_java_keys():
    key = JavaKey(b"\x80\x05", [1])
    assert pickle.loads(pickle.dumps(key)) == key and key != b"\x80\x05" and hash(key) == hash(b"\x80\x05")
    assert repr(key) == "JavaKey([1])"

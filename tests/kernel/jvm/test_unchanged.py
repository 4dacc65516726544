"""Batch tests of kernel.jvm.unchanged: true exactly when every value passes the per-value
test, for the coders' and for from_collection's kinds of values."""

from __future__ import annotations

import datetime
import decimal

import pytest

from kernel.common import Types
from kernel.jvm.bridge import _kept as java_kept
from kernel.jvm.coders import _kept as coder_kept
from kernel.jvm.unchanged import batch_test, compiled, expression


class Text(str):
    pass


class Number(int):
    pass


TYPES = [
    Types.STRING(), Types.INT(), Types.LONG(), Types.BYTE(), Types.BOOLEAN(), Types.DOUBLE(), Types.BIG_DEC(),
    Types.SQL_DATE(), Types.PICKLED_BYTE_ARRAY(),
    Types.TUPLE([Types.STRING(), Types.INT()]),
    Types.TUPLE([Types.STRING(), Types.LONG(), Types.TUPLE([Types.BOOLEAN(), Types.DOUBLE()])]),
    Types.TUPLE([Types.BIG_DEC(), Types.SQL_DATE(), Types.PICKLED_BYTE_ARRAY()]),
]
VALUES = [
    "w", Text("w"), 1, -(2**31), 2**31 - 1, 2**31, -(2**63), 2**63, Number(3), True, False, 1.5, None,
    decimal.Decimal("1.5"), datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1), ["w", 1], b"ab",
    ("w", 1), ("w", 2**31), ("w", True), ("w", 1.0), (Text("w"), 1), ("w",), ("w", 1, 2), [("w", 1)],
    ("w", 2**40, (True, 1.0)), ("w", 2**40, (1, 1.0)), ("w", 2**40, [True, 1.0]), ("w", 2**63, (True, 1.0)),
    (decimal.Decimal("2"), datetime.date(2020, 1, 2), object()), (2.0, datetime.date(2020, 1, 2), None),
]


@pytest.mark.parametrize("kept", [coder_kept, java_kept], ids=["coder", "java"])
@pytest.mark.parametrize("type_info", TYPES, ids=repr)
def test_a_batch_passes_exactly_when_each_of_its_values_passes(kept, type_info):
    test = expression(type_info, "value", kept)
    batch = batch_test(type_info, kept)
    assert (test is None) == (batch is None)
    if test is None:
        return
    one = compiled("one", f"def one(value):\n    return bool({test})\n")
    passing = [value for value in VALUES if one(value)]
    assert passing, "every type has values that pass"
    assert batch(passing) is True and batch([]) is True
    for value in VALUES:
        assert batch([*passing, value]) is one(value), value
        assert batch([value, *passing]) is one(value), value


def test_the_kinds_the_tests_keep():
    """Exact types only (a str subclass, a bool for an int are converted), ints in range."""
    tuple_test = batch_test(Types.TUPLE([Types.STRING(), Types.INT()]), coder_kept)
    assert tuple_test([("a", 1), ("b", -(2**31))])
    assert not tuple_test([("a", 1), (Text("b"), 1)])
    assert not tuple_test([("a", True)])
    assert not tuple_test([("a", 2**31)])
    assert not tuple_test([["a", 1]])
    assert not tuple_test([("a", 1, 2)])
    assert not tuple_test([None])
    strings = batch_test(Types.STRING(), coder_kept)
    assert strings(["a", "b"]) and not strings(["a", Text("b")]) and not strings(["a", None])
    longs = batch_test(Types.LONG(), coder_kept)
    assert longs([0, 2**63 - 1, -(2**63)]) and not longs([2**63]) and not longs([1, True]) and not longs([Number(1)])


def test_a_compiled_test_is_pickled_by_value_from_its_module():
    """A compiled function belongs to this module, which does not have it: cloudpickle sends it
    by value without searching every loaded module for a function of its name (a search it
    made for each such function of a task it deployed to another process), and the copy tests
    as the original does."""
    import pickle

    import cloudpickle

    from kernel.jvm.coders import coder_conversion

    convert = coder_conversion(Types.TUPLE([Types.STRING(), Types.INT()]))
    unchanged = batch_test(Types.TUPLE([Types.STRING(), Types.INT()]), coder_kept)
    assert (convert.__module__, unchanged.__module__) == ("kernel.jvm.unchanged", "kernel.jvm.unchanged")
    copies = pickle.loads(cloudpickle.dumps((convert, unchanged)))
    assert copies[0] is not convert and copies[0](("a", 1)) == ("a", 1) and copies[0](("a", True)) == ("a", 1)
    assert copies[1]([("a", 1), ("b", 2)]) is True and copies[1]([("a", 1), ("b", 2**40)]) is False

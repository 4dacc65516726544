"""What PyFlink's coders make of a value of a declared type (kernel.jvm.coders).

Every expectation was recorded with PyFlink 2.3.0's own Cython coders: in /work/venvs/pyflink,
``from_type_info(type_info).get_impl()`` then ``impl.decode(impl.encode(value))``, printing the
type and repr of the result or the exception's type and message (``field_conversion`` is that
round trip; ``coder_conversion`` adds the top level, where PyFlink hands None on as null).
"""

from __future__ import annotations

import datetime
import decimal
import math

import pytest

from kernel.common import Instant, Row, Types
from kernel.jvm.coders import coder_conversion, field_conversion

D = decimal.Decimal
FIXED_2H = datetime.timezone(datetime.timedelta(hours=2))

#: (type, value, (result type name, repr of the result)) — recorded on PyFlink 2.3.0
ROUND_TRIPS = [
    (Types.INT(), 1, ("int", "1")),
    (Types.INT(), True, ("int", "1")),
    (Types.INT(), 1.5, ("int", "1")),
    (Types.INT(), D("3.7"), ("int", "3")),
    (Types.SHORT(), 1.9, ("int", "1")),
    (Types.BYTE(), 127, ("int", "127")),
    (Types.LONG(), -2**63, ("int", "-9223372036854775808")),
    (Types.LONG(), 2.5, ("int", "2")),
    (Types.LONG(), True, ("int", "1")),
    (Types.BIG_INT(), 5, ("int", "5")),
    (Types.FLOAT(), 110.1, ("float", "110.0999984741211")),
    (Types.FLOAT(), 1, ("float", "1.0")),
    (Types.FLOAT(), 1e40, ("float", "inf")),
    (Types.FLOAT(), -1e40, ("float", "-inf")),
    (Types.FLOAT(), True, ("float", "1.0")),
    (Types.FLOAT(), 2**200, ("float", "inf")),
    (Types.FLOAT(), D("1.1"), ("float", "1.100000023841858")),
    (Types.DOUBLE(), 110.1, ("float", "110.1")),
    (Types.DOUBLE(), 1, ("float", "1.0")),
    (Types.DOUBLE(), True, ("float", "1.0")),
    (Types.DOUBLE(), D("1.1"), ("float", "1.1")),
    (Types.BOOLEAN(), 0, ("bool", "False")),
    (Types.BOOLEAN(), 2, ("bool", "True")),
    (Types.BOOLEAN(), 0.5, ("bool", "False")),
    (Types.STRING(), "a", ("str", "'a'")),
    (Types.CHAR(), "ab", ("str", "'ab'")),
    (Types.BIG_DEC(), D("1.10"), ("Decimal", "Decimal('1.10')")),
    (Types.BIG_DEC(), 1.1, ("Decimal", "Decimal('1.1')")),
    (Types.BIG_DEC(), 3, ("Decimal", "Decimal('3')")),
    (Types.BIG_DEC(), "2.50", ("Decimal", "Decimal('2.50')")),
    (Types.BIG_DEC(), D("1E+2"), ("Decimal", "Decimal('1E+2')")),
    (Types.SQL_DATE(), datetime.date(2024, 1, 2), ("date", "datetime.date(2024, 1, 2)")),
    (Types.SQL_DATE(), datetime.datetime(2024, 1, 2, 3, 4, 5), ("date", "datetime.date(2024, 1, 2)")),
    (Types.SQL_TIME(), datetime.time(1, 2, 3, 456789), ("time", "datetime.time(1, 2, 3, 456000)")),
    (Types.SQL_TIME(), datetime.datetime(2024, 1, 2, 3, 4, 5, 6789), ("time", "datetime.time(3, 4, 5, 6000)")),
    (Types.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
     ("datetime", "datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)")),
    (Types.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=FIXED_2H),
     ("datetime", "datetime.datetime(2024, 1, 2, 3, 4, 5)")),
    (Types.PICKLED_BYTE_ARRAY(), (1, 2), ("tuple", "(1, 2)")),
    (Types.PICKLED_BYTE_ARRAY(), Row(1, 2), ("Row", "<Row(1, 2)>")),
    (Types.ROW([Types.INT(), Types.FLOAT()]), Row(1, 1.1), ("Row", "Row(f0=1, f1=1.100000023841858)")),
    (Types.ROW([Types.INT(), Types.FLOAT()]), Row(1, None), ("Row", "Row(f0=1, f1=None)")),
    (Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.FLOAT()]), Row(1, 1.1), ("Row", "Row(a=1, b=1.100000023841858)")),
    (Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.FLOAT()]), Row(b=1.1, a=2),
     ("Row", "Row(a=2, b=1.100000023841858)")),
    (Types.TUPLE([Types.INT(), Types.FLOAT()]), (1, 1.1), ("tuple", "(1, 1.100000023841858)")),
    (Types.TUPLE([Types.INT(), Types.FLOAT()]), (1, 2, 3), ("tuple", "(1, 2.0)")),
    (Types.BASIC_ARRAY(Types.FLOAT()), [1.1, None], ("list", "[1.100000023841858, None]")),
    (Types.PRIMITIVE_ARRAY(Types.INT()), [1, 2], ("list", "[1, 2]")),
    (Types.PRIMITIVE_ARRAY(Types.BYTE()), b"ab", ("bytes", "b'ab'")),
    (Types.PRIMITIVE_ARRAY(Types.BYTE()), bytearray(b"ab"), ("bytes", "b'ab'")),
    (Types.OBJECT_ARRAY(Types.STRING()), ["a", None], ("list", "['a', None]")),
    (Types.LIST(Types.FLOAT()), [1.1, None], ("list", "[1.100000023841858, None]")),
    (Types.MAP(Types.STRING(), Types.FLOAT()), {"a": 1.1, "b": None},
     ("dict", "{'a': 1.100000023841858, 'b': None}")),
    (Types.INSTANT(), None, ("NoneType", "None")),
]

#: (type, value, (exception type, message)) — recorded on PyFlink 2.3.0
FAILURES = [
    (Types.INT(), 2**31, (OverflowError, "value too large to convert to int32_t")),
    (Types.INT(), -2**31 - 1, (OverflowError, "value too large to convert to int32_t")),
    (Types.INT(), "7", (TypeError, "an integer is required")),
    (Types.INT(), None, (TypeError, "an integer is required")),
    (Types.SHORT(), 32768, (OverflowError, "value too large to convert to int16_t")),
    (Types.SHORT(), -40000, (OverflowError, "value too large to convert to int16_t")),
    (Types.BYTE(), 128, (OverflowError, "value too large to convert to int8_t")),
    (Types.BYTE(), -129, (OverflowError, "value too large to convert to int8_t")),
    (Types.LONG(), 2**63, (OverflowError, "Python int too large to convert to C long")),
    (Types.LONG(), "1", (TypeError, "an integer is required")),
    (Types.BIG_INT(), 2**63, (OverflowError, "Python int too large to convert to C long")),
    (Types.FLOAT(), "1.5", (TypeError, "must be real number, not str")),
    (Types.DOUBLE(), "1.5", (TypeError, "must be real number, not str")),
    (Types.DOUBLE(), 10**400, (OverflowError, "int too large to convert to float")),
    (Types.BOOLEAN(), 256, (OverflowError, "value too large to convert to unsigned char")),
    (Types.BOOLEAN(), -1, (OverflowError, "can't convert negative value to unsigned char")),
    (Types.BOOLEAN(), "x", (TypeError, "an integer is required")),
    (Types.BOOLEAN(), [1], (TypeError, "an integer is required")),
    (Types.STRING(), 1, (AttributeError, "'int' object has no attribute 'encode'")),
    (Types.STRING(), b"x", (AttributeError, "'bytes' object has no attribute 'encode'")),
    (Types.STRING(), ("a",), (AttributeError, "'tuple' object has no attribute 'encode'")),
    (Types.CHAR(), 1, (AttributeError, "'int' object has no attribute 'encode'")),
    (Types.SQL_DATE(), "2024-01-01", (AttributeError, "'str' object has no attribute 'toordinal'")),
    (Types.SQL_TIME(), "x", (AttributeError, "'str' object has no attribute 'hour'")),
    (Types.SQL_TIMESTAMP(), datetime.date(2024, 1, 2),
     (TypeError, "'tzinfo' is an invalid keyword argument for replace()")),
    (Types.SQL_TIMESTAMP(), 5, (AttributeError, "'int' object has no attribute 'replace'")),
    (Types.ROW([Types.INT(), Types.FLOAT()]), (1, 1.1),
     (AttributeError, "'tuple' object has no attribute 'get_fields_by_names'")),
    (Types.ROW([Types.INT(), Types.FLOAT()]), [1, 1.1],
     (AttributeError, "'list' object has no attribute 'get_fields_by_names'")),
    (Types.TUPLE([Types.INT(), Types.FLOAT()]), [1, 1.1], (TypeError, "Expected tuple, got list")),
    (Types.TUPLE([Types.INT(), Types.FLOAT()]), Row(1, 1.1), (TypeError, "Expected tuple, got Row")),
    (Types.TUPLE([Types.INT(), Types.FLOAT()]), (1, None), (TypeError, "must be real number, not NoneType")),
    (Types.BASIC_ARRAY(Types.FLOAT()), (1.1, 2.2), (TypeError, "Expected list, got tuple")),
    (Types.BASIC_ARRAY(Types.FLOAT()), "ab", (TypeError, "Expected list, got str")),
    (Types.PRIMITIVE_ARRAY(Types.INT()), [1, None], (TypeError, "an integer is required")),
    (Types.PRIMITIVE_ARRAY(Types.BYTE()), [1, 2], (TypeError, "expected bytes, list found")),
    (Types.LIST(Types.FLOAT()), (1.1,), (TypeError, "Expected list, got tuple")),
    (Types.MAP(Types.STRING(), Types.FLOAT()), {1: 1.1}, (AttributeError, "'int' object has no attribute 'encode'")),
    (Types.MAP(Types.STRING(), Types.FLOAT()), [("a", 1.1)], (AttributeError, "'list' object has no attribute 'items'")),
]


@pytest.mark.parametrize("type_info, value, expected", ROUND_TRIPS)
def test_a_value_comes_back_as_pyflinks_coder_reads_it(type_info, value, expected):
    result = field_conversion(type_info)(value)
    assert (type(result).__name__, repr(result)) == expected
    top = coder_conversion(type_info)  # the same at the top level, through its inline test
    if top is not None and value is not None:
        result = top(value)
        assert (type(result).__name__, repr(result)) == expected


@pytest.mark.parametrize("type_info, value, expected", FAILURES)
def test_a_value_the_coder_cannot_write_fails_with_its_error(type_info, value, expected):
    error, message = expected
    conversions = [field_conversion(type_info)] + ([coder_conversion(type_info)] if value is not None else [])
    for convert in conversions:
        with pytest.raises(error) as raised:
            convert(value)
        assert str(raised.value) == message


def test_values_the_coder_gives_back_as_they_are_pass_unchanged_at_the_top_level():
    pair = ("w", 2**31 - 1)
    convert = coder_conversion(Types.TUPLE([Types.STRING(), Types.INT()]))
    assert convert(pair) is pair
    assert convert(("w", True)) == ("w", 1) and type(convert(("w", True))[1]) is int
    assert coder_conversion(Types.TUPLE([Types.STRING(), Types.FLOAT()]))(("w", 0.1)) == ("w", 0.10000000149011612)


def test_nan_stays_nan_and_rows_keep_their_kind():
    """Recorded: nan -> nan; Row.of_kind(DELETE, 1.9) as ROW_NAMED(["a"], [INT]) -> Row(a=1), -D."""
    assert math.isnan(field_conversion(Types.FLOAT())(math.nan))
    from kernel.common import RowKind

    converted = field_conversion(Types.ROW_NAMED(["a"], [Types.INT()]))(Row.of_kind(RowKind.DELETE, 1.9))
    assert converted.get_row_kind() is RowKind.DELETE and repr(converted) == "Row(a=1)"


def test_a_named_row_missing_a_field_of_the_type_fails_as_in_pyflink():
    # recorded: "Exception: Field names ['a', 'b'] not exist in ['x', 'y']." (a set's order)
    with pytest.raises(Exception) as raised:
        field_conversion(Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.INT()]))(Row(x=1, y=2))
    assert str(raised.value) in ("Field names ['a', 'b'] not exist in ['x', 'y'].",
                                 "Field names ['b', 'a'] not exist in ['x', 'y'].")


def test_the_top_level_passes_none_and_pickled_values_need_no_conversion():
    assert coder_conversion(Types.PICKLED_BYTE_ARRAY()) is None and coder_conversion(None) is None
    for type_info in (Types.INT(), Types.STRING(), Types.ROW([Types.INT()]), Types.TUPLE([Types.INT()])):
        assert coder_conversion(type_info)(None) is None
    assert coder_conversion(Types.INSTANT())(Instant(5, 7)) == Instant(5, 7)


def test_a_timestamp_before_the_epoch_is_cut_as_pyflinks_coder_cuts_it():
    """The coder truncates the float seconds towards zero before adding the milliseconds
    (``<int64_t>(value.timestamp())``, then ``+ microsecond // 1000``): 0.5 s before the epoch
    comes back 0.5 s after it (recorded with PyFlink's coder, as the module says)."""
    before = datetime.datetime(1969, 12, 31, 23, 59, 59, 500000)
    assert field_conversion(Types.SQL_TIMESTAMP())(before) == datetime.datetime(1970, 1, 1, 0, 0, 0, 500000)


def test_a_key_selector_gives_keys_as_the_key_types_coder_reads_them():
    """Recorded on PyFlink 2.3.0 (test_python_chaining has the jobs): with key_type=INT the key
    1.7 is 1; with key_type=STRING an int key fails with the coder's AttributeError."""
    from kernel.jvm.coders import converted_results

    select = lambda value: value[0]  # noqa: E731
    assert converted_results(select, None) is select
    assert converted_results(select, Types.PICKLED_BYTE_ARRAY()) is select
    as_int = converted_results(select, Types.INT())
    assert as_int((1.7,)) == 1 and type(as_int((True,))) is int and as_int((None,)) is None
    with pytest.raises(AttributeError, match="'int' object has no attribute 'encode'"):
        converted_results(select, Types.STRING())((1,))
    assert converted_results(select, Types.FLOAT())((0.1,)) == 0.10000000149011612


def test_a_batch_comes_back_as_it_is_or_converted_value_by_value():
    from kernel.jvm.coders import batch_conversion

    convert = batch_conversion(Types.TUPLE([Types.STRING(), Types.INT()]))
    pairs = [("a", 1), ("b", 2)]
    assert convert(pairs) is pairs
    mixed = [("a", 1), None, ("b", True), ("c", 1.9)]
    converted = convert(mixed)
    assert converted == [("a", 1), None, ("b", 1), ("c", 1)] and converted[0] is mixed[0]
    assert [type(value[1]) for value in converted if value is not None] == [int, int, int]
    assert batch_conversion(Types.PICKLED_BYTE_ARRAY()) is None and batch_conversion(None) is None
    with pytest.raises(OverflowError, match="value too large to convert to int32_t"):
        convert([("a", 1), ("b", 2**31)])


def test_the_keys_of_a_batch_are_the_keys_of_its_records_one_by_one():
    """``batch_results`` gives what ``converted_results`` gives per record; when the selector
    fails on a record, the conversion of an earlier key fails first, as value by value."""
    from kernel.jvm.coders import batch_results, converted_results

    def select(value):
        if value == "boom":
            raise ValueError("the selector failed")
        return value[0]

    records = [(1.7,), (2,), (True,)]
    assert batch_results(select, Types.INT())(records) == [converted_results(select, Types.INT())(r) for r in records]
    assert batch_results(select, None)(records) == [1.7, 2, True]
    with pytest.raises(ValueError, match="the selector failed"):
        batch_results(select, Types.INT())([(1,), "boom", (2**40,)])
    with pytest.raises(OverflowError, match="value too large to convert to int32_t"):
        batch_results(select, Types.INT())([(1,), (2**40,), "boom"])
    with pytest.raises(AttributeError, match="'int' object has no attribute 'encode'"):
        batch_results(select, Types.STRING())([("a",), (1,)])

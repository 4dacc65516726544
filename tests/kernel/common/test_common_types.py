"""Row, Types and their Java renderings, as PyFlink has them."""

from __future__ import annotations

import datetime
import pickle

import pytest

from kernel.common import Duration, Row, RowKind, Time, Types, WatermarkStrategy
from kernel.jvm.javavalues import double_to_string, float_to_string
from kernel.common.watermark_strategy import TimestampAssigner


def test_row_positional_named_and_factory():
    assert repr(Row(1, "a")) == "<Row(1, 'a')>"
    named = Row(name="Alice", age=11)
    assert repr(named) == "Row(name='Alice', age=11)"
    assert (named.name, named["age"], named[0]) == ("Alice", 11, "Alice")
    assert named.as_dict() == {"name": "Alice", "age": 11}
    person = Row("name", "age")
    assert repr(person("Bob", 3)) == "Row(name='Bob', age=3)"
    with pytest.raises(ValueError, match="Can not use both args and kwargs"):
        Row(1, a=2)
    with pytest.raises(AttributeError):
        named.other = 1
    with pytest.raises(ValueError):
        named["missing"]


def test_row_equality_hash_kind_and_pickling():
    assert Row(a=1, b=2) == Row(b=2, a=1)
    assert Row(1, 2) != Row(a=1, b=2)
    assert Row.of_kind(RowKind.DELETE, 1) != Row(1)
    assert hash(Row(1, 2)) == hash(Row(a=1, b=2))
    restored = pickle.loads(pickle.dumps(Row.of_kind(RowKind.UPDATE_AFTER, x=1)))
    assert restored == Row.of_kind(RowKind.UPDATE_AFTER, x=1) and restored.x == 1
    assert str(RowKind.UPDATE_BEFORE) == "-U"


def test_type_reprs():
    assert repr(Types.INT()) == "Integer"
    assert repr(Types.ROW([Types.STRING(), Types.INT()])) == "RowTypeInfo(String, Integer)"
    assert repr(Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.LONG()])) == "RowTypeInfo(a: String, b: Long)"
    assert repr(Types.TUPLE([Types.STRING(), Types.INT()])) == "TupleTypeInfo(String, Integer)"
    assert repr(Types.LIST(Types.INT())) == "ListTypeInfo<Integer>"
    assert repr(Types.MAP(Types.STRING(), Types.INT())) == "MapTypeInfo<String, Integer>"
    assert repr(Types.PICKLED_BYTE_ARRAY()) == "PickledByteArrayTypeInfo"
    assert Types.ROW([Types.INT()]) == Types.ROW_NAMED(["x"], [Types.INT()])  # names are not compared


def test_row_types_convert_collections_into_named_rows():
    named = Types.ROW_NAMED(["name", "age"], [Types.STRING(), Types.INT()])
    for value in (("Ann", 3), ["Ann", 3], {"name": "Ann", "age": 3}, Row(age=3, name="Ann")):
        row = named.to_internal_type(value)
        assert (row.name, row.age, repr(row)) == ("Ann", 3, "Row(name='Ann', age=3)")
    assert repr(Types.ROW([Types.STRING()]).to_internal_type(("x",))) == "Row(f0='x')"
    with pytest.raises(ValueError, match="has 1 fields"):
        named.to_internal_type(("too short",))


@pytest.mark.parametrize("type_info, value, printed", [
    (Types.PICKLED_BYTE_ARRAY(), ("a", 1), "('a', 1)"),
    (Types.PICKLED_BYTE_ARRAY(), "plain", "plain"),
    (Types.PICKLED_BYTE_ARRAY(), Row(a=1), "Row(a=1)"),
    (Types.ROW([Types.STRING(), Types.INT()]), Row("a", 1), "+I[a,1]"),
    (Types.ROW([Types.BOOLEAN(), Types.DOUBLE()]), Row(True, None), "+I[True,None]"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), ("hi", 4), "(hi,4)"),
    (Types.TUPLE([Types.STRING(), Types.BOOLEAN()]), ("hi", None), "(hi,null)"),
    (Types.STRING(), "word", "word"),
    (Types.BOOLEAN(), False, "false"),
    (Types.DOUBLE(), 1e10, "1.0E10"),
    (Types.DOUBLE(), 0.5, "0.5"),
    (Types.FLOAT(), 0.1, "0.1"),
    (Types.LONG(), 7, "7"),
    (Types.LIST(Types.INT()), [1, 2, 3], "[1, 2, 3]"),
    (Types.MAP(Types.STRING(), Types.INT()), {"a": 1, "b": 2}, "{a=1, b=2}"),
    (Types.SQL_TIMESTAMP(), datetime.datetime(2020, 1, 1), "2020-01-01 00:00:00.0"),
    (Types.TUPLE([Types.STRING(), Types.ROW([Types.STRING(), Types.INT()])]), ("k", Row("a", 4)), "(k,+I[a, 4])"),
])
def test_print_formatting_follows_the_declared_type(type_info, value, printed):
    assert type_info.format_print(value) == printed


def test_java_double_and_float_strings():
    assert [double_to_string(v) for v in (1.0, 1e7, 1234567.0, 0.001, 1e-4, -2.5e-5, 3e100, float("nan"))] == [
        "1.0", "1.0E7", "1234567.0", "0.001", "1.0E-4", "-2.5E-5", "3.0E100", "NaN",
    ]
    assert float_to_string(3.14159) == "3.14159"


def test_time_and_duration():
    assert Time.minutes(2).to_milliseconds() == 120_000
    assert str(Time.seconds(5)) == "5000 ms"
    assert Duration.of_seconds(3) == Duration.of_millis(3000)
    assert Duration.of_minutes(1).to_milliseconds() == 60_000


def test_watermark_strategy_declarations():
    class Ts(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
    assert strategy.with_timestamp_assigner(Ts()) is strategy  # PyFlink: mutates and returns itself
    idle = strategy.with_idleness(Duration.of_seconds(10))
    assert idle is not strategy and idle.idleness_ms == 10_000 and strategy.idleness_ms is None
    assert isinstance(idle.timestamp_assigner, Ts)
    assert (idle.kind, idle.out_of_orderness_ms) == ("bounded", 2000)
    assert WatermarkStrategy.for_monotonous_timestamps().out_of_orderness_ms == 0
    aligned = strategy.with_watermark_alignment("g", Duration.of_millis(500))
    assert aligned.alignment == ("g", 500, 1000)


def test_from_collection_converts_tuples_as_to_internal_type_does():
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    kept = ("a", 1)
    converted = pair.to_internal_list([kept, ["b", 2], "cd"])
    assert converted == [("a", 1), ("b", 2), ("c", "d")]
    assert converted[0] is kept  # a tuple of the right arity stays the very same object
    assert pair.to_internal_list(iter([("x", 3)])) == [("x", 3)]
    with pytest.raises(ValueError, match=r"\('e',\) has 1 fields, TupleTypeInfo\(String, Integer\) expects 2"):
        pair.to_internal_list([kept, ("e",)])
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        pair.to_internal_list([kept, 5])
    rows = Types.TUPLE([Types.ROW([Types.STRING()])]).to_internal_list([(("x",),)])  # a field that converts
    assert repr(rows) == "[(Row(f0='x'),)]"
    strings = ["p", "q"]
    assert Types.STRING().to_internal_list(strings) == strings and Types.STRING().to_internal_list(strings) is not strings

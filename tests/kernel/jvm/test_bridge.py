"""from_collection and execute_and_collect across PyFlink's Python-Java bridge (kernel.jvm.bridge).

Every expectation was recorded on PyFlink 2.3.0 (``/work/venvs/pyflink``, process mode,
parallelism 1, one job at a time): for each element and declared type, the job
``env.from_collection([element], type_info).map(lambda x: f"py {type(x).__name__} {x!r}").print()``
gave what a Python operator reads, ``env.from_collection([element], type_info).print("java")``
what Java's print sink writes, ``env.from_collection([element], type_info).execute_and_collect(limit=1)``
what comes back to the caller; a failure is the Java exception ``from_collection`` raised.
"""

from __future__ import annotations

import datetime
import decimal
import pytest

from kernel.common import Instant, Row, Types
from kernel.jvm.bridge import collected_conversion, collection_elements, engineering_string
from kernel.errors import JobDefinitionError
from tests.runtime import run_job

D = decimal.Decimal
TIME = datetime.time(1, 2, 3, 456789)
STAMP = datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)



def LISTED(element_type):
    """A row of one field, a LIST of ``element_type``."""
    return Types.ROW_NAMED(["a"], [Types.LIST(element_type)])


#: (type, element, what a Python operator reads (repr), what Java's print writes, what collect returns)
READ = [
    (Types.INT(), 2**31, "-2147483648", "-2147483648", -2147483648),
    (Types.INT(), 2**32 + 7, "7", "7", 7),
    (Types.INT(), -2**31 - 1, "2147483647", "2147483647", 2147483647),
    (Types.SHORT(), 2**15, "-32768", "-32768", -32768),
    (Types.SHORT(), 70000, "4464", "4464", 4464),
    (Types.BYTE(), 128, "-128", "-128", -128),
    (Types.BYTE(), 300, "44", "44", 44),
    (Types.LONG(), 2**63 - 1, "9223372036854775807", "9223372036854775807", 2**63 - 1),
    (Types.FLOAT(), 110.1, "110.0999984741211", "110.1", 110.1),
    (Types.FLOAT(), 1e40, "inf", "Infinity", None),
    (Types.FLOAT(), 1.0 / 3, "0.3333333432674408", "0.33333334", 0.33333334),
    (Types.DOUBLE(), 1e10, "10000000000.0", "1.0E10", 1e10),
    (Types.DOUBLE(), 1e-5, "1e-05", "1.0E-5", 1e-05),
    (Types.BOOLEAN(), True, "True", "true", True),
    (Types.STRING(), "a", "'a'", "a", "a"),
    (Types.BIG_DEC(), D("1.10"), "Decimal('1.10')", "1.10", D("1.10")),
    (Types.BIG_DEC(), D("1E+2"), "Decimal('1E+2')", "1E+2", D("100")),
    (Types.BIG_DEC(), D("1E-7"), "Decimal('1E-7')", "1E-7", D("1.00E-7")),
    (Types.BIG_DEC(), D("-12345678901234567890.123456789"), "Decimal('-12345678901234567890.123456789')",
     "-12345678901234567890.123456789", D("-12345678901234567890.123456789")),
    (Types.SQL_DATE(), datetime.date(2024, 1, 2), "datetime.date(2024, 1, 2)", "2024-01-02", datetime.date(2024, 1, 2)),
    (Types.SQL_TIME(), TIME, "datetime.time(1, 2, 3, 456000)", "01:02:03", datetime.time(1, 2, 3)),
    (Types.SQL_TIMESTAMP(), STAMP, "datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)", "2024-01-02 03:04:05.123", None),
    (Types.INSTANT(), Instant.of_epoch_milli(1700000000123), "Instant<1700000000, 123000000>",
     "2023-11-14T22:13:20.123Z", None),
    (Types.ROW([Types.INT(), Types.FLOAT()]), Row(1, 110.1), "Row(f0=1, f1=110.0999984741211)",
     "+I[1,110.0999984741211]", Row(f0=1, f1=110.1)),
    (Types.ROW([Types.INT(), Types.FLOAT()]), (2, 2.5), "Row(f0=2, f1=2.5)", "+I[2,2.5]", Row(f0=2, f1=2.5)),
    (Types.ROW([Types.INT(), Types.FLOAT()]), [3, 0.1], "Row(f0=3, f1=0.10000000149011612)",
     "+I[3,0.10000000149011612]", Row(f0=3, f1=0.1)),
    (Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.FLOAT()]), ("y", 0.1), "Row(a='y', b=0.10000000149011612)",
     "+I[y,0.10000000149011612]", Row(a="y", b=0.1)),
    (Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.FLOAT()]), Row(b=1.5, a="z"), "Row(a='z', b=1.5)",
     "+I[z,1.5]", Row(a="z", b=1.5)),
    (Types.TUPLE([Types.STRING(), Types.FLOAT()]), ("a", 110.1), "('a', 110.0999984741211)", "(a,110.1)",
     ("a", 110.1)),
    (Types.TUPLE([Types.STRING(), Types.FLOAT()]), ["b", 0.1], "('b', 0.10000000149011612)", "(b,0.1)",
     ("b", 0.1)),
    (Types.TUPLE([Types.STRING(), Types.ROW([Types.INT(), Types.STRING()])]), ("k", Row(1, "x")),
     "('k', Row(f0=1, f1='x'))", "(k,+I[1, x])", ("k", Row(f0=1, f1="x"))),
    (Types.BASIC_ARRAY(Types.INT()), [1, 2, None], "[1, 2, None]", None, [1, 2, None]),
    (Types.BASIC_ARRAY(Types.FLOAT()), [110.1], "[110.0999984741211]", None, [110.1]),
    (Types.PRIMITIVE_ARRAY(Types.INT()), [1, 2], "[1, 2]", None, [1, 2]),
    (Types.OBJECT_ARRAY(Types.STRING()), ["a", None], "['a', None]", None, ["a", None]),
    (Types.MAP(Types.STRING(), Types.FLOAT()), {"a": 110.1}, "{'a': 110.0999984741211}", None, None),
    # the JVM's String conversion takes Java's toString of other values
    (Types.STRING(), True, "'true'", None, None),
    (Types.STRING(), 1.5, "'1.5'", None, None),
    (Types.STRING(), 1e10, "'1.0E10'", None, None),
    (Types.STRING(), 2**40, "'1099511627776'", None, None),
    (Types.TUPLE([Types.STRING(), Types.INT()]), Row("a", 1), "('a', 1)", None, None),
    (Types.BASIC_ARRAY(Types.INT()), (1, 2), "[1, 2]", None, None),
    (Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()]), {"a": 1, "b": "x"}, "Row(a=1, b='x')", None, None),
    # a field or boxed element of the wrong kind becomes null
    (Types.ROW([Types.INT(), Types.STRING()]), ("x", "y"), "Row(f0=None, f1='y')", None, None),
    (Types.BASIC_ARRAY(Types.INT()), ["x", 1], "[None, 1]", None, None),
    (Types.ROW([Types.INT(), Types.ROW([Types.STRING(), Types.INT()])]), (1, ("a", "b")),
     "Row(f0=1, f1=Row(f0='a', f1=None))", None, None),
    # a LIST inside a row, tuple or map is not converted: what Pyrolite made of it, as it is
    (Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.LIST(Types.INT())]), Row(a=1, b=[1, 2]), "Row(a=1, b=[1, 2])",
     "+I[1,[1, 2]]", None),
    (Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.LIST(Types.INT())]), Row(a=2, b=[]), "Row(a=2, b=[])",
     "+I[2,[]]", None),
    (Types.TUPLE([Types.INT(), Types.LIST(Types.STRING())]), (1, ["x", "y"]), "(1, ['x', 'y'])", "(1,[x, y])", None),
    (LISTED(Types.LIST(Types.INT())), Row(a=[[1], [2, 3]]), "Row(a=[[1], [2, 3]])", "+I[[[1], [2, 3]]]", None),
    (LISTED(Types.LONG()), Row(a=[2**40]), "Row(a=[1099511627776])", "+I[[1099511627776]]", None),
    (LISTED(Types.BOOLEAN()), Row(a=[True, False]), "Row(a=[True, False])", "+I[[True, False]]", None),
    (LISTED(Types.BIG_DEC()), Row(a=[D("1.50")]), "Row(a=[Decimal('1.50')])", "+I[[Decimal('1.50')]]", None),
    (LISTED(Types.MAP(Types.STRING(), Types.INT())), Row(a=[{"k": 1}]), "Row(a=[{'k': 1}])", "+I[[{'k': 1}]]", None),
    (LISTED(Types.DOUBLE()), Row(a=[float("nan"), 1e10, -0.0]), "Row(a=[nan, 10000000000.0, -0.0])",
     "+I[[nan, 10000000000.0, -0.0]]", None),
    (LISTED(Types.STRING()), Row(a=["é", "", "a,b"]), "Row(a=['é', '', 'a,b'])", "+I[['é', '', 'a,b']]", None),
    (LISTED(Types.INT()), Row(a=None), "Row(a=None)", "+I[None]", None),
]

#: (type, element, the end of the Java failure PyFlink's from_collection raised)
CAST = "are in module java.base of loader 'bootstrap')"
REFUSED = [
    (Types.INT(), True, 'Cannot invoke "java.lang.Integer.intValue()" because "record" is null'),
    (Types.INT(), 1.7, 'Cannot invoke "java.lang.Integer.intValue()" because "record" is null'),
    (Types.INT(), "x", 'Cannot invoke "java.lang.Integer.intValue()" because "record" is null'),
    (Types.LONG(), True, 'Cannot invoke "java.lang.Long.longValue()" because "record" is null'),
    (Types.LONG(), 2**70, 'Cannot invoke "java.lang.Long.longValue()" because "record" is null'),
    (Types.FLOAT(), 7, 'Cannot invoke "java.lang.Float.floatValue()" because "record" is null'),
    (Types.DOUBLE(), 7, 'Cannot invoke "java.lang.Double.doubleValue()" because "record" is null'),
    (Types.BOOLEAN(), 1, 'Cannot invoke "java.lang.Boolean.booleanValue()" because "record" is null'),
    (Types.BIG_INT(), 5, "class java.lang.Integer cannot be cast to class java.math.BigInteger "
                         "(java.lang.Integer and java.math.BigInteger " + CAST),
    (Types.CHAR(), "a", "class java.lang.String cannot be cast to class java.lang.Character "
                        "(java.lang.String and java.lang.Character " + CAST),
    (Types.PRIMITIVE_ARRAY(Types.BYTE()), b"ab", "class [B cannot be cast to class [Ljava.lang.Object; "
                                                 "([B and [Ljava.lang.Object; " + CAST),
    (Types.LIST(Types.FLOAT()), [110.1, 2.0], "class [Ljava.lang.Object; cannot be cast to class java.util.List "
                                              "([Ljava.lang.Object; and java.util.List " + CAST),
    (Types.MAP(Types.STRING(), Types.FLOAT()), {"a": 110.1, "b": None}, "java.lang.NullPointerException"),
    (Types.PICKLED_BYTE_ARRAY(), (1, "a"), "class [Ljava.lang.Object; cannot be cast to class [B "
                                           "([Ljava.lang.Object; and [B " + CAST),
    (Types.PRIMITIVE_ARRAY(Types.INT()), [1, None], 'Cannot invoke "java.lang.Integer.intValue()" because the '
                                                    'return value of "java.util.function.Function.apply(Object)" is null'),
    (Types.INT(), None, 'Cannot invoke "Object.getClass()" because "obj" is null'),
    (Types.STRING(), None, 'Cannot invoke "Object.getClass()" because "obj" is null'),
    (Types.TUPLE([Types.INT(), Types.INT()]), ("x", 1), "NullFieldException: Field 0 is null, but expected to hold "
                                                        "a value."),
    # a LIST inside a row, tuple or map: its serializer casts what Pyrolite made of each element
    (Types.ROW_NAMED(["m"], [Types.MAP(Types.STRING(), Types.LIST(Types.LONG()))]), Row(m={"k": [1, 2]}),
     "class java.lang.Integer cannot be cast to class java.lang.Long (java.lang.Integer and java.lang.Long " + CAST),
    (LISTED(Types.INT()), Row(a=[2**31, 5]), "class java.lang.Long cannot be cast to class java.lang.Integer "
                                             "(java.lang.Long and java.lang.Integer " + CAST),
    (LISTED(Types.INT()), Row(a=["s", 2]), "class java.lang.String cannot be cast to class java.lang.Integer "
                                           "(java.lang.String and java.lang.Integer " + CAST),
    (LISTED(Types.INT()), Row(a=[True]), "class java.lang.Boolean cannot be cast to class java.lang.Integer "
                                         "(java.lang.Boolean and java.lang.Integer " + CAST),
    (LISTED(Types.DOUBLE()), Row(a=[1.5, 2]), "class java.lang.Integer cannot be cast to class java.lang.Double "
                                              "(java.lang.Integer and java.lang.Double " + CAST),
    (LISTED(Types.FLOAT()), Row(a=[1.5]), "class java.lang.Double cannot be cast to class java.lang.Float "
                                          "(java.lang.Double and java.lang.Float " + CAST),
    (LISTED(Types.SHORT()), Row(a=[1]), "class java.lang.Integer cannot be cast to class java.lang.Short "
                                        "(java.lang.Integer and java.lang.Short " + CAST),
    (LISTED(Types.BIG_INT()), Row(a=[5]), "class java.lang.Integer cannot be cast to class java.math.BigInteger "
                                          "(java.lang.Integer and java.math.BigInteger " + CAST),
    (LISTED(Types.INT()), Row(a=[1, None, 3]), 'Cannot invoke "java.lang.Integer.intValue()" because "record" is null'),
    (LISTED(Types.INT()), Row(a=(1, 2)), "class [Ljava.lang.Object; cannot be cast to class java.util.List "
                                         "([Ljava.lang.Object; and java.util.List " + CAST),
    (LISTED(Types.STRING()), Row(a="ab"), "class java.lang.String cannot be cast to class java.util.List "
                                          "(java.lang.String and java.util.List " + CAST),
    (LISTED(Types.MAP(Types.STRING(), Types.INT())), Row(a=[{"k": 2**31}]), "class java.lang.Long cannot be cast to "
                                                                           "class java.lang.Integer"),
    (LISTED(Types.ROW_NAMED(["x", "y"], [Types.INT(), Types.STRING()])), Row(a=[Row(x=1, y="p")]),
     "PickleException: expected zero arguments for construction of ClassDict (for pyflink.common.types.RowKind)"),
    (LISTED(Types.ROW([Types.INT(), Types.STRING()])), Row(a=[(1, "x")]),
     "class [Ljava.lang.Object; cannot be cast to class org.apache.flink.types.Row ([Ljava.lang.Object; is in module "
     "java.base of loader 'bootstrap'; org.apache.flink.types.Row is in unnamed module of loader 'app')"),
    (LISTED(Types.TUPLE([Types.INT(), Types.STRING()])), Row(a=[(1, "x")]),
     "class [Ljava.lang.Object; cannot be cast to class org.apache.flink.api.java.tuple.Tuple ([Ljava.lang.Object; "
     "is in module java.base of loader 'bootstrap'; org.apache.flink.api.java.tuple.Tuple is in unnamed module of "
     "loader 'app')"),
    (LISTED(Types.BASIC_ARRAY(Types.INT())), Row(a=[[1, 2]]), "class java.util.ArrayList cannot be cast to class "
                                                              "[Ljava.lang.Object; (java.util.ArrayList and "
                                                              "[Ljava.lang.Object; " + CAST),
    (LISTED(Types.SQL_DATE()), Row(a=[datetime.date(2024, 1, 2)]),
     "class java.util.GregorianCalendar cannot be cast to class java.sql.Date (java.util.GregorianCalendar is in "
     "module java.base of loader 'bootstrap'; java.sql.Date is in module java.sql of loader 'platform')"),
    # PyFlink fails this one when the job runs (the Python coder reads the null string), rill at once
    (LISTED(Types.STRING()), Row(a=["x", None]), "java.lang.IllegalArgumentException: The String record must not be "
                                                 "null."),
]


@pytest.mark.parametrize("type_info, element, read, printed, collected", READ)
def test_a_python_operator_reads_the_element_as_the_jvm_converted_it(type_info, element, read, printed, collected):
    assert [repr(e) for e in collection_elements(type_info, [element])] == [read]


@pytest.mark.parametrize("type_info, element, expected", REFUSED)
def test_an_element_the_jvm_cannot_convert_fails_from_collection(type_info, element, expected):
    with pytest.raises(JobDefinitionError) as raised:
        collection_elements(type_info, [element])
    assert expected in str(raised.value) and str(raised.value).startswith("from_collection: ")


def test_an_instant_reaches_the_jvm_in_milliseconds():
    """Derived from PyFlink's InstantTypeInfo.to_internal_type (``to_epoch_milli() * 1000`` is
    what it pickles for the JVM); the recorded Instant<1700000000, 123000000> above holds."""
    assert collection_elements(Types.INSTANT(), [Instant(5, 123456789)]) == [Instant(5, 123000000)]


def test_a_big_decimal_that_is_no_decimal_ends_the_collection():
    """Recorded: [Decimal('1.5'), 2.5, 3, Decimal('4')] as BIG_DEC reads only Decimal('1.5')
    (the JVM converts 2.5 to null, and Flink's InputFormatSourceFunction stops at a null)."""
    assert collection_elements(Types.BIG_DEC(), [D("1.5"), 2.5, 3, D("4")]) == [D("1.5")]


PRINTED = [case for case in READ if case[3] is not None]


def test_the_jobs_print_what_pyflink_printed():
    """One source per recorded element, each read by a Python map and printed by Java's sink."""
    def build(env):
        env.set_parallelism(1)
        for i, (type_info, element, _, _, _) in enumerate(PRINTED):
            ds = env.from_collection([element], type_info)
            ds.map(lambda x: f"{type(x).__name__} {x!r}").print(f"py{i}")
            ds.print(f"java{i}")
        env.execute("collections")

    lines = run_job(build).lines
    assert len(lines) == 2 * len(PRINTED)
    for i, (type_info, element, read, printed, _) in enumerate(PRINTED):
        kind = type(collection_elements(type_info, [element])[0]).__name__
        assert f"py{i}> {kind} {read}" in lines and f"java{i}> {printed}" in lines, (type_info, element)


COLLECTED = [case for case in READ if case[4] is not None]


@pytest.mark.parametrize("type_info, element, read, printed, collected", COLLECTED)
def test_execute_and_collect_returns_what_pyflink_returned(type_info, element, read, printed, collected):
    result = collected_conversion(type_info)
    value = collection_elements(type_info, [element])[0]
    value = value if result is None else result(value)
    assert value == collected and type(value) is type(collected)


def collect(build_stream) -> list:
    results: list = []

    def build(env):
        env.set_parallelism(1)
        results.extend(build_stream(env).execute_and_collect(limit=5))

    run_job(build)
    return results


def test_execute_and_collect_of_a_collection_converts_on_the_way_back():
    assert collect(lambda env: env.from_collection([110.1, 1.0 / 3], Types.FLOAT())) == [110.1, 0.33333334]
    assert collect(lambda env: env.from_collection([D("1E-7")], Types.BIG_DEC())) == [D("1.00E-7")]


@pytest.mark.parametrize("type_info, element, error", [
    (Types.FLOAT(), 1e40, (ValueError, "malformed node or string")),
    (Types.SQL_TIMESTAMP(), STAMP, (AttributeError, "'bytearray' object has no attribute 'timestamp'")),
    (Types.INSTANT(), Instant(1, 0), (RuntimeError, "couldn't introspect javabean")),
])
def test_execute_and_collect_fails_where_pyflink_fails(type_info, element, error):
    """Recorded: PyFlink's convert_to_python_obj parses Java's "Infinity" with ast.literal_eval,
    calls .timestamp() on the bytes of a Timestamp, and cannot pickle an Instant."""
    kind, message = error
    with pytest.raises(kind, match=message):
        collected_conversion(type_info)(collection_elements(type_info, [element])[0])


def test_collected_rows_of_a_python_operator_come_back_through_java():
    """Recorded: a map to ROW_NAMED(["a", "b"], [INT, FLOAT]) returning Row(1, 110.1) collects as
    Row(a=1, b=110.1); a LIST of SQL_TIME loses the milliseconds."""
    rows = collect(lambda env: env.from_collection([1]).map(
        lambda x: Row(x, 110.1), Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.FLOAT()])))
    assert [repr(row) for row in rows] == ["Row(a=1, b=110.1)"]
    times = collect(lambda env: env.from_collection([1]).map(lambda x: [TIME], Types.LIST(Types.SQL_TIME())))
    assert times == [[datetime.time(1, 2, 3)]]


@pytest.mark.parametrize("value, text", [
    # Java's BigDecimal.toEngineeringString (what Pyrolite hands to Python's Decimal)
    (D("1E+2"), "100"), (D("1E-7"), "100E-9"), (D("1.10"), "1.10"), (D("0"), "0"), (D("-1E+4"), "-10E+3"),
    (D("0.000001"), "0.000001"), (D("1.234E+7"), "12.34E+6"), (D("0E-8"), "0.00E-6"),
])
def test_engineering_strings_are_javas(value, text):
    assert engineering_string(value) == text

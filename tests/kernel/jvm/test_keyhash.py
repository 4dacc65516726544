"""key_by routes every key type to the subtask real PyFlink 2.3 routes it to.

How the expectations were obtained: a job on real PyFlink 2.3.0 (process mode, a JVM in UTC)
read each list of keys below from ``from_collection(range(n))`` with
``key_by(lambda i: KEYS[i], key_type).map(str).set_parallelism(p).print(f"{NAME}/p{p}")`` for
p = 2, 3, 4. ``RECORDED[NAME][p]`` is the ``k> `` prefix it printed for each key, in key order
(k = subtask + 1). The same job with ``pyflink.`` rewritten to ``kernel.`` prints the same lines
on rill (``test_a_recorded_routing_job_prints_what_pyflink_printed``).
"""

from __future__ import annotations

import datetime
import decimal
from collections import Counter

import pytest

from kernel.common import Instant, Row, Types
from kernel.jvm.javavalues import bytes_hash, pickled_bytes
from kernel.jvm.keyhash import check_key_type, key_hasher
from kernel.datastream import KeyedProcessFunction
from kernel.datastream.state import ValueStateDescriptor
from kernel.runtime.streaming.keygroups import assign_to_key_group, operator_index_for_key_group
from tests.runtime import run_job

STR_KEYS = ["a", "b", "c", "hello", "world", "", "ä", "\U0001F600", "key-0", "key-1", "key-2", "key-3",
            "key-4", "key-5", "key-6", "key-7", "Flink", "rill", "x" * 300, "αβγ"]
INT_KEYS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -2, 42, 100, 1000, 12345, 2**31 - 1, -2**31, 65536, 999999]
LONG_KEYS = INT_KEYS[:12] + [2**40, -2**40, 2**63 - 1, -2**63, 2**32, 2**33 + 5, 10**12, 7 * 10**15]
DOUBLE_KEYS = [0.0, -0.0, 1.0, -1.0, 1.5, 2.0, 3.14159, -2.25, 1e10, 1e-5, 100.0, 0.1, 1e300,
               float("inf"), float("-inf"), float("nan"), 7.0, 8.5, 123.456, -99.99]
FLOAT_KEYS = [0.0, -0.0, 1.0, -1.0, 1.5, 2.0, 3.14159, -2.25, 1e10, 1e-5, 100.0, 0.1, 7.0, 8.5, 123.456, -99.99]
SHORT_KEYS = [0, 1, 2, 3, -1, -2, 300, 32767, -32768, 1000, 77, 5]
BYTE_KEYS = [0, 1, 2, 3, -1, -2, 127, -128, 64, 10, 77, 5]
DEC_KEYS = [decimal.Decimal(s) for s in ["1", "1.0", "1.50", "-3.25", "0", "0.000", "12345678901234567890.1",
                                           "1E+2", "-7", "99.99", "3.14159265358979323846", "-0.5"]]
TUPLE_KEYS = [(1, "a"), (2, "b"), (0, ""), (-5, "xyz"), (1, "b"), (2, "a"), (3, "c"), (4, "d"), (5, "e"),
              (6, "f"), (7, "g"), (8, "h")]
TUPLE4_KEYS = [("a", 1, 1.0, True), ("b", 2**40, -2.5, False), ("", 0, 0.0, True), ("zz", -1, 1e10, False),
               ("a", 2, 1.0, True), ("q", 3, 0.5, False), ("r", 4, 2.5, True), ("s", 5, 3.5, False)]
ROW1_KEYS = [Row(i) for i in [0, 1, 2, 3, 4, 5, 6, 7, -1, 42, 1000, 2**31 - 1]]
ROW2_KEYS = [Row("a", 1), Row("b", 2), Row("", 0), Row("hello", -1), Row("a", 2), Row("c", 3),
             Row(None, 1), Row("d", None), Row("e", 5), Row("f", 6), Row("g", 7), Row("h", 8)]
ROWN_KEYS = [Row(name=n, n=i) for n, i in [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5), ("f", 6)]]
NESTED_KEYS = [Row(Row(1, "a"), 10), Row(Row(2, "b"), 20), Row(Row(0, ""), 0), Row(Row(3, "c"), -1),
               Row(Row(4, "d"), 2**40), Row(Row(5, "e"), 5)]
ROWTUP_KEYS = [Row((1, "a"), "x"), Row((2, "b"), "y"), Row((3, "c"), "z"), Row((4, "d"), "w"),
               Row((5, "e"), "v"), Row((6, "f"), "u")]
ROWLIST_KEYS = [Row([1, 2]), Row([3]), Row([]), Row([1, 2, 3]), Row([-1, 5]), Row([7, 7])]
LIST_KEYS = [["a"], ["a", "b"], [], ["x", "y", "z"], ["hello"], ["b"]]
MAP_KEYS = [{"a": 1}, {"a": 1, "b": 2}, {}, {"x": -1}, {"k": 7}, {"b": 2}]
DATE_KEYS = [datetime.date(2024, 1, 1), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31),
             datetime.date(2000, 2, 29), datetime.date(2023, 6, 15), datetime.date(1999, 12, 31)]
TIME_KEYS = [datetime.time(12, 30), datetime.time(0, 0, 1, 500000), datetime.time(23, 59, 59),
             datetime.time(0, 0), datetime.time(8, 15, 30), datetime.time(1, 2, 3)]
TS_KEYS = [datetime.datetime(2024, 1, 1, 12, 0, 0, 123000), datetime.datetime(1970, 1, 1),
           datetime.datetime(2000, 6, 1, 8, 30), datetime.datetime(1969, 7, 20, 20, 17, 40),
           datetime.datetime(2023, 3, 3, 3, 3, 3), datetime.datetime(2030, 12, 31, 23, 59, 59, 999000)]
INSTANT_KEYS = [Instant(0, 0), Instant(1, 0), Instant(1700000000, 123000000), Instant(-1, 999999999),
                Instant(2**40, 5), Instant(86400, 1)]
PICKLED_KEYS = ["a", "b", "hello", "", "x" * 300, 1, 2, -1, 0, 2**40, 2**70, 1.0, 1.5, -0.0, None, True, False,
                (1, "a"), ("a", 1), (), (1, (2, 3)), b"xy", Row(1, "a"), Row(x=1), [1, 2], {"a": 1},
                frozenset(), 255, 256, 65536, -129]

KEY_TYPES = {
    "STRING": (Types.STRING(), STR_KEYS), "INT": (Types.INT(), INT_KEYS), "LONG": (Types.LONG(), LONG_KEYS),
    "DOUBLE": (Types.DOUBLE(), DOUBLE_KEYS), "FLOAT": (Types.FLOAT(), FLOAT_KEYS),
    "BOOLEAN": (Types.BOOLEAN(), [True, False]), "SHORT": (Types.SHORT(), SHORT_KEYS),
    "BYTE": (Types.BYTE(), BYTE_KEYS), "BIG_DEC": (Types.BIG_DEC(), DEC_KEYS),
    "TUPLE2": (Types.TUPLE([Types.INT(), Types.STRING()]), TUPLE_KEYS),
    "TUPLE4": (Types.TUPLE([Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN()]), TUPLE4_KEYS),
    "ROW1": (Types.ROW([Types.INT()]), ROW1_KEYS),
    "ROW2": (Types.ROW([Types.STRING(), Types.INT()]), ROW2_KEYS),
    "ROWN": (Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()]), ROWN_KEYS),
    "NESTED": (Types.ROW([Types.ROW([Types.INT(), Types.STRING()]), Types.LONG()]), NESTED_KEYS),
    "ROWTUP": (Types.ROW([Types.TUPLE([Types.INT(), Types.STRING()]), Types.STRING()]), ROWTUP_KEYS),
    "ROWLIST": (Types.ROW([Types.LIST(Types.INT())]), ROWLIST_KEYS),
    "LIST": (Types.LIST(Types.STRING()), LIST_KEYS),
    "MAP": (Types.MAP(Types.STRING(), Types.INT()), MAP_KEYS),
    "DATE": (Types.SQL_DATE(), DATE_KEYS), "TIME": (Types.SQL_TIME(), TIME_KEYS),
    "TS": (Types.SQL_TIMESTAMP(), TS_KEYS), "INSTANT": (Types.INSTANT(), INSTANT_KEYS),
    "PICKLED": (None, PICKLED_KEYS),
}

RECORDED = {
    "STRING": {2: "22111111111111221222", 3: "22111121221111231233", 4: "33121221222111331344"},
    "INT": {2: "11221121221212121221", 3: "12331131232312122331", 4: "22441141342413132441"},
    "LONG": {2: "11221121221121221121", 3: "12331131231221332131", 4: "22441141342231442141"},
    "DOUBLE": {2: "12111122122112122112", 3: "13112132233123133123", 4: "24112143244123144124"},
    "FLOAT": {2: "1221112221212122", 3: "1331113231323133", 4: "2441214341324134"},
    "BOOLEAN": {2: "21", 3: "21", 4: "32"},
    "SHORT": {2: "112212112121", 3: "123323123121", 4: "224424224131"},
    "BYTE": {2: "112212212121", 3: "123323323221", 4: "224424424231"},
    "BIG_DEC": {2: "122112221122", 3: "133113331133", 4: "144124441143"},
    "TUPLE2": {2: "211122212221", 3: "311233312331", 4: "412244413342"},
    "TUPLE4": {2: "11222112", 3: "11233122", 4: "12334223"},
    "ROW1": {2: "222112112111", 3: "333113123212", 4: "444124124212"},
    "ROW2": {2: "221111211211", 3: "231112222322", 4: "342112322322"},
    "ROWN": {2: "221112", 3: "232223", 4: "342223"},
    "NESTED": {2: "111221", 3: "112232", 4: "112342"},
    "ROWTUP": {2: "111122", 3: "221133", 4: "221144"},
    "ROWLIST": {2: "221211", 3: "332222", 4: "442322"},
    "LIST": {2: "221122", 3: "321133", 4: "432134"},
    "MAP": {2: "221222", 3: "231232", 4: "342333"},
    "DATE": {2: "212211", 3: "213211", 4: "324321"},
    "TIME": {2: "212112", 3: "312112", 4: "313213"},
    "TS": {2: "111111", 3: "111111", 4: "121221"},
    "INSTANT": {2: "111212", 3: "122213", 4: "222313"},
    "PICKLED": {2: "1122111111221122111211122112211", 3: "1123111211322233111311132212311",
                4: "2134121211432244111411233213412"},
}


def prefixes(key_type, keys, parallelism: int, max_parallelism: int = 128) -> str:
    hash_key = key_hasher(key_type)
    return "".join(
        str(operator_index_for_key_group(max_parallelism, parallelism,
                                         assign_to_key_group(hash_key(key), max_parallelism)) + 1)
        for key in keys
    )


@pytest.mark.parametrize("key_type, key, expected", [
    (Types.STRING(), "a", 159),  # 31 * 1 + (31 + "a".hashCode() = 97)
    (Types.INT(), 1, 63),  # 62 + Integer.hashCode(1)
    (Types.LONG(), 1, 63),  # 62 + Long.hashCode(1) = (int)(1 ^ 1 >>> 32)
    (Types.BOOLEAN(), True, 1293),  # 62 + Boolean.hashCode(true) = 1231
    (Types.DOUBLE(), 1.0, 1072693310),  # 62 + (int)(0x3FF0000000000000 ^ >>> 32) = 62 + 1072693248
    (Types.TUPLE([Types.INT(), Types.STRING()]), (1, "a"), 190),  # 62 + (31 * 1 + 97)
    (Types.ROW([Types.INT()]), Row(1), 125),  # 62 + Row(1).hashCode() = 62 + (31 * 0 + 31 + 32)
    (None, "a", -2088826310),  # 31 + 31 + Arrays.hashCode(80 05 95 05 00*7 8c 01 61 94 2e)
    (None, None, 31),  # a None key is a null Row field: 31 * 1 + 0 (PyFlink routed untyped None so)
    (Types.STRING(), None, 31),
])
def test_reference_check_values_of_the_key_hash(key_type, key, expected):
    """FLINK_SEMANTICS.md §16: PyFlink's Java key is Row.of(key); Row.hashCode() =
    31 * RowKind.INSERT(0) + deepHashCodeArray([key]) = 31 + (31 + key.hashCode())."""
    assert key_hasher(key_type)(key) == expected


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_every_key_type_routes_where_pyflink_routed_it(name):
    key_type, keys = KEY_TYPES[name]
    for parallelism, recorded in RECORDED[name].items():
        assert prefixes(key_type, keys, parallelism) == recorded, f"{name} at p={parallelism}"


def test_an_operator_max_parallelism_is_the_key_group_count():
    """Recorded with ``.set_parallelism(3).set_max_parallelism(7)`` on the keyed map."""
    assert prefixes(Types.STRING(), STR_KEYS, 3, 7) == "23331332223233333313"


def test_untyped_keys_hash_the_bytes_cloudpickle_writes():
    """cloudpickle.dumps (protocol 5) as recorded with PyFlink 2.3's cloudpickle 2.2.1; a Row
    pickles as ``pyflink.common.types._create_row(fields, values, RowKind)``."""
    assert pickled_bytes("a").hex() == "80059505000000000000008c0161942e"
    assert pickled_bytes(1).hex() == "80054b012e"
    assert pickled_bytes((1, "a")).hex() == "80059509000000000000004b018c01619486942e"
    assert pickled_bytes(None).hex() == "80054e2e"
    assert pickled_bytes(1.0).hex() == "8005950a00000000000000473ff00000000000002e"
    assert pickled_bytes(Row(1, "a")).hex() == (
        "80059549000000000000008c147079666c696e6b2e636f6d6d6f6e2e7479706573948c0b5f6372656174655f726f7794"
        "93944e4b018c016194869468008c07526f774b696e649493944b0085945294879452942e")
    assert pickled_bytes(Row(x=1)).hex() == (
        "8005954b000000000000008c147079666c696e6b2e636f6d6d6f6e2e7479706573948c0b5f6372656174655f726f7794"
        "93945d948c017894614b01859468008c07526f774b696e649493944b0085945294879452942e")
    assert key_hasher(None)((1, "a")) == 62 + bytes_hash(bytes.fromhex("80059509000000000000004b018c01619486942e"))


def test_key_types_flink_or_pyflink_cannot_key_by_are_refused():
    """PyFlink 2.3 fails at key_by for arrays (InvalidProgramException: "Type Row(f0: int[])
    cannot be used as key. Contained UNSUPPORTED key types: int[]..."); for CHAR it corrupts
    records and for BIG_INT the job fails (recorded), so rill refuses both at key_by."""
    with pytest.raises(TypeError, match=r"cannot be used as key\. Contained UNSUPPORTED key types: PrimitiveArray"):
        check_key_type(Types.ROW([Types.STRING(), Types.PRIMITIVE_ARRAY(Types.INT())]))
    with pytest.raises(TypeError, match="Contained UNSUPPORTED key types: BasicArrayTypeInfo<String>"):
        check_key_type(Types.BASIC_ARRAY(Types.STRING()))
    with pytest.raises(TypeError, match="Char cannot be used as a key type: PyFlink 2.3 writes it as a string"):
        check_key_type(Types.TUPLE([Types.INT(), Types.CHAR()]))
    with pytest.raises(TypeError, match="BigInteger cannot be used as a key type"):
        check_key_type(Types.BIG_INT())
    check_key_type(Types.LIST(Types.PRIMITIVE_ARRAY(Types.INT())))  # Flink looks into Rows and Tuples only


def recorded_lines(name: str) -> Counter:
    return Counter(f"{name}/p{p}:{k}> {i}" for p, ks in RECORDED[name].items() for i, k in enumerate(ks))


def test_a_recorded_routing_job_prints_what_pyflink_printed():
    names = ["STRING", "TUPLE2", "ROW2", "DOUBLE", "PICKLED"]

    def build(env):
        env.set_parallelism(1)
        for name in names:
            key_type, keys = KEY_TYPES[name]
            for p in (2, 3, 4):
                source = env.from_collection(list(range(len(keys))), Types.INT())
                keyed = source.key_by(lambda i, keys=keys: keys[i], key_type) if key_type is not None \
                    else source.key_by(lambda i, keys=keys: keys[i])
                keyed.map(lambda i: str(i), Types.STRING()).set_parallelism(p).print(f"{name}/p{p}").set_parallelism(p)
        env.execute()

    assert Counter(run_job(build).lines) == sum((recorded_lines(name) for name in names), Counter())


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield f"{ctx.get_current_key()} {n} {self.subtask}"


def test_keyed_state_lives_on_the_subtask_pyflink_keeps_it_on():
    """Recorded on PyFlink 2.3: keys a..l three times each, counted in ValueState at p=3."""
    def build(env):
        env.set_parallelism(1)
        keys = list("abcdefghijkl") * 3
        env.from_collection(keys, Types.STRING()).key_by(lambda k: k, Types.STRING()) \
            .process(Count(), Types.STRING()).set_parallelism(3).print("typed").set_parallelism(3)
        env.from_collection(keys, Types.STRING()).key_by(lambda k: k) \
            .process(Count(), Types.STRING()).set_parallelism(3).print("pickled").set_parallelism(3)
        env.execute()

    on = {"typed": {1: "cgj", 2: "abdhik", 3: "efl"}, "pickled": {1: "abcil", 2: "dfgj", 3: "ehk"}}
    expected = Counter(f"{name}:{k}> {key} {n} {k - 1}" for name, subtasks in on.items()
                       for k, keys in subtasks.items() for key in keys for n in (1, 2, 3))
    assert Counter(run_job(build).lines) == expected

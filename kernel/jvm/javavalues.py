"""How the JVM would see Python values: Java ``hashCode()`` and ``toString()``.

PyFlink hands values to Java with their declared type; what a print sink writes and which
subtask a key goes to follow from the Java object. These functions reproduce that without a JVM.
"""

from __future__ import annotations

import datetime
import io
import math
import pickle
import re
import struct
import types
from typing import Any, Callable, ClassVar, Iterable

from kernel.common.types import Row, RowKind

INT_MIN = -(1 << 31)


def int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def hash_set_order(items: Iterable[Any], hash_code: Callable[[Any], int]) -> list:
    """``items`` (distinct) in the order a ``java.util.HashSet`` they were added to in this
    order iterates them: by bin — the spread hash (``h ^ (h >>> 16)``) modulo the table size —
    and within a bin in the order added. The table starts with 16 bins and doubles when it holds
    more than 3/4 as many items, or when a bin would hold more than 8 while it has fewer than
    64 bins (bins turned into trees, with 64 bins or more, are not reproduced)."""
    bins = 16
    table: list[list[tuple[int, Any]]] = [[] for _ in range(bins)]
    size = 0
    for item in items:
        h = hash_code(item) & 0xFFFFFFFF
        spread = h ^ (h >> 16)
        chain = table[spread & (bins - 1)]
        chain.append((spread, item))
        size += 1
        if (len(chain) > 8 and bins < 64) or size > bins * 3 // 4:
            bins *= 2
            grown: list[list[tuple[int, Any]]] = [[] for _ in range(bins)]
            for old in table:
                for entry in old:
                    grown[entry[0] & (bins - 1)].append(entry)
            table = grown
    return [item for chain in table for _, item in chain]


def string_hash(text: str) -> int:
    """``String.hashCode()`` over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def long_hash(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return int32(value ^ (value >> 32))


def double_hash(value: float) -> int:
    bits = 0x7FF8000000000000 if math.isnan(value) else struct.unpack(">q", struct.pack(">d", value))[0]
    return long_hash(bits)


def float_hash(value: float) -> int:
    """``Float.hashCode()`` of the value rounded to 32 bits (too large for a float: infinity)."""
    if math.isnan(value):
        return 0x7FC00000
    try:
        return struct.unpack(">i", struct.pack(">f", value))[0]
    except OverflowError:
        return 0x7F800000 if value > 0 else -0x800000


def bytes_hash(data: bytes) -> int:
    """``Arrays.hashCode(byte[])`` (Java bytes are signed)."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    return int32(h)


def big_integer_hash(value: int) -> int:
    """``BigInteger.hashCode()``: over the 32-bit words of the magnitude, times the signum."""
    magnitude = abs(value)
    words = [(magnitude >> shift) & 0xFFFFFFFF for shift in range(32 * ((magnitude.bit_length() - 1) // 32), -1, -32)]
    h = 0
    for word in words if magnitude else ():
        h = int32(31 * h + word)
    return int32(h * (1 if value > 0 else -1 if value < 0 else 0))


_DECIMAL = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")


def big_decimal_hash(text: str) -> int:
    """``new BigDecimal(text).hashCode()``: from the unscaled value and the scale the string
    spells (``"1.0"`` is 10 with scale 1, ``"1E+2"`` is 1 with scale -2)."""
    match = _DECIMAL.fullmatch(text)
    if match is None or not (match[2] or match[3]):
        raise ValueError(f"{text!r} is not a number Java's BigDecimal can read")
    sign, whole, fraction, exponent = match[1], match[2], match[3] or "", match[4]
    unscaled = int(whole + fraction or "0") * (-1 if sign == "-" else 1)
    scale = len(fraction) - int(exponent or 0)
    if -(1 << 63) < unscaled < (1 << 63):  # held compactly in a long
        magnitude = abs(unscaled)
        temp = int32(int32((magnitude >> 32) * 31) + (magnitude & 0xFFFFFFFF))
        return int32(31 * (-temp if unscaled < 0 else temp) + scale)
    return int32(31 * big_integer_hash(unscaled) + scale)


def instant_hash(seconds: int, nanos: int) -> int:
    """``Instant.hashCode()``."""
    return int32(long_hash(seconds) + 51 * nanos)


def instant_to_string(seconds: int, nanos: int) -> str:
    """``Instant.toString()``: ISO-8601 in UTC, the fraction in groups of three digits."""
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    fraction = ""
    if nanos:
        digits = f"{nanos:09d}"
        fraction = "." + (digits[:3] if nanos % 1_000_000 == 0 else digits[:6] if nanos % 1000 == 0 else digits)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def double_to_string(value: float) -> str:
    """``Double.toString``: plain decimal in [1e-3, 1e7), else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return _java_decimal(repr(value), abs(value))


def float_to_string(value: float) -> str:
    """``Float.toString`` of the value rounded to 32 bits."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return double_to_string(value)
    single = struct.unpack(">f", struct.pack(">f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if struct.unpack(">f", struct.pack(">f", float(text)))[0] == single:
            return _java_decimal(repr(float(text)), abs(single))
    return _java_decimal(repr(single), abs(single))


def _java_decimal(shortest: str, magnitude: float) -> str:
    sign = "-" if shortest.startswith("-") else ""
    text = shortest.lstrip("-")
    mantissa, _, exponent = text.partition("e")
    exp = int(exponent) if exponent else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0") or "0"
    # position of the decimal point relative to the first significant digit
    point = len(int_part) + exp if int_part.strip("0") else exp - (len(frac_part) - len(frac_part.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    tail = digits[1:] or "0"
    return f"{sign}{digits[0]}.{tail}E{point - 1}"


class _PyFlinkGlobal:
    """Stands for a global of PyFlink's side in a pickle: of ``pyflink.common.types`` (rill's Row
    and RowKind pickle under PyFlink's names, so an untyped Row key has the bytes it has in
    PyFlink) or of cloudpickle."""

    __slots__ = ("module", "name")

    def __init__(self, name: str, module: str = "pyflink.common.types") -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any) -> Any:
        """Pickle only accepts a callable as the function of a reduce; this one is never called."""
        raise TypeError(f"{self.module}.{self.name} exists only in PyFlink")


_CREATE_ROW = _PyFlinkGlobal("_create_row")
_ROW_KIND = _PyFlinkGlobal("RowKind")
#: cloudpickle writes the classes of the ``types`` module (SimpleNamespace, MappingProxyType, ...)
#: as ``cloudpickle.cloudpickle._builtin_type(name)``
_BUILTIN_TYPE = _PyFlinkGlobal("_builtin_type", "cloudpickle.cloudpickle")
_BUILTIN_TYPE_NAMES = {v: k for k, v in vars(types).items() if type(v) is type}


class _PyFlinkPickler(pickle._Pickler):  # type: ignore[name-defined]
    """Python's pickler with PyFlink's module name for Row and RowKind (what the C pickler
    writes for ``pyflink.common.types.Row``: STACK_GLOBAL of module and name, memoized)."""

    dispatch: ClassVar[dict] = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is Row:
            return _CREATE_ROW, (getattr(obj, "_fields", None), tuple(obj._values), obj.get_row_kind())
        if type(obj) is RowKind:
            return _ROW_KIND, (obj.value,)
        if type(obj) is type and obj in _BUILTIN_TYPE_NAMES and obj not in _SPECIAL_TYPES:
            return _BUILTIN_TYPE, (_BUILTIN_TYPE_NAMES[obj],)
        return NotImplemented

    def save_pyflink_global(self, obj: _PyFlinkGlobal) -> None:
        self.save(obj.module)
        self.save(obj.name)
        self.write(pickle.STACK_GLOBAL)
        self.memoize(obj)

    dispatch[_PyFlinkGlobal] = save_pyflink_global


#: classes pickle and cloudpickle both write as ``type(None)`` and the like
_SPECIAL_TYPES = frozenset((type(None), type(Ellipsis), type(NotImplemented)))
_ATOMS = frozenset((str, int, float, bool, bytes, type(None)))


def pickled_bytes(value: Any) -> bytes:
    """The bytes PyFlink's ``PICKLED_BYTE_ARRAY`` coder hands to Java in process mode:
    ``cloudpickle.dumps(value)``, protocol 5. For None, bool, int, float, str, bytes and
    containers of them (tuple, list, dict, set, frozenset, bytearray), Row and instances of
    importable classes cloudpickle writes what ``pickle`` writes with protocol 5, except for the
    classes of the ``types`` module (``SimpleNamespace``); this reproduces that."""
    if type(value) in _ATOMS:
        return pickle.dumps(value, protocol=5)
    buffer = io.BytesIO()
    _PyFlinkPickler(buffer, protocol=5).dump(value)
    return buffer.getvalue()

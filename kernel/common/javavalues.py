"""How the JVM would see Python values: Java ``hashCode()`` and ``toString()``.

PyFlink hands values to Java with their declared type; what a print sink writes and which
subtask a key goes to follow from the Java object. These functions reproduce that without a JVM.
"""

from __future__ import annotations

import math
import struct

INT_MIN = -(1 << 31)


def int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


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
    if math.isnan(value):
        return 0x7FC00000
    return struct.unpack(">i", struct.pack(">f", value))[0]


def bytes_hash(data: bytes) -> int:
    """``Arrays.hashCode(byte[])`` (Java bytes are signed)."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    return int32(h)


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

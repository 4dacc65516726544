"""``Duration``, ``Time`` and ``Instant`` as in ``pyflink.common.time``."""

from __future__ import annotations


class Duration:
    """A length of time (Java's ``java.time.Duration``), kept in nanoseconds."""

    def __init__(self, nanos: int) -> None:
        self._nanos = int(nanos)

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(days * 86_400_000_000_000)

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(hours * 3_600_000_000_000)

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(minutes * 60_000_000_000)

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(seconds * 1_000_000_000)

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(millis * 1_000_000)

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(nanos)

    def to_milliseconds(self) -> int:
        return self._nanos // 1_000_000

    def to_nanos(self) -> int:
        return self._nanos

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other._nanos == self._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    def __repr__(self) -> str:
        return f"Duration.of_millis({self.to_milliseconds()})"


class Time:
    """A time interval in milliseconds (what window assigners take)."""

    def __init__(self, milliseconds: int) -> None:
        self._milliseconds = int(milliseconds)

    def to_milliseconds(self) -> int:
        return self._milliseconds

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time.milliseconds(seconds * 1000)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time.seconds(minutes * 60)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time.minutes(hours * 60)

    @staticmethod
    def days(days: int) -> Time:
        return Time.hours(days * 24)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._milliseconds == other._milliseconds

    def __hash__(self) -> int:
        return hash(self._milliseconds)

    def __str__(self) -> str:
        return f"{self._milliseconds} ms"


class Instant:
    def __init__(self, seconds: int, nanos: int) -> None:
        self.seconds = seconds
        self.nanos = nanos

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        return Instant(epoch_milli // 1000, epoch_milli % 1000 * 1_000_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Instant) and (self.seconds, self.nanos) == (other.seconds, other.nanos)

    def __hash__(self) -> int:
        return hash((self.seconds, self.nanos))

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


def to_millis(value: Time | Duration | int) -> int:
    """Milliseconds of a ``Time``, ``Duration`` or plain int."""
    if isinstance(value, (Time, Duration)):
        return value.to_milliseconds()
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected Time, Duration or milliseconds, got {value!r}")

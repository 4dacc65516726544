"""``WatermarkStrategy`` and ``TimestampAssigner`` (``pyflink.common.watermark_strategy``).

A strategy is a declaration; the watermarking plugin turns it into a generator.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any

from kernel.pyflink import unsupported
from kernel.common.time import Duration


class TimestampAssigner(ABC):
    @abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        """The event time (ms) of ``value``; ``record_timestamp`` is the record's current one."""


class WatermarkStrategy:
    """How a stream's event time and watermarks are derived.

    ``kind`` is ``"bounded"`` (max timestamp - out_of_orderness - 1), ``"monotonous"``
    (bounded with 0) or ``"none"`` (no watermarks).
    """

    def __init__(self, kind: str, out_of_orderness_ms: int = 0) -> None:
        self.kind = kind
        self.out_of_orderness_ms = out_of_orderness_ms
        self._timestamp_assigner: TimestampAssigner | None = None
        self.idleness_ms: int | None = None
        self.alignment: tuple[str, int, int] | None = None  # (group, max drift ms, update interval ms)

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy("monotonous", 0)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        return WatermarkStrategy("bounded", max_out_of_orderness.to_milliseconds())

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy("none")

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssigner) -> WatermarkStrategy:
        """Use ``timestamp_assigner`` (or a callable ``(value, record_ts) -> ts``); returns this strategy."""
        self._timestamp_assigner = timestamp_assigner
        return self

    def with_idleness(self, idle_timeout: Duration) -> WatermarkStrategy:
        """A copy that marks the stream idle after ``idle_timeout`` without events."""
        strategy = copy.copy(self)
        strategy.idleness_ms = idle_timeout.to_milliseconds()
        return strategy

    def with_watermark_alignment(
        self, watermark_group: str, max_allowed_watermark_drift: Duration, update_interval: Duration | None = None
    ) -> WatermarkStrategy:
        """A copy whose sources pause while ahead of their group's minimum by more than the drift."""
        strategy = copy.copy(self)
        interval = update_interval.to_milliseconds() if update_interval is not None else 1000
        strategy.alignment = (watermark_group, max_allowed_watermark_drift.to_milliseconds(), interval)
        return strategy

    @property
    def timestamp_assigner(self) -> TimestampAssigner | None:
        return self._timestamp_assigner

    def __repr__(self) -> str:
        parts = [self.kind]
        if self.kind == "bounded":
            parts.append(f"{self.out_of_orderness_ms} ms")
        if self.idleness_ms is not None:
            parts.append(f"idle after {self.idleness_ms} ms")
        return f"WatermarkStrategy({', '.join(parts)})"


__getattr__ = unsupported.module_getattr(__name__)

"""``NumberSequenceSource``: the numbers ``start..end`` (inclusive), split over the subtasks."""

from __future__ import annotations

from kernel.pyflink import unsupported
from kernel.common.typeinfo import TypeInformation, Types


@unsupported.members("pyflink.datastream.connectors.number_seq:NumberSequenceSource")
class NumberSequenceSource:
    def __init__(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError("end must be >= start")
        self.start = start
        self.end = end

    def produced_type(self) -> TypeInformation:
        return Types.LONG()

    def is_bounded(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"

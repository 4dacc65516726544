"""PyFlink's ``pyflink.common`` for rill: types, rows, time, watermark strategies, configuration."""

from kernel.common.configuration import Configuration
from kernel.common.serialization import Encoder, SimpleStringSchema
from kernel.common.time import Duration, Instant, Time
from kernel.common.typeinfo import RowTypeInfo, TupleTypeInfo, TypeInformation, Types
from kernel.common.types import Row, RowKind
from kernel.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

__all__ = [
    "Configuration", "Duration", "Encoder", "Instant", "Row", "RowKind", "RowTypeInfo", "SimpleStringSchema",
    "Time", "TimestampAssigner", "TupleTypeInfo", "TypeInformation", "Types", "WatermarkStrategy",
]

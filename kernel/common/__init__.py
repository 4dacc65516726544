"""PyFlink's ``pyflink.common`` for rill: types, rows, time, watermark strategies, configuration,
job clients and their futures."""

from kernel.common.completable_future import CompletableFuture
from kernel.common.config_options import ConfigOption, ConfigOptions
from kernel.common.configuration import Configuration
from kernel.common.execution_config import ExecutionConfig
from kernel.common.input_dependency_constraint import InputDependencyConstraint
from kernel.common.job_client import JobClient
from kernel.common.job_execution_result import JobExecutionResult
from kernel.common.job_id import JobID
from kernel.common.job_status import JobStatus
from kernel.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from kernel.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from kernel.common.serializer import TypeSerializer
from kernel.common.time import Duration, Instant, Time
from kernel.common.typeinfo import RowTypeInfo, TupleTypeInfo, TypeInformation, Types
from kernel.common.types import Row, RowKind
from kernel.common.watermark_strategy import (
    AssignerWithPeriodicWatermarksWrapper,
    TimestampAssigner,
    WatermarkStrategy,
)

__all__ = [
    "AssignerWithPeriodicWatermarksWrapper", "ByteArraySchema", "CompletableFuture", "ConfigOption", "ConfigOptions",
    "Configuration", "DeserializationSchema", "Duration", "Encoder", "ExecutionConfig", "Instant",
    "InputDependencyConstraint", "JobClient", "JobExecutionResult", "JobID", "JobStatus", "RestartStrategies",
    "RestartStrategyConfiguration", "Row", "RowKind", "RowTypeInfo", "SerializationSchema", "SimpleStringSchema",
    "Time", "TimestampAssigner", "TupleTypeInfo", "TypeInformation", "TypeSerializer", "Types", "WatermarkStrategy",
]

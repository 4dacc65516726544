"""PyFlink's ``pyflink.common`` for rill: types, rows, time, watermark strategies, configuration,
job clients and their futures.

Names are imported from their modules when first used (a job importing the environment
does not load every module of the package)."""

from __future__ import annotations

from kernel.pyflink.lazynames import lazy_names

#: the module defining each public name (imported when one of its names is first used)
_NAMES = {
    "kernel.common.completable_future": ("CompletableFuture",),
    "kernel.common.config_options": ("ConfigOption", "ConfigOptions"),
    "kernel.common.configuration": ("Configuration",),
    "kernel.common.execution_config": ("ExecutionConfig",),
    "kernel.common.input_dependency_constraint": ("InputDependencyConstraint",),
    "kernel.common.job_client": ("JobClient",),
    "kernel.common.job_execution_result": ("JobExecutionResult",),
    "kernel.common.job_id": ("JobID",),
    "kernel.common.job_status": ("JobStatus",),
    "kernel.common.restart_strategy": ("RestartStrategies", "RestartStrategyConfiguration"),
    "kernel.common.serialization": (
        "ByteArraySchema", "DeserializationSchema", "Encoder", "SerializationSchema", "SimpleStringSchema",
    ),
    "kernel.common.serializer": ("TypeSerializer",),
    "kernel.common.time": ("Duration", "Instant", "Time"),
    "kernel.common.typeinfo": ("RowTypeInfo", "TupleTypeInfo", "TypeInformation", "Types"),
    "kernel.common.types": ("Row", "RowKind"),
    "kernel.common.watermark_strategy": (
        "AssignerWithPeriodicWatermarksWrapper", "TimestampAssigner", "WatermarkStrategy",
    ),
}

__all__, __getattr__, __dir__ = lazy_names(__name__, globals(), _NAMES)

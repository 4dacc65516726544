"""``ExecutionConfig`` (``pyflink.common.ExecutionConfig``): the environment's execution settings
(``env.get_config()``).

Parallelism, max parallelism, the auto-watermark interval, the latency tracking interval
(``metrics.latency.interval``) and the global job parameters (``RuntimeContext.get_job_parameter``)
shape the job; the task cancellation interval and timeout are, as in Flink, the job's
``task.cancellation.interval`` / ``task.cancellation.timeout``. The serialisation settings
(closure cleaner, Kryo, Avro, generic types, POJO registrations, object reuse, snapshot
compression) are Java runtime settings: they are kept and read back as PyFlink does, and
change nothing in rill, whose Python functions pass Python objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.common.configuration import Configuration

if TYPE_CHECKING:
    from kernel.datastream.stream_execution_environment import StreamExecutionEnvironment

__all__ = ["ExecutionConfig"]

LATENCY_INTERVAL = "metrics.latency.interval"
TASK_CANCELLATION_INTERVAL = "task.cancellation.interval"
TASK_CANCELLATION_TIMEOUT = "task.cancellation.timeout"


class ExecutionConfig:
    PARALLELISM_DEFAULT = -1
    PARALLELISM_UNKNOWN = -2

    def __init__(self, env: StreamExecutionEnvironment) -> None:
        self._env = env
        self._auto_watermark_interval: int | None = None
        self._global_job_parameters: dict[str, str] = {}
        self._flags = {
            "closure_cleaner": True, "force_kryo": False, "generic_types": True, "auto_generated_uids": True,
            "force_avro": False, "object_reuse": False, "snapshot_compression": False,
        }

    # -- settings rill uses -------------------------------------------------------------------

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Periodic watermark interval in ms (``pipeline.auto-watermark-interval``); 0 disables."""
        if interval < 0:
            raise ValueError("Auto watermark interval must not be negative.")
        self._auto_watermark_interval = interval
        return self

    def get_auto_watermark_interval(self) -> int:
        if self._auto_watermark_interval is not None:
            return self._auto_watermark_interval
        from kernel.options import ExecutionOptions

        return self._env._duration_option(ExecutionOptions, "auto_watermark_interval", "pipeline.auto-watermark-interval")

    def configured_auto_watermark_interval(self) -> int | None:
        """The interval set in code, None when the configuration decides."""
        return self._auto_watermark_interval

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        """Emit latency markers from the sources every ``interval`` ms (0 or less: none)."""
        self._env._configuration.set_string(LATENCY_INTERVAL, f"{max(interval, 0)} ms")
        return self

    def get_latency_tracking_interval(self) -> int:
        from kernel.options import ExecutionOptions

        return self._env._duration_option(ExecutionOptions, "latency_interval", LATENCY_INTERVAL)

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._env.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._env.get_parallelism()

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._env.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._env.get_max_parallelism()

    def set_global_job_parameters(self, global_job_parameters_dict: Configuration | dict[str, Any]) -> ExecutionConfig:
        """Parameters every function reads with ``RuntimeContext.get_job_parameter``."""
        values = global_job_parameters_dict.to_dict() if isinstance(global_job_parameters_dict, Configuration) \
            else dict(global_job_parameters_dict)
        self._global_job_parameters = {str(k): str(v) for k, v in values.items()}
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._global_job_parameters)

    # -- Java runtime settings, kept as PyFlink keeps them --------------------------------------

    def _set(self, flag: str, value: bool) -> ExecutionConfig:
        self._flags[flag] = value
        return self

    def enable_closure_cleaner(self) -> ExecutionConfig:
        return self._set("closure_cleaner", True)

    def disable_closure_cleaner(self) -> ExecutionConfig:
        return self._set("closure_cleaner", False)

    def is_closure_cleaner_enabled(self) -> bool:
        return self._flags["closure_cleaner"]

    def get_task_cancellation_interval(self) -> int:
        """ms between interrupts of a cancelled task still running (``task.cancellation.interval``)."""
        return self._cancellation_option(TASK_CANCELLATION_INTERVAL, 30_000)

    def set_task_cancellation_interval(self, interval: int) -> ExecutionConfig:
        """As Flink's ExecutionConfig, backed by the job's configuration: the job's tasks use it."""
        self._env._configuration.set_string(TASK_CANCELLATION_INTERVAL, f"{int(interval)} ms")
        return self

    def get_task_cancellation_timeout(self) -> int:
        """ms a cancelled task may take to return before it counts as stuck
        (``task.cancellation.timeout``; 0: wait forever)."""
        return self._cancellation_option(TASK_CANCELLATION_TIMEOUT, 180_000)

    def set_task_cancellation_timeout(self, timeout: int) -> ExecutionConfig:
        if timeout < 0:
            raise ValueError("Timeout value must be >= 0.")
        self._env._configuration.set_string(TASK_CANCELLATION_TIMEOUT, f"{int(timeout)} ms")
        return self

    def _cancellation_option(self, key: str, default: int) -> int:
        """Set in the environment's Configuration, else the session's, else Flink's default."""
        from kernel.configtypes import parse_duration_ms
        from kernel.errors import ConfigError
        from kernel.lifecycle.executors import current_executor

        configured = self._env._configured(key)
        if configured is not None:
            return parse_duration_ms(configured)
        try:
            return current_executor().session.config.get(key)
        except (ConfigError, AttributeError):  # the key's plugin is not loaded, or no session
            return default

    def enable_force_kryo(self) -> ExecutionConfig:
        return self._set("force_kryo", True)

    def disable_force_kryo(self) -> ExecutionConfig:
        return self._set("force_kryo", False)

    def is_force_kryo_enabled(self) -> bool:
        return self._flags["force_kryo"]

    def enable_generic_types(self) -> ExecutionConfig:
        return self._set("generic_types", True)

    def disable_generic_types(self) -> ExecutionConfig:
        return self._set("generic_types", False)

    def has_generic_types_disabled(self) -> bool:
        return not self._flags["generic_types"]

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        return self._set("auto_generated_uids", True)

    def disable_auto_generated_uids(self) -> ExecutionConfig:
        return self._set("auto_generated_uids", False)

    def has_auto_generated_uids_enabled(self) -> bool:
        return self._flags["auto_generated_uids"]

    def enable_force_avro(self) -> ExecutionConfig:
        return self._set("force_avro", True)

    def disable_force_avro(self) -> ExecutionConfig:
        return self._set("force_avro", False)

    def is_force_avro_enabled(self) -> bool:
        return self._flags["force_avro"]

    def enable_object_reuse(self) -> ExecutionConfig:
        return self._set("object_reuse", True)

    def disable_object_reuse(self) -> ExecutionConfig:
        return self._set("object_reuse", False)

    def is_object_reuse_enabled(self) -> bool:
        return self._flags["object_reuse"]

    def get_default_kryo_serializer_classes(self) -> dict[str, str]:
        """Java classes with a default Kryo serializer: none can be registered from Python."""
        return {}

    def get_registered_kryo_types(self) -> list[str]:
        return []

    def get_registered_pojo_types(self) -> list[str]:
        return []

    def is_use_snapshot_compression(self) -> bool:
        return self._flags["snapshot_compression"]

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        return self._set("snapshot_compression", bool(use_snapshot_compression))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ExecutionConfig) and (
            self._flags, self._global_job_parameters, self._auto_watermark_interval,
            self._task_cancellation_interval, self._task_cancellation_timeout,
        ) == (other._flags, other._global_job_parameters, other._auto_watermark_interval,
              other._task_cancellation_interval, other._task_cancellation_timeout)

    __hash__ = object.__hash__

"""``StreamExecutionEnvironment``: where a job starts and what runs it.

Transformation ids come from a counter per environment, starting at 1, in creation order
(Flink's counter is per JVM; a job script is one program). Operators take the environment's
parallelism when they are created, as in Flink.
"""

from __future__ import annotations

import os
from typing import Any

from kernel.pyflink import unsupported
from kernel.jvm.bridge import collection_elements
from kernel.common.configuration import Configuration
from kernel.common.execution_config import ExecutionConfig
from kernel.common.typeinfo import TypeInformation, resolve_type
from kernel.datastream.checkpoint_config import SAVEPOINT_DIR, CheckpointConfig, checkpointing_options
from kernel.datastream.checkpointing_mode import CheckpointingMode
from kernel.datastream.data_stream import DataStream
from kernel.datastream.execution_mode import RuntimeExecutionMode
from kernel.datastream.slot_sharing_group import SlotSharingGroup
from kernel.datastream.transformations import (
    UPPER_BOUND_MAX_PARALLELISM,
    LegacySourceTransformation,
    OperatorSpec,
    SourceTransformation,
    Transformation,
)
from kernel.lifecycle.program import DEFAULT_BATCH_JOB_NAME, DEFAULT_STREAMING_JOB_NAME, Program
from kernel.lifecycle.executors import current_executor


_BOOL = {"true": True, "false": False}
CHAIN_DIFFERENT_MAX_PARALLELISM = "pipeline.operator-chaining.chain-operators-with-different-max-parallelism"


@unsupported.members("pyflink.datastream.stream_execution_environment:StreamExecutionEnvironment")
class StreamExecutionEnvironment:
    _default_local_parallelism: int | None = None

    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = Configuration(configuration)
        self._transformations: list[Transformation] = []
        self._next_id = 0
        self._parallelism: int | None = None
        self._max_parallelism: int | None = None
        self._chaining: bool | None = None
        self._runtime_mode: str | None = None
        self._buffer_timeout: int | None = None
        self._config = ExecutionConfig(self)
        self._slot_sharing_groups: dict[str, SlotSharingGroup] = {}

    @staticmethod
    def get_execution_environment(configuration: Configuration | None = None) -> StreamExecutionEnvironment:
        return StreamExecutionEnvironment(configuration)

    # -- ids and operators --------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _add_operator(self, transformation: Transformation) -> None:
        self._transformations.append(transformation)

    # -- settings -----------------------------------------------------------------------------

    def _configured(self, key: str) -> str | None:
        return self._configuration.get_string(key)

    def _duration_option(self, section: type, attribute: str, key: str) -> Any:
        """A rill duration option (ms): set in the environment's Configuration, else the session's."""
        configured = self._configured(key)
        if configured is not None:
            from kernel.configtypes import parse_duration_ms

            return parse_duration_ms(configured)
        return getattr(current_executor().session.config.section(section), attribute)

    def get_config(self) -> ExecutionConfig:
        return self._config

    def configure(self, configuration: Configuration) -> StreamExecutionEnvironment:
        self._configuration.add_all(configuration)
        return self

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        if parallelism < 1:
            raise ValueError("The parallelism must be at least one.")
        self._parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        if self._parallelism is not None:
            return self._parallelism
        configured = self._configured("parallelism.default")
        return int(configured) if configured is not None else current_executor().defaults().parallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            raise ValueError(
                f"maxParallelism is out of bounds 0 < maxParallelism <= {UPPER_BOUND_MAX_PARALLELISM}. "
                f"Found: {max_parallelism}"
            )
        self._max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int:
        if self._max_parallelism is not None:
            return self._max_parallelism
        configured = self._configured("pipeline.max-parallelism")
        return int(configured) if configured is not None else current_executor().defaults().max_parallelism

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        if not isinstance(execution_mode, RuntimeExecutionMode):
            raise TypeError("execution_mode must be a RuntimeExecutionMode")
        self._runtime_mode = execution_mode.name
        return self

    def _runtime_mode_name(self) -> str:
        if self._runtime_mode is not None:
            return self._runtime_mode
        return (self._configured("execution.runtime-mode") or current_executor().defaults().runtime_mode).upper()

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        self._chaining = False
        return self

    def is_chaining_enabled(self) -> bool:
        if self._chaining is not None:
            return self._chaining
        configured = self._configured("pipeline.operator-chaining.enabled")
        if configured is not None:
            return _BOOL.get(configured.lower(), True)
        return current_executor().defaults().chaining

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        if timeout_millis < -1:
            raise ValueError("Timeout of buffer must be non-negative or -1")
        self._buffer_timeout = timeout_millis
        return self

    def get_buffer_timeout(self) -> int:
        """The buffer timeout set in code, else ``execution.buffer-timeout.interval`` (-1:
        disabled, only full buffers are sent, as ``execution.buffer-timeout.enabled`` false)."""
        if self._buffer_timeout is not None:
            return self._buffer_timeout
        from kernel.options import ExecutionOptions

        options = current_executor().session.config.section(ExecutionOptions)
        return options.buffer_timeout if options.buffer_timeout_enabled else -1

    def add_python_file(self, file_path: str) -> None:
        """Add a Python file, zip file or directory to the import path of the job's functions
        on every worker (``python.files``, recorded as PyFlink records it)."""
        existing = self._configuration.get_string("python.files", None)
        self._configuration.set_string("python.files", file_path if existing is None else f"{file_path},{existing}")

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Extract a zip archive into the job's working directory on every worker, into
        ``target_dir`` (default: the archive's file name) — ``python.archives``."""
        entry = archive_path if target_dir is None else f"{archive_path}#{target_dir}"
        existing = self._configuration.get_string("python.archives", None)
        self._configuration.set_string("python.archives", entry if existing is None else f"{existing},{entry}")

    def set_python_requirements(self, requirements_file_path: str, requirements_cache_dir: str | None = None) -> None:
        """Install the requirements into the job's own environment, cached (offline from
        ``requirements_cache_dir`` when given) — ``python.requirements``."""
        value = requirements_file_path if requirements_cache_dir is None \
            else f"{requirements_file_path}#{requirements_cache_dir}"
        self._configuration.set_string("python.requirements", value)

    def set_python_executable(self, python_exec: str) -> None:
        """The interpreter of the job's TaskExecutor processes (``python.executable``)."""
        self._configuration.set_string("python.executable", python_exec)

    def add_jars(self, *jars_path: str) -> None:
        """Recorded in ``pipeline.jars`` as PyFlink does; rill runs no JVM to load them into."""
        self._add_to_list("pipeline.jars", jars_path)

    def add_classpaths(self, *classpaths: str) -> None:
        """Recorded in ``pipeline.classpaths`` as PyFlink does; rill runs no JVM."""
        self._add_to_list("pipeline.classpaths", classpaths)

    def _add_to_list(self, key: str, values: tuple[str, ...]) -> None:
        existing = Configuration.parse_list_value(self._configuration.get_string(key, None))
        self._configuration.set_string(key, str([*existing, *values]))

    def get_default_local_parallelism(self) -> int:
        """Flink's default parallelism of local environments (the number of CPU cores unless set)."""
        return StreamExecutionEnvironment._default_local_parallelism or os.cpu_count() or 1

    def set_default_local_parallelism(self, parallelism: int) -> None:
        StreamExecutionEnvironment._default_local_parallelism = parallelism

    def register_slot_sharing_group(self, slot_sharing_group: SlotSharingGroup) -> StreamExecutionEnvironment:
        """Declare a slot sharing group's resources (operators join it by name)."""
        self._slot_sharing_groups[slot_sharing_group.get_name()] = slot_sharing_group
        return self

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """``pipeline.operator-chaining.chain-operators-with-different-max-parallelism``."""
        configured = self._configured(CHAIN_DIFFERENT_MAX_PARALLELISM)
        if configured is not None:
            return _BOOL.get(configured.lower(), True)
        from kernel.options import CoreOptions

        return current_executor().session.config.section(CoreOptions).chain_different_max_parallelism

    # -- checkpointing ------------------------------------------------------------------------

    def get_checkpoint_config(self) -> CheckpointConfig:
        """The job's checkpoint settings (interval, mode, timeout, pauses, retention, ...)."""
        return CheckpointConfig(self._configuration)

    def enable_checkpointing(self, interval: int, mode: CheckpointingMode | None = None) -> StreamExecutionEnvironment:
        """Take a checkpoint every ``interval`` ms (EXACTLY_ONCE unless ``mode`` says otherwise);
        a failed task then restarts from the latest completed checkpoint."""
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_interval(self) -> int:
        """The checkpoint interval in ms, -1 when checkpointing is disabled."""
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpointing_consistency_mode()

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        """``execution.checkpointing.savepoint-dir`` of this job."""
        self._configuration.set_string(SAVEPOINT_DIR, directory)
        return self

    def get_default_savepoint_directory(self) -> str | None:
        return checkpointing_options(self._configuration).savepoint_dir

    def close(self) -> None:
        """Nothing to release: transformations are dropped when the environment is."""

    # -- sources ------------------------------------------------------------------------------

    def from_collection(self, collection: list[Any], type_info: TypeInformation | None = None) -> DataStream:
        """A bounded, non-parallel source emitting the elements in order. With ``type_info``, each
        element as PyFlink's JVM converts it to that type (``kernel.jvm.bridge``)."""
        out = resolve_type(type_info)
        elements = list(collection) if type_info is None else collection_elements(out, collection)
        operator = OperatorSpec("collection", None, {"elements": elements})
        t = LegacySourceTransformation(self, "Collection Source", out, 1, operator, bounded=True)
        t.set_max_parallelism(1)
        return DataStream(self, t)

    def from_source(self, source: Any, watermark_strategy: Any, source_name: str,
                    type_info: TypeInformation | None = None) -> DataStream:
        """A source (FileSource, NumberSequenceSource, DataGeneratorSource, ...) with its watermarks."""
        produced = getattr(source, "produced_type", None)
        out = resolve_type(type_info) if type_info is not None else (produced() if produced else resolve_type(None))
        operator = OperatorSpec("source", source, {"watermark_strategy": watermark_strategy})
        bounded = bool(getattr(source, "is_bounded", lambda: True)())
        parallelism = getattr(source, "parallelism", lambda: None)() or self.get_parallelism()
        t = SourceTransformation(self, source_name, out, parallelism, operator, watermark_strategy, bounded)
        return DataStream(self, t)

    # -- execution ----------------------------------------------------------------------------

    def _program(self, job_name: str | None, clear: bool) -> Program:
        mode = self._runtime_mode_name()
        executor = current_executor()
        default_name = executor.defaults().job_name or (
            DEFAULT_BATCH_JOB_NAME if mode == "BATCH" else DEFAULT_STREAMING_JOB_NAME
        )
        program = Program(
            job_name=job_name or self._configured("pipeline.name") or default_name,
            transformations=list(self._transformations),
            parallelism=self.get_parallelism(),
            max_parallelism=self.get_max_parallelism(),
            chaining_enabled=self.is_chaining_enabled(),
            runtime_mode=mode,
            buffer_timeout=self._buffer_timeout,
            auto_watermark_interval=self._config.configured_auto_watermark_interval(),
            job_parameters=self._config.get_global_job_parameters(),
            env=self,
            config_overrides=self._configuration.to_dict(),
        )
        if clear:
            self._transformations = []
        return program

    def execute(self, job_name: str | None = None) -> Any:
        """Run the job and wait for it; returns a JobExecutionResult."""
        return current_executor().execute(self._program(job_name, clear=True))

    def execute_async(self, job_name: str = DEFAULT_STREAMING_JOB_NAME) -> Any:
        """Start the job and return a JobClient at once."""
        return current_executor().execute_async(self._program(job_name, clear=True))

    def get_execution_plan(self) -> str:
        """The StreamGraph as Flink's JSON execution plan."""
        from kernel.lifecycle.compiler import build_stream_graph
        from kernel.runtime.graph.plan import execution_plan_json

        program = self._program(None, clear=False)
        executor = current_executor()
        return execution_plan_json(build_stream_graph(executor.session_for(program), program))

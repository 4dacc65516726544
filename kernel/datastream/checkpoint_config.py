"""PyFlink's ``CheckpointConfig``: the checkpointing settings of one job.

As in Flink 2.x, it is a view of configuration keys: a setter writes the Flink key into the
environment's Configuration (so the job's value wins over ``rill.toml`` and ``--set`` when the
job runs, and is validated like them), a getter reads the job's value, else the session's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.options import MINIMAL_CHECKPOINT_TIME, CheckpointingOptions
from kernel.common.time import Duration
from kernel.config import override_section
from kernel.datastream.checkpointing_mode import CheckpointingMode
from kernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention

if TYPE_CHECKING:
    from kernel.common.configuration import Configuration

__all__ = ["CheckpointConfig"]

INTERVAL = "execution.checkpointing.interval"
MODE = "execution.checkpointing.mode"
TIMEOUT = "execution.checkpointing.timeout"
MIN_PAUSE = "execution.checkpointing.min-pause"
MAX_CONCURRENT = "execution.checkpointing.max-concurrent-checkpoints"
TOLERABLE = "execution.checkpointing.tolerable-failed-checkpoints"
RETENTION = "execution.checkpointing.externalized-checkpoint-retention"
UNALIGNED = "execution.checkpointing.unaligned.enabled"
FORCE_UNALIGNED = "execution.checkpointing.unaligned.forced"
ALIGNED_TIMEOUT = "execution.checkpointing.aligned-checkpoint-timeout"
SAVEPOINT_DIR = "execution.checkpointing.savepoint-dir"
UNLIMITED_TOLERABLE_FAILURE_NUMBER = 2147483647


def checkpointing_options(configuration: Configuration) -> CheckpointingOptions:
    """The session's checkpointing options with the job's own keys on top."""
    from kernel.lifecycle.executors import current_executor

    base = current_executor().session.config.section(CheckpointingOptions)
    return override_section(base, configuration.to_dict(), "the job's Configuration")


class CheckpointConfig:
    """Captures all checkpointing related settings of a job."""

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    def _options(self) -> CheckpointingOptions:
        return checkpointing_options(self._configuration)

    def _set(self, key: str, value: Any) -> CheckpointConfig:
        self._configuration.set_string(key, str(value))
        return self

    def is_checkpointing_enabled(self) -> bool:
        return self._options().interval is not None

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return CheckpointingMode[self._options().mode]

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        return self._set(MODE, CheckpointingMode(checkpointing_mode).name)

    def get_checkpoint_interval(self) -> int:
        """The interval in ms, -1 when checkpointing is disabled."""
        interval = self._options().interval
        return -1 if interval is None else interval

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        if checkpoint_interval < MINIMAL_CHECKPOINT_TIME:
            raise ValueError(f"Checkpoint interval must be larger than or equal to {MINIMAL_CHECKPOINT_TIME} ms")
        return self._set(INTERVAL, f"{checkpoint_interval} ms")

    def get_checkpoint_timeout(self) -> int:
        return self._options().timeout

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        if checkpoint_timeout < MINIMAL_CHECKPOINT_TIME:
            raise ValueError(f"Checkpoint timeout must be larger than or equal to {MINIMAL_CHECKPOINT_TIME} ms")
        return self._set(TIMEOUT, f"{checkpoint_timeout} ms")

    def get_min_pause_between_checkpoints(self) -> int:
        return self._options().min_pause

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int) -> CheckpointConfig:
        if min_pause_between_checkpoints < 0:
            raise ValueError("Pause value must be zero or positive")
        return self._set(MIN_PAUSE, f"{min_pause_between_checkpoints} ms")

    def get_max_concurrent_checkpoints(self) -> int:
        return self._options().max_concurrent

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        if max_concurrent_checkpoints < 1:
            raise ValueError("The maximum number of concurrent attempts must be at least one.")
        return self._set(MAX_CONCURRENT, max_concurrent_checkpoints)

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Deprecated in 2.0: whether no failed checkpoint is tolerated."""
        return self.get_tolerable_checkpoint_failure_number() == 0

    def set_fail_on_checkpointing_errors(self, fail_on_checkpointing_errors: bool) -> CheckpointConfig:
        """Deprecated in 2.0: tolerate no failed checkpoint (True) or any number (False)."""
        return self.set_tolerable_checkpoint_failure_number(
            0 if fail_on_checkpointing_errors else UNLIMITED_TOLERABLE_FAILURE_NUMBER)

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self._options().tolerable_failures

    def set_tolerable_checkpoint_failure_number(self, tolerable_checkpoint_failure_number: int) -> CheckpointConfig:
        if tolerable_checkpoint_failure_number < 0:
            raise ValueError("The tolerable failure checkpoint number must be non-negative.")
        return self._set(TOLERABLE, tolerable_checkpoint_failure_number)

    def set_externalized_checkpoint_retention(self, retention_mode: ExternalizedCheckpointRetention) -> CheckpointConfig:
        return self._set(RETENTION, ExternalizedCheckpointRetention(retention_mode).name)

    def is_externalized_checkpoints_enabled(self) -> bool:
        return self._options().retention != ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS.name

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        return ExternalizedCheckpointRetention[self._options().retention]

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self._options().unaligned

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        """Recorded as Flink records it; a job that runs with it enabled is refused (rill aligns
        barriers)."""
        return self._set(UNALIGNED, "true" if enabled else "false")

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration) -> CheckpointConfig:
        return self._set(ALIGNED_TIMEOUT, f"{alignment_timeout.to_milliseconds()} ms")

    def get_aligned_checkpoint_timeout(self) -> Duration:
        return Duration.of_millis(self._options().aligned_timeout)

    def set_alignment_timeout(self, alignment_timeout: Duration) -> CheckpointConfig:
        """Deprecated in 2.0: :meth:`set_aligned_checkpoint_timeout`."""
        return self.set_aligned_checkpoint_timeout(alignment_timeout)

    def get_alignment_timeout(self) -> Duration:
        """Deprecated in 2.0: :meth:`get_aligned_checkpoint_timeout`."""
        return self.get_aligned_checkpoint_timeout()

    def set_force_unaligned_checkpoints(self, force_unaligned_checkpoints: bool = True) -> CheckpointConfig:
        return self._set(FORCE_UNALIGNED, "true" if force_unaligned_checkpoints else "false")

    def is_force_unaligned_checkpoints(self) -> bool:
        return self._options().force_unaligned

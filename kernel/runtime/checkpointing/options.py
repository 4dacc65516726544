"""Flink's checkpointing keys that a job's checkpoint config reads and writes
(``CheckpointingOptions``, PyFlink's ``CheckpointConfig``), with Flink's defaults and its
deprecated 1.x names. Where checkpoints are stored (``execution.checkpointing.dir``, the
storage, ``state.backend.type``, ...) is the ``checkpointing`` plugin's
(:mod:`plugins.checkpointing.options`).

Checkpointing is on when ``execution.checkpointing.interval`` is set and the job runs in
STREAMING mode (a BATCH job takes no checkpoints).
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs

#: Flink's CheckpointCoordinatorConfiguration.MINIMAL_CHECKPOINT_TIME (ms)
MINIMAL_CHECKPOINT_TIME = 10


class CheckpointingOptions(Section):
    deprecated_keys = {
        "state.savepoints.dir": "execution.checkpointing.savepoint-dir",
        "execution.checkpointing.checkpoints-after-tasks-finish.enabled":
            "execution.checkpointing.checkpoints-after-tasks-finish",
        "execution.checkpointing.unaligned": "execution.checkpointing.unaligned.enabled",
        "execution.checkpointing.alignment-timeout": "execution.checkpointing.aligned-checkpoint-timeout",
    }

    interval: Annotated[
        DurationMs | None, msgspec.Meta(description="take a checkpoint this often (unset: no checkpoints)"),
    ] = msgspec.field(name="execution.checkpointing.interval", default=None)
    mode: Annotated[
        Literal["EXACTLY_ONCE", "AT_LEAST_ONCE"], msgspec.Meta(description="EXACTLY_ONCE aligns barriers"),
    ] = msgspec.field(name="execution.checkpointing.mode", default="EXACTLY_ONCE")
    timeout: Annotated[
        DurationMs, msgspec.Meta(description="a checkpoint not complete after this long expires"),
    ] = msgspec.field(name="execution.checkpointing.timeout", default=600_000)
    min_pause: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="pause after a completed checkpoint before the next starts"),
    ] = msgspec.field(name="execution.checkpointing.min-pause", default=0)
    max_concurrent: Annotated[
        int, msgspec.Meta(ge=1, description="checkpoints in progress at once"),
    ] = msgspec.field(name="execution.checkpointing.max-concurrent-checkpoints", default=1)
    tolerable_failures: Annotated[
        int, msgspec.Meta(ge=0, description="consecutive failed checkpoints tolerated before the job fails over"),
    ] = msgspec.field(name="execution.checkpointing.tolerable-failed-checkpoints", default=0)
    unaligned: Annotated[
        bool, msgspec.Meta(description="barriers overtake in-flight data, which is persisted (EXACTLY_ONCE only)"),
    ] = msgspec.field(name="execution.checkpointing.unaligned.enabled", default=False)
    force_unaligned: Annotated[
        bool, msgspec.Meta(description="unaligned checkpoints despite custom partitioners (with unaligned only)"),
    ] = msgspec.field(name="execution.checkpointing.unaligned.forced", default=False)
    aligned_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="with unaligned: start aligned, switch to unaligned once this long "
                                                   "has passed since the trigger (0: unaligned at once)"),
    ] = msgspec.field(name="execution.checkpointing.aligned-checkpoint-timeout", default=0)
    retention: Annotated[
        Literal["DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS"],
        msgspec.Meta(description="which completed checkpoints outlive the job"),
    ] = msgspec.field(name="execution.checkpointing.externalized-checkpoint-retention",
                      default="NO_EXTERNALIZED_CHECKPOINTS")
    savepoint_dir: Annotated[
        str | None, msgspec.Meta(description="default directory of savepoints"),
    ] = msgspec.field(name="execution.checkpointing.savepoint-dir", default=None)
    after_tasks_finish: Annotated[
        bool, msgspec.Meta(description="keep checkpointing after tasks finish; a bounded job ends with a final checkpoint"),
    ] = msgspec.field(name="execution.checkpointing.checkpoints-after-tasks-finish", default=True)
    def check(self) -> None:
        if self.interval is not None and self.interval < MINIMAL_CHECKPOINT_TIME:
            raise ValueError(f"execution.checkpointing.interval must be at least {MINIMAL_CHECKPOINT_TIME} ms "
                             "(unset it to take no checkpoints)")
        if self.timeout < MINIMAL_CHECKPOINT_TIME:
            raise ValueError(f"execution.checkpointing.timeout must be at least {MINIMAL_CHECKPOINT_TIME} ms")

    def resolved(self) -> dict[str, tuple[object, str]]:
        if self.savepoint_dir and not os.path.isabs(self.savepoint_dir):
            return {"execution.checkpointing.savepoint-dir": (os.path.abspath(self.savepoint_dir),
                                                              "relative to the working directory")}
        return {}

    @property
    def unaligned_enabled(self) -> bool:
        """Whether checkpoints may be unaligned: enabled, and EXACTLY_ONCE (Flink's
        ``CheckpointingOptions.isUnalignedCheckpointEnabled``)."""
        return self.unaligned and self.mode == "EXACTLY_ONCE"


def checkpointing_enabled(options: CheckpointingOptions, runtime_mode: str) -> bool:
    """Whether a job takes checkpoints: an interval is set and it runs in STREAMING mode."""
    return options.interval is not None and runtime_mode != "BATCH"

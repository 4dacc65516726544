"""Flink's checkpointing keys (``CheckpointingOptions``, ``StateBackendOptions``), with Flink's
defaults and its deprecated 1.x names.

Checkpointing is on when ``execution.checkpointing.interval`` is set and the job runs in
STREAMING mode (a BATCH job takes no checkpoints). Where checkpoints go: ``filesystem``
storage writes ``_metadata`` and state files under ``execution.checkpointing.dir``;
``jobmanager`` storage keeps state in the JobMaster's memory, and with a directory writes
only ``_metadata`` there (state inline). Unset, the storage is ``filesystem`` when a
directory is configured, else ``jobmanager``.
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs, MemoryBytes

#: Flink's CheckpointCoordinatorConfiguration.MINIMAL_CHECKPOINT_TIME (ms)
MINIMAL_CHECKPOINT_TIME = 10
MAX_INLINE_THRESHOLD = 1 << 20
RETENTIONS = ("DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS")


class CheckpointingOptions(Section):
    deprecated_keys = {
        "state.checkpoints.dir": "execution.checkpointing.dir",
        "state.backend.fs.checkpointdir": "execution.checkpointing.dir",
        "state.savepoints.dir": "execution.checkpointing.savepoint-dir",
        "state.checkpoint-storage": "execution.checkpointing.storage",
        "state.checkpoints.num-retained": "execution.checkpointing.num-retained",
        "state.checkpoints.create-subdir": "execution.checkpointing.create-subdir",
        "state.storage.fs.memory-threshold": "execution.checkpointing.data-inline-threshold",
        "state.backend.fs.memory-threshold": "execution.checkpointing.data-inline-threshold",
        "state.backend.incremental": "execution.checkpointing.incremental",
        "state.backend": "state.backend.type",
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
    num_retained: Annotated[
        int, msgspec.Meta(ge=1, description="completed checkpoints kept (older ones are subsumed and deleted)"),
    ] = msgspec.field(name="execution.checkpointing.num-retained", default=1)
    dir: Annotated[
        str | None, msgspec.Meta(description="where checkpoints are written (<dir>/<job id>/chk-<n>)"),
    ] = msgspec.field(name="execution.checkpointing.dir", default=None)
    savepoint_dir: Annotated[
        str | None, msgspec.Meta(description="default directory of savepoints"),
    ] = msgspec.field(name="execution.checkpointing.savepoint-dir", default=None)
    storage: Annotated[
        Literal["jobmanager", "filesystem"] | None,
        msgspec.Meta(description="jobmanager or filesystem (unset: filesystem when a dir is set)"),
    ] = msgspec.field(name="execution.checkpointing.storage", default=None)
    create_subdir: Annotated[
        bool, msgspec.Meta(description="checkpoints of a job go to a subdirectory named by its job id"),
    ] = msgspec.field(name="execution.checkpointing.create-subdir", default=True)
    inline_threshold: Annotated[
        MemoryBytes, msgspec.Meta(ge=0, description="state smaller than this is stored inside _metadata"),
    ] = msgspec.field(name="execution.checkpointing.data-inline-threshold", default=20 << 10)
    incremental: Annotated[
        bool, msgspec.Meta(description="incremental checkpoints (not supported: snapshots are full)"),
    ] = msgspec.field(name="execution.checkpointing.incremental", default=False)
    after_tasks_finish: Annotated[
        bool, msgspec.Meta(description="keep checkpointing after tasks finish; a bounded job ends with a final checkpoint"),
    ] = msgspec.field(name="execution.checkpointing.checkpoints-after-tasks-finish", default=True)
    state_backend: Annotated[
        Literal["hashmap", "rocksdb"], msgspec.Meta(description="keyed state lives on the heap either way"),
    ] = msgspec.field(name="state.backend.type", default="hashmap")

    def check(self) -> None:
        if self.interval is not None and self.interval < MINIMAL_CHECKPOINT_TIME:
            raise ValueError(f"execution.checkpointing.interval must be at least {MINIMAL_CHECKPOINT_TIME} ms "
                             "(unset it to take no checkpoints)")
        if self.timeout < MINIMAL_CHECKPOINT_TIME:
            raise ValueError(f"execution.checkpointing.timeout must be at least {MINIMAL_CHECKPOINT_TIME} ms")
        if self.incremental:
            raise ValueError("execution.checkpointing.incremental: rill's snapshots are always full")
        if self.inline_threshold > MAX_INLINE_THRESHOLD:
            raise ValueError("execution.checkpointing.data-inline-threshold must be at most 1 mb")
        if self.storage == "filesystem" and not self.dir:
            raise ValueError("execution.checkpointing.storage 'filesystem' needs execution.checkpointing.dir")

    def resolved(self) -> dict[str, tuple[object, str]]:
        worked_out: dict[str, tuple[object, str]] = {}
        if self.storage is None:
            worked_out["execution.checkpointing.storage"] = (
                self.effective_storage, "worked out: filesystem when execution.checkpointing.dir is set")
        for key, path in (("execution.checkpointing.dir", self.dir),
                          ("execution.checkpointing.savepoint-dir", self.savepoint_dir)):
            if path and not os.path.isabs(path):
                worked_out[key] = (os.path.abspath(path), "relative to the working directory")
        if self.state_backend == "rocksdb":
            worked_out["state.backend.type"] = ("hashmap", "rill keeps keyed state on the heap")
        return worked_out

    @property
    def unaligned_enabled(self) -> bool:
        """Whether checkpoints may be unaligned: enabled, and EXACTLY_ONCE (Flink's
        ``CheckpointingOptions.isUnalignedCheckpointEnabled``)."""
        return self.unaligned and self.mode == "EXACTLY_ONCE"

    @property
    def effective_storage(self) -> str:
        return self.storage or ("filesystem" if self.dir else "jobmanager")

    @property
    def directory(self) -> str | None:
        """The checkpoint directory, absolute (None: none configured)."""
        return os.path.abspath(self.dir) if self.dir else None


def checkpointing_enabled(options: CheckpointingOptions, runtime_mode: str) -> bool:
    """Whether a job takes checkpoints: an interval is set and it runs in STREAMING mode."""
    return options.interval is not None and runtime_mode != "BATCH"

"""Where the ``checkpointing`` plugin stores checkpoints (Flink's ``CheckpointingOptions`` and
``StateBackendOptions`` of the storage), with Flink's defaults and its deprecated 1.x names.

``filesystem`` storage writes ``_metadata`` and state files under ``execution.checkpointing.dir``;
``jobmanager`` storage keeps state in the JobMaster's memory, and with a directory writes only
``_metadata`` there (state inline). Unset, the storage is ``filesystem`` when a directory is
configured, else ``jobmanager``. What a job's checkpoint config sets (interval, mode, timeouts,
retention, ...) is the kernel's (:mod:`kernel.runtime.checkpointing.options`).
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

import msgspec

from kernel.config import Section
from kernel.configtypes import MemoryBytes

MAX_INLINE_THRESHOLD = 1 << 20


class CheckpointStorageOptions(Section):
    deprecated_keys = {
        "state.checkpoints.dir": "execution.checkpointing.dir",
        "state.backend.fs.checkpointdir": "execution.checkpointing.dir",
        "state.checkpoint-storage": "execution.checkpointing.storage",
        "state.checkpoints.num-retained": "execution.checkpointing.num-retained",
        "state.checkpoints.create-subdir": "execution.checkpointing.create-subdir",
        "state.storage.fs.memory-threshold": "execution.checkpointing.data-inline-threshold",
        "state.backend.fs.memory-threshold": "execution.checkpointing.data-inline-threshold",
        "state.backend.incremental": "execution.checkpointing.incremental",
        "state.backend": "state.backend.type",
    }

    num_retained: Annotated[
        int, msgspec.Meta(ge=1, description="completed checkpoints kept (older ones are subsumed and deleted)"),
    ] = msgspec.field(name="execution.checkpointing.num-retained", default=1)
    dir: Annotated[
        str | None, msgspec.Meta(description="where checkpoints are written (<dir>/<job id>/chk-<n>)"),
    ] = msgspec.field(name="execution.checkpointing.dir", default=None)
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
    state_backend: Annotated[
        Literal["hashmap", "rocksdb"], msgspec.Meta(description="keyed state lives on the heap either way"),
    ] = msgspec.field(name="state.backend.type", default="hashmap")

    def check(self) -> None:
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
        if self.dir and not os.path.isabs(self.dir):
            worked_out["execution.checkpointing.dir"] = (os.path.abspath(self.dir), "relative to the working directory")
        if self.state_backend == "rocksdb":
            worked_out["state.backend.type"] = ("hashmap", "rill keeps keyed state on the heap")
        return worked_out

    @property
    def effective_storage(self) -> str:
        return self.storage or ("filesystem" if self.dir else "jobmanager")

    @property
    def directory(self) -> str | None:
        """The checkpoint directory, absolute (None: none configured)."""
        return os.path.abspath(self.dir) if self.dir else None

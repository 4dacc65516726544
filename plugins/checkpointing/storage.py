"""Checkpoint storage (Flink's ``FsCheckpointStorageAccess`` and the JobManager storage).

Layout as Flink's: ``<dir>/<job id>/`` (``<dir>/`` without ``create-subdir``) holds ``shared/``
and ``taskowned/`` (created before the first checkpoint; rill's snapshots are full, so they
stay empty) and a ``chk-<n>/`` per checkpoint with its state files and ``_metadata``
(:mod:`kernel.runtime.checkpointing.format`). State below ``data-inline-threshold`` is inlined into
``_metadata``. ``jobmanager`` storage inlines all state: with a directory only ``_metadata``
goes to ``chk-<n>/``, without one checkpoints live in the JobMaster's memory.

A job whose directory holds checkpoints of an earlier run (rill's job ids are the same for
the same job) continues their numbering and leaves them alone.

A savepoint goes to ``<target>/savepoint-<first 6 hex digits of the job id>-<12 random hex
digits>`` (Flink's name; up to 10 names are tried), always as files (state below the inline
threshold inside ``_metadata``), whatever the storage of checkpoints; its files are named
relative to it, so it can be moved.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from kernel.runtime.checkpointing.format import (
    METADATA_FILE,
    CheckpointMetadata,
    StateHandle,
    encode_metadata,
)
from plugins.checkpointing.options import CheckpointStorageOptions

_CHECKPOINT_DIR = re.compile(r"^chk-(\d+)$")
#: directory names tried for a savepoint (Flink's AbstractFsCheckpointStorageAccess)
SAVEPOINT_NAME_ATTEMPTS = 10


class CheckpointStorage:
    """The coordinator's view (locations, metadata, disposal) and the tasks' view
    (``write_state``) of one job's checkpoints."""

    def __init__(self, options: CheckpointStorageOptions, job_id: str) -> None:
        self.files = options.effective_storage == "filesystem"
        self.inline_threshold = options.inline_threshold
        self.job_id = job_id
        base = options.directory
        self.job_directory = None if base is None else (os.path.join(base, job_id) if options.create_subdir else base)
        self._initialized = False
        #: savepoint id -> its directory
        self._savepoints: dict[int, str] = {}

    def checkpoint_directory(self, checkpoint_id: int) -> str | None:
        """A savepoint's directory, or ``chk-<n>`` of the job (None when checkpoints stay in memory)."""
        savepoint = self._savepoints.get(checkpoint_id)
        if savepoint is not None:
            return savepoint
        if self.job_directory is None:
            return None
        return os.path.join(self.job_directory, f"chk-{checkpoint_id}")

    def existing_checkpoints(self) -> list[int]:
        """Ids of the ``chk-<n>`` directories an earlier run left in the job's directory."""
        if self.job_directory is None or not os.path.isdir(self.job_directory):
            return []
        return sorted(int(match.group(1)) for match in map(_CHECKPOINT_DIR.match, os.listdir(self.job_directory))
                      if match)

    def initialize_location(self, checkpoint_id: int) -> None:
        """Create ``chk-<n>`` (and the job's directories before the first checkpoint)."""
        if self.job_directory is None:
            return
        if not self._initialized:
            for name in ("shared", "taskowned"):
                os.makedirs(os.path.join(self.job_directory, name), exist_ok=True)
            self._initialized = True
        os.makedirs(self.checkpoint_directory(checkpoint_id), exist_ok=True)

    def initialize_savepoint_location(self, checkpoint_id: int, target: str, rng: Any) -> str:
        """Create the directory of savepoint ``checkpoint_id`` under ``target`` (``rng``: a
        seeded random.Random for its name); its path."""
        target = os.path.abspath(target)
        os.makedirs(target, exist_ok=True)
        for _ in range(SAVEPOINT_NAME_ATTEMPTS):
            path = os.path.join(target, f"savepoint-{self.job_id[:6]}-{rng.getrandbits(48):012x}")
            try:
                os.mkdir(path)
            except FileExistsError:
                continue
            self._savepoints[checkpoint_id] = path
            return path
        raise OSError(f"Failed to create savepoint directory at {target}")

    # -- the tasks' view ----------------------------------------------------------------------

    def write_state(self, checkpoint_id: int, name: str, data: bytes, key_groups: list[tuple[int, int, int]],
                    operator_state: tuple[int, int] | None,
                    channel_state: tuple[int, int] | None = None, location: str = "") -> StateHandle:
        """``location``: a savepoint's directory, named by the barrier (a copy of this storage
        in a TaskExecutor process does not know the savepoints triggered after it was made)."""
        frames = dict(size=len(data), key_groups=key_groups, operator_state=operator_state,
                      channel_state=channel_state)
        directory = location or self.checkpoint_directory(checkpoint_id)
        files = self.files or bool(location) or checkpoint_id in self._savepoints
        if not files or directory is None or len(data) < self.inline_threshold:
            return StateHandle(data=data, **frames)
        with open(os.path.join(directory, name), "xb") as stream:
            stream.write(data)
        return StateHandle(file=name, **frames)

    # -- completed checkpoints ----------------------------------------------------------------

    def write_metadata(self, metadata: CheckpointMetadata) -> str:
        """Write ``_metadata``; the checkpoint's external pointer (its directory, "" in memory)."""
        directory = self.checkpoint_directory(metadata.checkpoint_id)
        if directory is None:
            return ""
        with open(os.path.join(directory, METADATA_FILE), "xb") as stream:
            stream.write(encode_metadata(metadata))
        return directory

    def discard(self, checkpoint_id: int) -> None:
        """Delete a checkpoint's directory (subsumed, aborted, or not retained), or an aborted
        savepoint's."""
        directory = self.checkpoint_directory(checkpoint_id)
        self._savepoints.pop(checkpoint_id, None)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def release_job_directory(self) -> None:
        """No checkpoint is retained: remove the job's directories if nothing else is there."""
        if self.job_directory is None:
            return
        for name in ("shared", "taskowned"):
            path = os.path.join(self.job_directory, name)
            if os.path.isdir(path) and not os.listdir(path):
                os.rmdir(path)
        if os.path.isdir(self.job_directory) and not os.listdir(self.job_directory):
            os.rmdir(self.job_directory)


"""Opening a completed checkpoint or savepoint by its pointer, as a restore (``rill run -s``)
or ``rill sql --checkpoint`` names it: the directory (``chk-<n>``, ``savepoint-...``) or its
``_metadata`` file (Flink accepts either).

Reading goes no further than the directory: ``_metadata`` and every state file must be a
regular file right inside it — never a symbolic link, never a name with a path in it — and a
state file must have exactly the size ``_metadata`` gives it. ``_metadata`` is read only up
to :data:`MAX_METADATA_BYTES`, and what it says is checked before anything relies on it:
the format version, parallelisms, subtask indexes, key groups within the max parallelism,
and frames within their state's bytes. Whatever fails is a :class:`CheckpointFormatError`
naming the pointer.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from kernel.runtime.checkpointing.format import (
    FORMAT_VERSION,
    METADATA_FILE,
    CheckpointFormatError,
    CheckpointMetadata,
    StateHandle,
    decode_metadata,
)

#: the largest ``_metadata`` read (inline state is at most 1 MB per operator subtask)
MAX_METADATA_BYTES = 256 << 20
#: Flink's upper bound of the max parallelism (key groups)
UPPER_BOUND_MAX_PARALLELISM = 32768


@dataclass(frozen=True)
class CompletedCheckpointPointer:
    """A checkpoint or savepoint on disk: its directory and what its ``_metadata`` says."""

    directory: str
    metadata: CheckpointMetadata


def _open_regular(path: str, where: str) -> tuple[int, int]:
    """A descriptor of the regular file ``path`` (a symbolic link is refused) and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise CheckpointFormatError(f"{where} does not exist") from None
    except OSError as exc:
        if os.path.islink(path):
            raise CheckpointFormatError(f"{where} is a symbolic link: a checkpoint's files are read only "
                                        "when they are regular files inside its directory") from None
        raise CheckpointFormatError(f"{where} cannot be read: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise CheckpointFormatError(f"{where} is not a regular file")
    return fd, info.st_size


def _read(fd: int, size: int) -> bytes:
    with os.fdopen(fd, "rb") as stream:
        return stream.read(size)


def resolve(pointer: str) -> CompletedCheckpointPointer:
    """Open the checkpoint or savepoint ``pointer`` names (its directory or ``_metadata``)."""
    path = os.path.abspath(pointer)
    if os.path.islink(path):
        raise CheckpointFormatError(f"{pointer} is a symbolic link: name the checkpoint's directory itself")
    if os.path.isdir(path):
        directory = path
    elif os.path.basename(path) == METADATA_FILE and os.path.isdir(os.path.dirname(path)):
        directory = os.path.dirname(path)
    elif not os.path.exists(path):
        raise CheckpointFormatError(f"{pointer} does not exist")
    else:
        raise CheckpointFormatError(f"{pointer} is neither a checkpoint or savepoint directory nor its "
                                    f"{METADATA_FILE} file")
    where = os.path.join(pointer, METADATA_FILE) if directory == path else pointer
    metadata_path = os.path.join(directory, METADATA_FILE)
    if not os.path.lexists(metadata_path):
        raise CheckpointFormatError(f"{pointer} has no {METADATA_FILE}: it is not a completed checkpoint or savepoint")
    fd, size = _open_regular(metadata_path, where)
    if size > MAX_METADATA_BYTES:
        os.close(fd)
        raise CheckpointFormatError(f"{where} has {size} bytes, more than a checkpoint's metadata may have "
                                    f"({MAX_METADATA_BYTES} bytes)")
    metadata = decode_metadata(_read(fd, size), where)
    validate(metadata, where)
    return CompletedCheckpointPointer(directory, metadata)


def validate(metadata: CheckpointMetadata, where: str) -> None:
    """Check what the metadata says before anything relies on it."""
    if metadata.format_version < 1:
        raise CheckpointFormatError(f"{where} has checkpoint format version {metadata.format_version}; rill "
                                    f"writes versions 1 to {FORMAT_VERSION}")
    if metadata.kind not in ("checkpoint", "savepoint"):
        raise CheckpointFormatError(f"{where} is of an unknown kind {metadata.kind!r}")
    for operator in metadata.operators:
        name = f"{where}: operator {operator.operator_id}"
        if not 1 <= operator.max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            raise CheckpointFormatError(f"{name} has max parallelism {operator.max_parallelism} (1 to "
                                        f"{UPPER_BOUND_MAX_PARALLELISM})")
        if not 1 <= operator.parallelism <= operator.max_parallelism:
            raise CheckpointFormatError(f"{name} has parallelism {operator.parallelism} (1 to its max parallelism "
                                        f"{operator.max_parallelism})")
        seen = set()
        for subtask in operator.subtasks:
            if not 0 <= subtask.subtask < operator.parallelism or subtask.subtask in seen:
                raise CheckpointFormatError(f"{name} has state of subtask {subtask.subtask} (parallelism "
                                            f"{operator.parallelism})")
            seen.add(subtask.subtask)
            if subtask.state is not None:
                _validate_handle(subtask.state, operator.max_parallelism, f"{name}, subtask {subtask.subtask}")


def _validate_handle(handle: StateHandle, max_parallelism: int, where: str) -> None:
    if (handle.file is None) == (handle.data is None):
        raise CheckpointFormatError(f"{where}: a state handle must have either a file or inline data")
    if handle.data is not None and handle.size != len(handle.data):
        raise CheckpointFormatError(f"{where}: inline state of {len(handle.data)} bytes is said to have {handle.size}")
    if handle.file is not None and (handle.file in ("", ".", "..") or "/" in handle.file or "\\" in handle.file
                                    or "\0" in handle.file):
        raise CheckpointFormatError(f"{where}: state file {handle.file!r} is not a plain file name")
    frames = [(offset, length) for _, offset, length in handle.key_groups]
    if handle.operator_state is not None:
        frames.append(handle.operator_state)
    for offset, length in frames:
        if offset < 0 or length < 0 or offset + length > handle.size:
            raise CheckpointFormatError(f"{where}: a frame at {offset} of {length} bytes lies outside its "
                                        f"{handle.size} bytes of state")
    for group, _, _ in handle.key_groups:
        if not 0 <= group < max_parallelism:
            raise CheckpointFormatError(f"{where}: key group {group} is outside 0 to {max_parallelism - 1}")


def read_state_file(directory: str, handle: StateHandle) -> bytes:
    """The bytes of a state handle's file in ``directory`` (checked as the module says)."""
    if handle.file is None or "/" in handle.file or handle.file in ("", ".", ".."):
        raise CheckpointFormatError(f"state file {handle.file!r} is not a plain file name")
    path = os.path.join(directory, handle.file)
    fd, size = _open_regular(path, path)
    if size != handle.size:
        os.close(fd)
        raise CheckpointFormatError(f"{path} has {size} bytes; the checkpoint's metadata says {handle.size}")
    return _read(fd, size)

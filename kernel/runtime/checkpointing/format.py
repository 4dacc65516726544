"""The format of checkpoints, version 1: msgspec Structs encoded as MessagePack, user values
pickled inside them.

A completed checkpoint is a directory ``chk-<n>`` holding ``_metadata`` and one state file per
operator subtask that has state (Flink's layout). ``_metadata`` is :data:`MAGIC` followed by a
:class:`CheckpointMetadata`: per operator (by operator ID) its parallelism, max parallelism and,
per subtask, a :class:`StateHandle` — a file in the checkpoint directory (a relative name, so
a checkpoint can be moved) or the bytes themselves when they are smaller than
``execution.checkpointing.data-inline-threshold`` (or the storage keeps no files).

A state file (or inline blob) is a sequence of frames, each a MessagePack :class:`KeyGroupState`
(the operator's keyed state of one key group: a :class:`StateTable` per state with the pickled
``(key, namespace, value)`` entries), one :class:`OperatorStateFrame` (its operator list
states, e.g. a source's reader position) and — for the head operator of a subtask that took
an unaligned checkpoint — one :class:`ChannelStateFrame` (the in-flight data of its input
channels and output subpartitions, :mod:`kernel.runtime.checkpointing.channel_state`); the handle
lists every frame's offset and length, so a subtask restored with another key-group range
reads only the frames of its key groups.

Compatibility: ``format_version`` says which version wrote it; later versions only add fields
with defaults (never rename or retype one), so every version reads the files of earlier ones,
and a reader refuses a newer format with a clear error. The pickled values name rill's classes
they hold (a TTL state's ``TtlValue``, a ``JavaKey``, a source's splits) by module: a module that
moved is read at its new place (:func:`moved_module`).
"""

from __future__ import annotations

import msgspec

FORMAT_VERSION = 1
MAGIC = b"rill-checkpoint\n"
METADATA_FILE = "_metadata"
#: (old, new) module paths of rill's modules that moved, for pickles written before: a package
#: (ending in ``.``) with every module under it, or one module
MOVED_MODULES = (
    ("kernel.streaming.", "kernel.runtime.streaming."),
    ("kernel.checkpointing.", "kernel.runtime.checkpointing."),
    ("kernel.graph.", "kernel.runtime.graph."),
    *((f"kernel.common.{name}", f"kernel.jvm.{name}")
      for name in ("bridge", "coders", "javavalues", "keybytes", "keyhash", "keyidentity", "unchanged")),
)


def moved_module(module: str) -> str:
    """Where a module a pickle names is now (itself, unless it moved)."""
    for old, new in MOVED_MODULES:
        if module == old or (old.endswith(".") and module.startswith(old)):
            return new + module[len(old):]
    return module


class StateTable(msgspec.Struct, frozen=True, kw_only=True):
    """One keyed state of one key group. ``kind``: value, list, map, reducing, aggregating,
    timers, or internal (an operator's own bookkeeping); ``ttl``: values are ``TtlValue``
    (value, last access time) pairs; ``entries``: pickle of a list of (key, namespace, value)."""

    name: str
    kind: str
    ttl: bool = False
    entries: bytes = b""


class KeyGroupState(msgspec.Struct, frozen=True, kw_only=True):
    key_group: int
    tables: list[StateTable] = []


class OperatorListState(msgspec.Struct, frozen=True, kw_only=True):
    """Flink's operator state: ``split`` elements are divided among subtasks when the
    parallelism changes, ``union`` ones go to every subtask, a ``broadcast`` state (the
    entries of a broadcast state, one copy per subtask) goes whole to each new subtask from
    one old one. ``elements``: pickle of a list."""

    name: str
    mode: str = "split"
    elements: bytes = b""


class OperatorStateFrame(msgspec.Struct, frozen=True, kw_only=True):
    states: list[OperatorListState] = []


class ChannelState(msgspec.Struct, frozen=True, kw_only=True):
    """The in-flight data of one channel: ``kind`` input (input gate ``gate``, channel
    ``index``) or output (produced partition ``gate``, subpartition ``index``); ``elements``:
    the persisted stream elements in order."""

    kind: str
    gate: int
    index: int
    elements: list[bytes] = []


class ChannelStateFrame(msgspec.Struct, frozen=True, kw_only=True):
    channels: list[ChannelState] = []


class StateHandle(msgspec.Struct, frozen=True, kw_only=True):
    """One operator subtask's state: ``file`` (relative to the checkpoint directory) or
    ``data``; ``key_groups`` (key group, offset, length), ``operator_state`` and
    ``channel_state`` (offset, length) locate its frames."""

    file: str | None = None
    data: bytes | None = None
    size: int = 0
    key_groups: list[tuple[int, int, int]] = []
    operator_state: tuple[int, int] | None = None
    channel_state: tuple[int, int] | None = None


class OperatorSubtaskState(msgspec.Struct, frozen=True, kw_only=True):
    """``finished``: the subtask had ended its input when the checkpoint was taken (FLIP-147):
    restored, it reads nothing more."""

    subtask: int
    state: StateHandle | None = None
    finished: bool = False


class OperatorState(msgspec.Struct, frozen=True, kw_only=True):
    operator_id: str
    name: str = ""
    vertex_id: str = ""
    parallelism: int = 1
    max_parallelism: int = 1
    subtasks: list[OperatorSubtaskState] = []


class CheckpointMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """``timestamp``: when it was triggered, ``completed``: when it completed (clock ms)."""

    format_version: int = FORMAT_VERSION
    job_id: str
    job_name: str = ""
    checkpoint_id: int
    kind: str = "checkpoint"
    timestamp: int = 0
    completed: int = 0
    operators: list[OperatorState] = []

    @property
    def state_size(self) -> int:
        return sum(s.state.size for op in self.operators for s in op.subtasks if s.state is not None)


class CheckpointFormatError(Exception):
    """A file is not a rill checkpoint, or one written by a newer rill."""


_encoder = msgspec.msgpack.Encoder()
_metadata_decoder = msgspec.msgpack.Decoder(CheckpointMetadata)
_key_group_decoder = msgspec.msgpack.Decoder(KeyGroupState)
_operator_decoder = msgspec.msgpack.Decoder(OperatorStateFrame)
_channel_decoder = msgspec.msgpack.Decoder(ChannelStateFrame)


def encode(struct: msgspec.Struct) -> bytes:
    return _encoder.encode(struct)


def encode_metadata(metadata: CheckpointMetadata) -> bytes:
    return MAGIC + _encoder.encode(metadata)


def decode_metadata(data: bytes, where: str) -> CheckpointMetadata:
    if not data.startswith(MAGIC):
        raise CheckpointFormatError(f"{where} is not a rill checkpoint's metadata")
    try:
        metadata = _metadata_decoder.decode(data[len(MAGIC):])
    except msgspec.DecodeError as exc:
        raise CheckpointFormatError(f"{where} cannot be read: {exc}") from None
    if metadata.format_version > FORMAT_VERSION:
        raise CheckpointFormatError(f"{where} was written in checkpoint format {metadata.format_version}; this rill "
                                    f"reads formats up to {FORMAT_VERSION}")
    return metadata


def decode_key_group(frame: bytes) -> KeyGroupState:
    return _key_group_decoder.decode(frame)


def decode_operator_state(frame: bytes) -> OperatorStateFrame:
    return _operator_decoder.decode(frame)


def decode_channel_state(frame: bytes) -> ChannelStateFrame:
    return _channel_decoder.decode(frame)

"""FileSink's part files on the local file system (Flink's ``FileWriter``, ``FileWriterBucket``
and ``FileCommitter`` for row formats).

A bucket is a directory under the base path (the bucket assigner names it; the base path
itself for an empty id). A writer has, per bucket, at most one *in-progress* part, written
under the hidden name ``.<part name>.inprogress.<uuid>`` (a fresh uuid per file, as Flink's
local recoverable writer), and *pending* parts: closed, still hidden, waiting to be committed.
A part's name is ``<prefix>-<uuid>-<counter><suffix>``: the uuid is drawn once per bucket of
a writer (from the run's seeded RNG; a uuid already naming a file in the bucket directory is
drawn again) and the counter starts at 0, so a restarted, restored or resumed writer never
reuses a name.

Rolling (:class:`~kernel.datastream.connectors.file_system.RollingPolicy`): before a record
when the part is larger than the part size; at a bucket check (processing time) when the part
has been open for the rollover interval or unwritten for the inactivity interval; before a
checkpoint when the policy says so (on-checkpoint: always; default: when too large); and at
the end of input. :meth:`FileWriter.prepare_commit` hands the pending parts over as
committables ``(hidden path, final path)``; :func:`commit` renames one — safe to repeat,
never overwriting a file.

State (:meth:`FileWriter.snapshot_state`): per bucket its id, directory and in-progress part
(hidden path, final path, length, creation time). Restored, the first ``length`` bytes of the
part are copied into a fresh hidden file that the writer continues: what was written after
the checkpoint is dropped. The old file is removed only once the next checkpoint completes
(until then a second failure restores from it again), and an attempt still running on a
lost TaskExecutor that keeps writing to it cannot disturb the new one (Flink's local writer
truncates the file in place instead).
"""

from __future__ import annotations

import os
import uuid
from random import Random
from typing import Any, Callable

#: (hidden path, final path): a pending part; (hidden path, None): a file to clean up
Committable = tuple[str, "str | None"]


class PartFile:
    """An in-progress part: an open hidden file and what the rolling policy looks at."""

    __slots__ = ("final", "hidden", "stream", "size", "created", "last_write")

    def __init__(self, final: str, hidden: str, stream: Any, size: int, created: int) -> None:
        self.final = final
        self.hidden = hidden
        self.stream = stream
        self.size = size
        self.created = created
        self.last_write = created


def random_uuid(rng: Random) -> str:
    """A version-4 UUID drawn from a seeded RNG."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _hidden_name(final: str, rng: Random) -> str:
    directory, name = os.path.split(final)
    while True:
        candidate = os.path.join(directory, f".{name}.inprogress.{random_uuid(rng)}")
        if not os.path.exists(candidate):
            return candidate


def commit(committable: Committable) -> None:
    """Make a pending part visible: rename its hidden file to its final name. Done already
    (the hidden file gone, the final one there) is fine; a final name taken by another file
    or a pending file that vanished is an error. A file to clean up is removed."""
    hidden, final = committable
    if final is None:
        if os.path.exists(hidden):
            os.remove(hidden)
    elif os.path.exists(hidden):
        if os.path.exists(final):
            raise FileExistsError(f"cannot commit {hidden}: {final} exists already")
        os.rename(hidden, final)
    elif not os.path.exists(final):
        raise FileNotFoundError(f"cannot commit {final}: its pending file {hidden} does not exist")


def discard(committable: Committable) -> None:
    """Remove a pending part that will never be committed."""
    if committable[1] is not None and os.path.exists(committable[0]):
        os.remove(committable[0])


class FileWriterBucket:
    """One bucket of a writer: its part counter, in-progress part and pending parts."""

    def __init__(self, bucket_id: str, path: str, prefix: str, suffix: str, rng: Random) -> None:
        self.bucket_id = bucket_id
        self.path = path
        self.prefix = prefix
        self.suffix = suffix
        os.makedirs(path, exist_ok=True)
        self.rng = rng
        self.unique_id = self._fresh_id(rng)
        self.counter = 0
        self.in_progress: PartFile | None = None
        self.pending: list[Committable] = []  # and the files a resumed part was copied from

    def _fresh_id(self, rng: Random) -> str:
        names = os.listdir(self.path)
        while True:
            unique_id = random_uuid(rng)
            stem = f"{self.prefix}-{unique_id}-"
            if not any(name.startswith((stem, "." + stem)) for name in names):
                return unique_id

    def open_part(self, now: int) -> PartFile:
        self.close_part()
        final = os.path.join(self.path, f"{self.prefix}-{self.unique_id}-{self.counter}{self.suffix}")
        self.counter += 1
        hidden = _hidden_name(final, self.rng)
        self.in_progress = PartFile(final, hidden, open(hidden, "xb"), 0, now)
        return self.in_progress

    def resume_part(self, final: str, hidden: str, length: int, created: int) -> None:
        """Continue a checkpointed in-progress part: its first ``length`` bytes in a new file
        (a part resumed while one is open — restored state of several subtasks merged into
        one — becomes pending)."""
        if not os.path.exists(hidden) or os.path.getsize(hidden) < length:
            state = "missing" if not os.path.exists(hidden) else f"shorter than the {length} bytes checkpointed"
            raise FileNotFoundError(f"cannot resume the in-progress part file {hidden}: it is {state} (was the "
                                    "part committed after this checkpoint or savepoint was taken?)")
        resumed = _hidden_name(final, self.rng)
        with open(hidden, "rb") as source, open(resumed, "xb") as target:
            remaining = length
            while remaining > 0:
                block = source.read(min(remaining, 1 << 20))
                if not block:
                    break
                target.write(block)
                remaining -= len(block)
        self.pending.append((hidden, None))
        if self.in_progress is not None:
            self.pending.append((resumed, final))
            return
        self.in_progress = PartFile(final, resumed, open(resumed, "ab"), length, created)

    def close_part(self) -> None:
        part = self.in_progress
        if part is not None:
            part.stream.close()
            self.pending.append((part.hidden, part.final))
            self.in_progress = None


class FileWriter:
    """A FileSink's writer for one subtask: records become lines (``encode(values) -> bytes``)
    in the part files of their buckets."""

    def __init__(self, sink: Any, encode: Callable[[list], bytes], encode_one: Callable[[Any], bytes],
                 rng: Random) -> None:
        self.base_path = sink.base_path
        config = sink.output_file_config
        self.prefix, self.suffix = config.part_prefix, config.part_suffix
        self.policy = sink.rolling_policy
        self.assigner = sink.bucket_assigner
        self.encode = encode
        self.encode_one = encode_one
        self.rng = rng
        self.buckets: dict[str, FileWriterBucket] = {}

    def _bucket(self, bucket_id: str) -> FileWriterBucket:
        bucket = self.buckets.get(bucket_id)
        if bucket is None:
            path = os.path.join(self.base_path, bucket_id) if bucket_id else self.base_path
            bucket = self.buckets[bucket_id] = FileWriterBucket(bucket_id, path, self.prefix, self.suffix, self.rng)
        return bucket

    def write(self, values: list, now: int) -> None:
        bucket = self._bucket(self.assigner.bucket_id(now))
        part = bucket.in_progress
        limit = self.policy.part_size
        data = self.encode(values)
        if part is not None and (limit is None or part.size + len(data) <= limit):
            part.stream.write(data)  # no record finds the part larger than the part size
            part.size += len(data)
            part.last_write = now
            return
        for value in values:
            if part is None or (limit is not None and part.size > limit):
                part = bucket.open_part(now)
            line = self.encode_one(value)
            part.stream.write(line)
            part.size += len(line)
            part.last_write = now

    def on_processing_time(self, now: int) -> None:
        """A bucket check: roll the parts the policy finds too old or inactive."""
        rollover, inactivity = self.policy.rollover_interval, self.policy.inactivity_interval
        for bucket in self.buckets.values():
            part = bucket.in_progress
            if part is not None and ((rollover is not None and now - part.created >= rollover)
                                     or (inactivity is not None and now - part.last_write >= inactivity)):
                bucket.close_part()

    def prepare_commit(self, flush: bool) -> list[Committable]:
        """Before a checkpoint (``flush``: at the end of input, every open part closes): the
        pending parts, handed over for committing."""
        committables: list[Committable] = []
        for bucket in self.buckets.values():
            part = bucket.in_progress
            if part is not None and (flush or self.policy.rolls_on_checkpoint(part.size)):
                bucket.close_part()
            committables.extend(bucket.pending)
            bucket.pending = []
        return committables

    def snapshot_state(self) -> list[dict[str, Any]]:
        states = []
        for bucket in self.buckets.values():
            part = bucket.in_progress
            in_progress = None
            if part is not None:
                part.stream.flush()
                in_progress = {"final": part.final, "hidden": part.hidden, "length": part.size,
                               "created": part.created}
            states.append({"bucket_id": bucket.bucket_id, "path": bucket.path, "in_progress": in_progress})
        return states

    def initialize_state(self, states: list[dict[str, Any]]) -> None:
        """Restore buckets with their in-progress parts (buckets get fresh uuids)."""
        for state in states:
            part = state["in_progress"]
            if part is None:
                continue
            bucket = self.buckets.get(state["bucket_id"])
            if bucket is None:
                bucket = self.buckets[state["bucket_id"]] = FileWriterBucket(
                    state["bucket_id"], state["path"], self.prefix, self.suffix, self.rng)
            bucket.resume_part(part["final"], part["hidden"], part["length"], part["created"])

    def close(self) -> None:
        """Close the open files (what they hold stays hidden)."""
        for bucket in self.buckets.values():
            if bucket.in_progress is not None:
                bucket.in_progress.stream.close()

    def close_parts(self) -> None:
        """The end of input: every open part closes and is pending."""
        for bucket in self.buckets.values():
            bucket.close_part()

    def abandon(self) -> list[Committable]:
        """Everything not yet handed over (open and pending parts), closed."""
        self.close_parts()
        parts: list[Committable] = []
        for bucket in self.buckets.values():
            parts.extend(bucket.pending)
            bucket.pending = []
        return parts

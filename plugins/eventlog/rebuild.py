"""Runs as their segments hold them: what ``rill log rebuild`` writes into a new log, and what
``rill log salvage`` takes for the runs DuckDB can no longer read.

Every segment of a log is read — waiting, kept after ingest, or set aside as unreadable — and
its frames grouped by run. A run is *complete* when its batches follow one another from seq 0
without a gap and none of its segments has a frame that fails its checksum (a torn last frame
is where a crash stopped the run: what came before is whole). Only complete runs are rebuilt;
the others are named with what is missing. A complete run without its end is a run still going
or one whose process died: ``running``, or ``crashed`` once its process is gone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.eventtables import SCHEMA
from plugins.eventlog.ingest import apply_frames, transaction
from plugins.eventlog.migrations import migrate, stored_columns
from plugins.eventlog.spool import (
    KEPT,
    BatchSpooled,
    RunClosed,
    SpoolOpened,
    SpoolRead,
    is_segment,
    read_frames,
    spool_dirs,
)
from plugins.eventlog.store import process_alive

UNREADABLE = ".unreadable"


@dataclass
class SegmentRun:
    """One run as its segments hold it."""

    opened: SpoolOpened
    batches: dict[int, BatchSpooled] = field(default_factory=dict)  # by first seq
    closed: RunClosed | None = None
    #: what keeps the run from being complete, as read from its segments
    damage: list[str] = field(default_factory=list)
    #: some of its segments were ingested before (kept): the log had the run
    ingested: bool = False

    @property
    def run_id(self) -> str:
        return self.opened.run_id

    @property
    def job_name(self) -> str:
        return self.opened.run.job_name

    def chain(self) -> tuple[list[BatchSpooled], int]:
        """The batches that follow one another from seq 0, and the events they hold."""
        chained, events = [], 0
        for first in sorted(self.batches):
            batch = self.batches[first]
            if batch.events_total <= events:
                continue
            if batch.first_seq != events:
                break
            chained.append(batch)
            events = batch.events_total
        return chained, events

    @property
    def events(self) -> int:
        return self.chain()[1]

    @property
    def problems(self) -> list[str]:
        chained, events = self.chain()
        problems = list(self.damage)
        later = [first for first in self.batches if first > events]
        if later:
            problems.append(f"events from seq {events} to {min(later) - 1} are in no segment left")
        elif not self.batches or min(self.batches) > 0:
            problems.append("its first segment is gone (expired or removed)")
        return problems

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def status(self) -> str:
        if self.closed is not None:
            return self.closed.status
        run = self.opened.run
        if run.host == os.uname().nodename and not process_alive(run.pid, run.pid_start):
            return "crashed"
        return "running"


def segment_files(log: Path) -> list[Path]:
    """Every segment of ``log``: waiting, kept, or set aside as unreadable."""
    found = []
    for directory in spool_dirs(log):
        for place in (directory, directory / KEPT):
            try:
                names = sorted(os.listdir(place))
            except OSError:
                continue
            found.extend(place / name for name in names
                         if is_segment(name) or name.endswith(UNREADABLE) and is_segment(name[: -len(UNREADABLE)]))
    return found


def segment_runs(log: Path) -> tuple[dict[str, SegmentRun], list[str]]:
    """The runs the segments of ``log`` hold, by run id, and the segments that hold none
    (with why). A segment belongs to the log whose directories it is in, whatever path it
    names (a log moved with its segments is rebuilt from them)."""
    runs: dict[str, SegmentRun] = {}
    unusable = []
    for path in segment_files(log):
        result = SpoolRead(None)
        try:
            frames = list(read_frames(path, result))
        except OSError as exc:
            unusable.append(f"{path}: {exc.strerror or exc}")
            continue
        opened = frames[0] if frames and isinstance(frames[0], SpoolOpened) else None
        if opened is None:
            unusable.append(f"{path}: its first frame cannot be read{': ' + result.problem if result.problem else ''}")
            continue
        run = runs.get(opened.run_id)
        if run is None:
            run = runs[opened.run_id] = SegmentRun(opened)
        run.ingested = run.ingested or path.parent.name == KEPT
        if result.problem:
            run.damage.append(f"segment {path}: {result.problem}")
        for frame in frames[1:]:
            if isinstance(frame, BatchSpooled) and frame.count:
                run.batches.setdefault(frame.first_seq, frame)
            elif isinstance(frame, RunClosed):
                run.closed = frame
    return runs, unusable


def write_runs(con: Any, runs: list[SegmentRun]) -> None:
    """Store complete runs from their segments through ``con``, a connection whose current
    database is a log (one transaction per run); runs whose process is gone are ``crashed``."""
    migrate(con, "the new log")
    stored = stored_columns(con)
    for run in runs:
        chained, _ = run.chain()
        frames: list[Any] = [*chained, *([run.closed] if run.closed is not None else [])]
        transaction(con, lambda: apply_frames(con, run.opened, frames, stored))
        if run.closed is None and run.status == "crashed":
            con.execute(f"UPDATE {SCHEMA}.runs SET status = 'crashed', ended_at = updated_at WHERE run_id = ?",
                        [run.run_id])

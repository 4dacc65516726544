"""Child processes emitting events into an event log (``child_emitter.py``), for tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

CHILD = str(Path(__file__).with_name("child_emitter.py"))
#: the checkout's root, first on the child's import path: run as a script from tests/, it would
#: otherwise take the test folders tests/kernel, tests/plugins and tests/replay for rill's packages
#: (an editable install finds rill after the directories on the path)
ROOT = str(Path(__file__).resolve().parent.parent)


def start_child(path, name, count, flush="1 s", *extra):
    """A child_emitter.py process, once its run's first batch went through the writer."""
    path_env = os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])
    child = subprocess.Popen(
        [sys.executable, CHILD, str(path), name, str(count), flush, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": path_env},
    )
    for line in child.stdout:
        if line.strip() == "started":
            return child
    raise AssertionError(child.stderr.read())


def _report(line: str, taken: list[tuple[int, int]], flushed: list[int]) -> None:
    word, *seqs = line.split()
    if word == "taking":
        taken.append((int(seqs[0]), int(seqs[1])))
    elif word == "flushed":
        flushed.append(int(seqs[0]))


def kill_after_flushes(child, flushes: int) -> tuple[list[tuple[int, int]], list[int]]:
    """SIGKILL the child right after it reported ``flushes`` batches the writer finished;
    returns the batches it handed to the writer (first, last seq) and the last seq of each
    batch the writer finished, as far as it reported them before it died."""
    taken: list[tuple[int, int]] = []
    flushed: list[int] = []
    for line in child.stdout:
        _report(line, taken, flushed)
        if len(flushed) == flushes:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait()
    for line in child.stdout:
        _report(line, taken, flushed)
    return taken, flushed

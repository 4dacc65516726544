"""Tracebacks as users see them: the frames of their own code, rill's frames only with ``--debug``.

A failed task records the whole traceback (the event log keeps it); what the terminal shows is
filtered here. Frames of rill's packages (``kernel``, ``plugins``, ``replay``) are left out of
every traceback in the text; a traceback left without any frame (the error came from rill
itself) keeps only its exception line.
"""

from __future__ import annotations

import os
import re

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RILL_PACKAGES = tuple(os.path.join(_ROOT, package) + os.sep for package in ("kernel", "plugins", "replay"))
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line \d+')
_HEADER = "Traceback (most recent call last):"


def debugging() -> bool:
    """``--debug`` was given (or ``RILL_DEBUG`` is set)."""
    return os.environ.get("RILL_DEBUG", "") not in ("", "0")


def describe(exc: BaseException) -> str:
    """``Type: message`` as Python's last traceback line has it (``Type`` alone without a message;
    ``<exception str() failed>`` as the message of one whose ``str()`` raises, e.g. an error of
    a JVM that is gone)."""
    try:
        message = str(exc)
    except Exception:
        message = "<exception str() failed>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def is_rill_frame(filename: str) -> bool:
    return os.path.abspath(filename).startswith(RILL_PACKAGES)


def user_frames(text: str) -> str:
    """``text`` (a failure report holding formatted tracebacks) without rill's own frames."""
    out: list[str] = []
    header: int | None = None  # where the current traceback's header is, while none of its frames is kept
    skipping = False  # inside a frame of rill (its source and caret lines follow the File line)
    for line in text.splitlines(keepends=True):
        frame = _FRAME.match(line)
        if frame:
            skipping = is_rill_frame(frame["file"])
            if skipping:
                continue
            header = None
        elif skipping and line.startswith("    "):
            continue
        else:
            skipping = False
            if line.startswith(_HEADER):
                header = len(out)
            elif header is not None:
                del out[header]
                header = None
        out.append(line)
    return "".join(out)

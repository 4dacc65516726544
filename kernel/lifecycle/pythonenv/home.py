"""``$RILL_HOME``: where rill keeps what outlives a run (default ``./.rill``)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = ".rill"


def rill_home() -> Path:
    return Path(os.environ.get("RILL_HOME", DEFAULT_HOME)).expanduser()

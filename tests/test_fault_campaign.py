"""scripts/fault_campaign.py: a small campaign, run as a user runs it, must find nothing wrong."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_small_campaign_commits_exactly_once_and_never_hangs():
    done = subprocess.run(
        [sys.executable, "scripts/fault_campaign.py", "--runs", "12", "--seed", "1", "--duration", "4 min"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"jobs: staged 4 \([\d,]+ lines committed\), bounded 4 \([\d,]+ lines committed\), "
                     r"unbounded 4 \([\d,]+ lines committed\); unbounded runs 240 s of clock time", out), out
    # each bounded run commits the fault-free run's 1,620 lines, each staged one its 600 results
    assert "staged 4 (2,400 lines committed), bounded 4 (6,480 lines committed)" in out
    assert re.search(r"^hangs: 0  duplicates: 0  losses: 0  wrong outputs: 0  lost events: 0  failed jobs: \d+  "
                     r"restarts: [1-9]\d*$", out, re.M), out
    assert "restores beyond the interval plus twice the longest checkpoint and 100 ms: 0;" in out
    assert re.search(r"re-processed input after a restore \(failures detected at once; interval 1000 ms\): median "
                     r"\d+ ms", out), out

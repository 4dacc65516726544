"""scripts/fault_campaign.py: a small campaign, run as a user runs it, must find nothing wrong."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def test_one_run_alone_counts_what_its_attempt_read_not_what_an_earlier_attempt_did():
    """Run 565 of seed 20261129 (bounded): Window raises at 1.7 s, the job restarts at 2.7 s from
    checkpoint 2 (triggered at 1.657 s), taskexecutor-1 is killed at 3 s before the next trigger
    (3.657 s). Checkpoint 3 expires at 13.657 s and the job restores checkpoint 2 again: what the
    failed attempt read from it before the kill is 300 ms (2.7-3 s), not 1,343 ms from checkpoint
    2's trigger (the 43 ms before the raise were counted at the raise). The restarts that deploy
    to the dead TaskExecutor again begin after the kill, and their tasks never all run: not
    bounded."""
    done = subprocess.run(
        [sys.executable, "scripts/fault_campaign.py", "--seed", "20261129", "--only", "565"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"^fault campaign: 1 runs \(seed 20261129, only run 565\) in [\d.]+ s wall, [\d.]+ s CPU, "
                     r"\d+ worker\(s\); jobs: staged 0 \(0 lines committed\), bounded 1 \(1,620 lines committed\), "
                     r"unbounded 0 \(0 lines committed\); unbounded runs 300 s of clock time; "
                     r"faults: delay 1, kill 1, raise 1$", out, re.M), out
    assert "hangs: 0  duplicates: 0  losses: 0  wrong outputs: 0  lost events: 0  failed jobs: 0  restarts: 5\n" in out
    assert ("re-processed input after a restore (failures detected at once; interval 1000 ms): median 43 ms, "
            "p99 43 ms, max 43 ms over 1 restarts\n") in out
    assert ("re-processed input after a restore (faults detected later, up to the fault; interval 1000 ms): "
            "median 300 ms, p99 300 ms, max 300 ms over 1 restarts\n") in out
    assert ("restores beyond the interval plus twice the longest checkpoint and 100 ms: 0; not bounded (a checkpoint "
            "failed first, the tasks were not all running by the fault, or the fault began before the checkpoint or "
            "the attempt): 3\n") in out


def test_a_run_index_below_zero_is_refused():
    done = subprocess.run([sys.executable, "scripts/fault_campaign.py", "--only", "-1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == "fault_campaign.py: error: --only -1: a run's index is 0 or more"

"""scripts/bench_floors.py, run as a user runs it: its three sides agree and it prints each."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_floors_run_the_loops_work_and_print_every_side():
    done = subprocess.run([sys.executable, "scripts/bench_floors.py", "--records", "30000", "--rounds", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for workload in ("(b) rolling keyed reduce", "(d) window word count"):
        block = done.stdout.split(workload + "\n", 1)[1]
        sides = re.findall(r"^  (\w+) +[\d.]+ s wall \( *[\d.]+ s cpu\) +([\d.]+)x the loop's time", block, re.M)[:3]
        assert [side for side, _ in sides] == ["loop", "passes", "unchecked"], done.stdout
        assert sides[0][1] == "1.00"

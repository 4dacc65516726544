"""How much of an event log `rill log salvage` gives back when one block of it is damaged.

Records a log of six runs with the real `rill` command (the examples, simulated, some at the
debug event level), then for each block of the DuckDB file — the three 4 KiB headers and every
256 KiB block — a fresh copy of the log (with its segment directory) gets 64 bytes flipped at
the block's start, `rill log check` is asked whether it sees the damage, and `rill log salvage`
writes what it can into a new file. Each run of the new file is compared with the run as it
was recorded (its runs row and every event: kind, seq, time, payload): recovered when equal,
wrong when present but different. Prints one line per block and the totals.

    python scripts/log_corruption_sweep.py [--blocks N] [--without-segments]

``--blocks N`` sweeps N blocks spread over the file (the headers first) instead of all of
them; ``--without-segments`` removes the kept segments from each copy first, so what DuckDB
alone can still give back is measured.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
HEADERS = (0, 4096, 8192)  # the main header and the two database headers
HEADER_BYTES = 3 * 4096
BLOCK = 262_144
FLIPPED = 64
JOBS = [
    ("wordcount.py", []), ("window_wordcount.py", []), ("wordcount.py", ["--set", "rill.events.level=debug"]),
    ("window_wordcount.py", ["--set", "rill.events.level=debug"]), ("wordcount.py", ["--seed", "7"]),
    ("window_wordcount.py", ["--set", "rill.events.level=debug", "--seed", "3"]),
]


def rill(home: Path, log: Path, command: str, *args: str) -> subprocess.CompletedProcess:
    """``rill COMMAND --set eventlog.path=LOG ARGS...`` with ``RILL_HOME=home``."""
    env = {**os.environ, "RILL_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kernel.cli.main", *command.split(), "--set", f"eventlog.path={log}",
                           *args], capture_output=True, text=True, cwd=home.parent, env=env, timeout=600)


def record(home: Path, log: Path) -> None:
    for job, options in JOBS:
        done = rill(home, log, "run", "--clock", "simulated", "--quiet", *options, str(ROOT / "examples" / job))
        if done.returncode != 0:
            raise SystemExit(f"recording {job} failed: {done.stderr}")
    listed = rill(home, log, "runs")  # stores the runs in the log (their segments are kept)
    if listed.returncode != 0:
        raise SystemExit(f"rill runs failed: {listed.stderr}")


def fingerprints(path: Path) -> dict[str, str]:
    """run id -> a hash of its runs row and every event it has."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{path}' AS log (READ_ONLY)")
    try:
        found = {}
        for run_id, *row in con.execute(
            "SELECT run_id, job_name, status, clock, seed, events, clock_start, clock_end, config, metadata "
            "FROM log.rill.runs ORDER BY run_id"
        ).fetchall():
            digest = hashlib.sha256(repr(row).encode())
            for event in con.execute(
                "SELECT seq, time, kind, payload FROM log.rill.events WHERE run_id = ? ORDER BY seq", [run_id]
            ).fetchall():
                digest.update(repr(event).encode())
            found[run_id] = digest.hexdigest()
        return found
    finally:
        con.close()


def targets(size: int, wanted: int | None) -> list[tuple[str, int]]:
    every = [(f"header@{offset}", offset) for offset in HEADERS]
    every += [(f"block {block}", HEADER_BYTES + block * BLOCK) for block in range((size - HEADER_BYTES) // BLOCK)]
    if wanted is None or wanted >= len(every):
        return every
    step = len(every) / wanted
    return [every[int(i * step)] for i in range(wanted)]


def flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        data = file.read(FLIPPED)
        file.seek(offset)
        file.write(bytes(byte ^ 0xFF for byte in data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=None, help="sweep this many blocks spread over the file")
    parser.add_argument("--without-segments", action="store_true", help="remove the kept segments from each copy")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rill-sweep-"))
    try:
        home = work / "log" / ".rill"
        home.mkdir(parents=True)
        log = home / "rill.duckdb"
        record(home, log)
        reference = fingerprints(log)
        pristine = work / "pristine"
        shutil.copytree(home, pristine)
        size = log.stat().st_size
        print(f"log: {len(reference)} runs, {size:,} bytes ({(size - HEADER_BYTES) // BLOCK} blocks of {BLOCK:,})"
              f"{', without its segments' if options.without_segments else ''}")
        totals = {"targets": 0, "detected": 0, "recovered": 0, "wrong": 0, "runs": 0}
        for label, offset in targets(size, options.blocks):
            shutil.rmtree(home)  # the log and its segments as recorded, where they were recorded
            shutil.copytree(pristine, home)
            if options.without_segments:
                shutil.rmtree(home / "rill.duckdb.spool" / "kept")
            flip(log, offset)
            checked = rill(home, log, "log check")
            out = work / "salvaged.duckdb"
            out.unlink(missing_ok=True)
            salvaged = rill(home, log, "log salvage", str(out))
            found = fingerprints(out) if salvaged.returncode == 0 and out.exists() else {}
            recovered = sum(1 for run_id, digest in found.items() if reference.get(run_id) == digest)
            wrong = sum(1 for run_id, digest in found.items() if reference.get(run_id) != digest)
            detected = checked.returncode != 0
            totals["targets"] += 1
            totals["detected"] += detected
            totals["recovered"] += recovered
            totals["wrong"] += wrong
            totals["runs"] += len(reference)
            print(f"{label:>12}: check {'detects it' if detected else 'sees nothing'}, salvage exit "
                  f"{salvaged.returncode}, runs recovered {recovered}/{len(reference)}, runs wrong {wrong}")
        share = 100 * totals["recovered"] / totals["runs"] if totals["runs"] else 0.0
        print(f"blocks: {totals['targets']}, damage detected: {totals['detected']}; runs recovered: "
              f"{totals['recovered']} of {totals['runs']} ({share:.1f} %); runs wrong: {totals['wrong']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

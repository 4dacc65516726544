"""Fault campaign: many seeded simulated runs of a bounded job, each with random faults.

    python scripts/fault_campaign.py [--runs 200] [--seed 1]

The job (two parallel sources, a keyed running count at parallelism 2 — its results do not
depend on how the two sources' records interleave —, a sink collecting the results) runs once without faults for the expected output, then ``--runs`` times with one to
three random faults each (kill a TaskExecutor, partition or delay two components, slow a
TaskExecutor, make the count raise on its Nth record) under a fixed-delay restart strategy.
Every run must finish with exactly the expected output (the sink commits per final attempt,
so failed attempts leave no duplicates) and with every emitted event in the event log. A run
still going after an hour of simulated time is a hang. Prints the counts of hangs, wrong
outputs and lost events, and what the faults cost (restarts, detection and recovery times).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter

from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.errors import JobFailed
from kernel.eventbus import drain_buses
from kernel.execution import SessionExecutor
from kernel.faults import parse_inject
from kernel.program import use_executor
from kernel.session import Session

RECORDS = 600
COMPONENTS = ["jobmaster*", "resourcemanager", "taskexecutor-1", "taskexecutor-2", "taskexecutor-3"]
SETTINGS = [
    "rill.clock=simulated", "rill.duration=1 h", "restart-strategy.type=fixed-delay",
    "restart-strategy.fixed-delay.attempts=20", "restart-strategy.fixed-delay.delay=1 s",
    "taskmanager.registration.timeout=2 min", "rill.events.flush-interval=10 s",
]


def build(results: list) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    numbers = env.from_source(DataGeneratorSource(lambda i: (i % 13, 1), count=RECORDS, records_per_second=10),
                              WatermarkStrategy.no_watermarks(), "Numbers")
    numbers.key_by(lambda pair: pair[0], Types.INT()) \
        .reduce(lambda a, b: (a[0], a[1] + b[1])).name("Count") \
        .add_sink(results.append).name("Results")
    env.execute("campaign")


def random_faults(rng: random.Random) -> list[str]:
    faults = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["kill", "partition", "delay", "slow", "raise"])
        start = rng.randint(1, 50)
        if kind == "kill":
            faults.append(f"kill:target=taskexecutor-{rng.randint(1, 3)},at={start}s,refuse={rng.random() < 0.3}")
        elif kind == "partition":
            a, b = rng.sample(COMPONENTS, 2)
            faults.append(f"partition:from={a},to={b},start={start}s,end={start + rng.randint(5, 120)}s")
        elif kind == "delay":
            a, b = rng.sample(COMPONENTS, 2)
            faults.append(f"delay:from={a},to={b},delay={rng.randint(0, 3000)}ms,jitter={rng.randint(0, 2000)}ms,"
                          f"start={start}s,end={start + rng.randint(5, 120)}s,both-ways=true")
        elif kind == "slow":
            faults.append(f"slow:target=taskexecutor-{rng.randint(1, 3)},factor={rng.randint(2, 5)},start={start}s")
        else:
            faults.append(f"raise:operator=Count,record={rng.randint(1, RECORDS // 2)}")
    return faults


def run_once(sets: list[str], faults: list[str]) -> tuple[str, list, object, int, int]:
    from kernel.config import load_raw

    raw = load_raw(sets=sets)
    session = Session.from_raw(raw.with_faults([parse_inject(spec) for spec in faults]) if faults else raw)
    executor = SessionExecutor(session, quiet=True)
    results: list = []
    with use_executor(executor):
        try:
            build(results)
        except JobFailed:
            pass
    outcome = executor.outcomes[-1]
    status = outcome.status
    drain_buses()
    store = session.plugin_manager.hook.open_event_store(config=session.config)
    with store.read() as connection:
        recorded, stored = connection.execute(
            "SELECT events, (SELECT count(*) FROM rill.events e WHERE e.run_id = r.run_id) FROM rill.runs r "
            "WHERE run_id = ?", [outcome.run_id]).fetchone()
    return status, results, outcome, recorded, stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="print every run")
    args = parser.parse_args()
    os.environ["RILL_HOME"] = tempfile.mkdtemp(prefix="rill-campaign-")
    started = time.perf_counter()
    status, expected, _, _, _ = run_once(SETTINGS + [f"rill.seed={args.seed}"], [])
    assert status == "FINISHED", "the fault-free run must finish"
    expected = sorted(expected)
    hangs, wrong, lost, failed = [], [], [], []
    restarts = 0
    kinds: Counter = Counter()
    detections: list[float] = []
    recoveries: list[float] = []
    for index in range(args.runs):
        seed = args.seed * 100_000 + index
        faults = random_faults(random.Random(seed))
        kinds.update(spec.split(":")[0] for spec in faults)
        status, results, outcome, recorded, stored = run_once(SETTINGS + [f"rill.seed={seed}"], faults)
        notes = " | ".join(outcome.notes[1:])
        if status == "CANCELED":
            hangs.append((seed, faults, notes))
        elif status != "FINISHED":
            failed.append((seed, faults, outcome.failure.splitlines()[0] if outcome.failure else status))
        elif sorted(results) != expected:
            wrong.append((seed, faults, f"{len(results)} results, expected {len(expected)}"))
        if recorded != stored:
            lost.append((seed, faults, f"{recorded} events recorded, {stored} stored"))
        for note in outcome.notes[1:]:
            if "detected after" in note:
                detections.append(float(note.split("detected after ")[1].split(" s")[0]))
            if "recovered after" in note:
                recoveries.append(float(note.split("recovered after ")[1].split(" s")[0]))
            if note.startswith("failures:"):
                restarts += int(note.split("restarts: ")[1].split(";")[0])
        if args.verbose:
            print(f"run {index:3d} seed {seed}: {status:9s} {faults} {notes}", file=sys.stderr)
    took = time.perf_counter() - started
    print(f"fault campaign: {args.runs} runs (seed {args.seed}) in {took:.1f} s wall, faults: "
          + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())))
    print(f"hangs: {len(hangs)}  wrong outputs: {len(wrong)}  lost events: {len(lost)}  "
          f"failed jobs: {len(failed)}  restarts: {restarts}")
    if detections:
        print(f"detection latency: median {sorted(detections)[len(detections) // 2]:.1f} s, "
              f"max {max(detections):.1f} s over {len(detections)} detected faults")
    if recoveries:
        print(f"recovery time: median {sorted(recoveries)[len(recoveries) // 2]:.1f} s, "
              f"max {max(recoveries):.1f} s over {len(recoveries)} recoveries")
    for title, cases in (("hang", hangs), ("wrong output", wrong), ("lost events", lost), ("failed", failed)):
        for seed, faults, detail in cases:
            print(f"  {title}: seed {seed} {faults}: {detail}")
    if hangs or wrong or lost:
        sys.exit(1)


if __name__ == "__main__":
    main()

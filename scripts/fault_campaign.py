"""Fault campaign: many seeded simulated runs, each with random faults, judged against the
same job without faults.

    python scripts/fault_campaign.py [--runs 200] [--seed 1] [--duration "5 min"] [--only N ...]

Three jobs take turns (``campaign_jobs.py``): ``staged`` (no checkpoints; sinks stage per
attempt and the finished job commits), ``bounded`` and ``unbounded`` (checkpoints every
second; keyed state, event-time timers and windows into a FileSink that commits when
checkpoints complete; the unbounded one runs for ``--duration`` of clock time). The FileSink
rolls its parts at every checkpoint, or (every other bounded run) by the default policy, so
parts are resumed after restores. Each job runs
once without faults for the expected output (the unbounded one a minute longer), then every
run gets one to three random faults (kill a TaskExecutor, partition or delay two components,
slow a TaskExecutor, make an operator raise on its Nth record) under a fixed-delay restart
strategy, with checkpoint state in the JobMaster's memory or (every fourth run) in files.
Run ``N``'s faults follow from the seed and ``N`` alone: ``--only N`` runs just that one again
(and only the fault-free runs its job needs).

A run must commit exactly once — nothing duplicated, nothing lost, nothing else — and record
every event it emitted. A hang: a bounded job still going after an hour of clock time, or an
unbounded one with no checkpoint completed in its last minute.

Re-processed work: a restore goes back to the restored checkpoint, so the input re-processed
is what the failed attempt's sources read from that checkpoint's position to the failure: from
the checkpoint's trigger — or, when the failed attempt itself began from that checkpoint (a
restart restoring the same checkpoint again, or no checkpoint at all), from that attempt's
start, since the input before it was read by an earlier attempt, re-processed and counted at
that attempt's failure, and during the restart delay no source reads (a rate-limited source
starts its rate afresh when restored). Up to the fault (raise faults are detected at once,
lost TaskExecutors and expiring checkpoints later) it must stay within the checkpoint interval
plus twice the longest checkpoint and the buffer timeout, counted from when the attempt's
tasks all ran: no checkpoint is triggered before (Flink's NOT_ALL_REQUIRED_TASKS_RUNNING),
and then the next is triggered within an interval (the periodic trigger keeps running through
a restart, as Flink's does while the job stays RUNNING) or of the previous checkpoint. Counted
apart (not bounded): a checkpoint failed (expired, declined) between that start and the fault,
the attempt's tasks were not all running by the fault (a restart that deploys to a killed
TaskExecutor not yet known lost: the sources on the other TaskExecutors read on, and no
checkpoint can be triggered), or the fault began before that start. Prints the
counts and figures; exits 1 on any hang, duplicate, loss, wrong output, lost event or restore
beyond the bound.

``--kafka`` runs the Kafka job's campaign instead (``kafka_campaign.py``: realtime runs of an
exactly-once Kafka pipeline against a mock cluster, with kills and exceptions).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

import campaign_jobs as jobs

from kernel.configtypes import parse_duration_ms
from kernel.errors import JobFailed
from kernel.eventbus import drain_buses
from kernel.lifecycle.executors import SessionExecutor
from kernel.faults import parse_inject
from kernel.lifecycle.executors import use_executor
from kernel.lifecycle.session import Session
from kernel.testing import EventCapture

COMPONENTS = ["jobmaster*", "resourcemanager", "taskexecutor-1", "taskexecutor-2", "taskexecutor-3"]
SETTINGS = [
    "rill.clock=simulated", "restart-strategy.type=fixed-delay",
    "restart-strategy.fixed-delay.attempts=20", "restart-strategy.fixed-delay.delay=1 s",
    "taskmanager.registration.timeout=2 min", "rill.events.flush-interval=10 s",
    "execution.checkpointing.timeout=10 s",
]
KINDS = ("staged", "bounded", "unbounded")
INTERVAL_MS = 1000
PROGRESS_WINDOW_MS = 60_000
SLACK_MS = 100  # a barrier behind the buffers in flight (the buffer timeout)


def random_faults(rng: random.Random, operators: list[str], records: int) -> list[str]:
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
            faults.append(f"raise:operator={rng.choice(operators)},record={rng.randint(1, records // 2)}")
    return faults


@dataclass
class Run:
    status: str
    failure: str
    notes: list[str]
    lines: list
    events: list
    recorded: int
    stored: int


def run_once(kind: str, sets: list[str], faults: list[str], workdir: str, roll_on_checkpoint: bool) -> Run:
    from kernel.config import load_raw

    raw = load_raw(sets=sets)
    capture = EventCapture()
    session = Session.from_raw(raw.with_faults([parse_inject(spec) for spec in faults]) if faults else raw,
                               plugins=(capture,))
    executor = SessionExecutor(session, quiet=True)
    results: list = []
    out = os.path.join(workdir, "out")
    with use_executor(executor):
        try:
            if kind == "staged":
                jobs.build_staged(results)
            else:
                jobs.build_checkpointed(out, kind == "bounded", roll_on_checkpoint)
        except JobFailed:
            pass
    outcome = executor.outcomes[-1]
    drain_buses()
    store = session.plugin_manager.hook.open_event_store(config=session.config)
    with store.read() as connection:
        recorded, stored = connection.execute(
            "SELECT events, (SELECT count(*) FROM rill.events e WHERE e.run_id = r.run_id) FROM rill.runs r "
            "WHERE run_id = ?", [outcome.run_id]).fetchone()
    lines = results if kind == "staged" else jobs.committed_lines(out)
    return Run(outcome.status, outcome.failure or "", outcome.notes, lines, capture.last.events, recorded, stored)


def settings_for(kind: str, seed: int, workdir: str, duration_ms: int) -> list[str]:
    sets = SETTINGS + [f"rill.seed={seed}"]
    if kind == "unbounded":
        sets.append(f"rill.duration={duration_ms} ms")
    else:
        sets.append("rill.duration=1 h")
    if kind != "staged" and seed % 4 == 1:
        sets.append(f"execution.checkpointing.dir={os.path.join(workdir, 'checkpoints')}")
    return sets


@dataclass
class Reprocessing:
    """What restores cost, over the campaign: per restart the input re-processed after it (see
    :func:`judge_reprocessing`), for failures detected at once (an operator raised) and, up to
    the fault, for faults detected later (lost TaskExecutors, checkpoints expiring)."""

    at_once_ms: list[float] = field(default_factory=list)
    detected_later_ms: list[float] = field(default_factory=list)
    beyond: list[str] = field(default_factory=list)  # past the bound with no failed checkpoint between
    not_bounded: int = 0  # a checkpoint failed first, tasks not all running by the fault, or the fault began before


@dataclass
class Attempt:
    """The job's tasks from one (re)start on: when they began, the checkpoint they began from
    (None: from the beginning), the event that began them (its index in the run's events), and
    when every task was running (or finished) at last — None: never."""

    began_ns: int
    checkpoint_id: int | None
    index: int
    running_ns: int | None = None


def attempts(events: list) -> list[Attempt]:
    """The run's attempts in order: the job's start, then one per restart (its restores follow
    its ``TasksRestarted`` at the same instant)."""
    from kernel.runtime.cluster_events import ExecutionStateChanged, TasksRestarted
    from plugins.checkpointing.events import CheckpointStateRestored

    tasks = {(e.vertex_id, e.subtask) for e in events if isinstance(e, ExecutionStateChanged)}
    states: dict[tuple[str, int], tuple[int, str]] = {}  # per task: its latest attempt and that one's state
    found = [Attempt(0, None, -1)]
    for index, event in enumerate(events):
        if isinstance(event, TasksRestarted):
            found.append(Attempt(event.time, None, index))
        elif isinstance(event, CheckpointStateRestored) and found[-1].index >= 0 and found[-1].began_ns == event.time:
            found[-1].checkpoint_id = event.checkpoint_id
        elif isinstance(event, ExecutionStateChanged):
            task = (event.vertex_id, event.subtask)
            if states.get(task, (-1, ""))[0] <= event.attempt:
                states[task] = (event.attempt, event.new_state)
            if found[-1].running_ns is None and len(states) == len(tasks) and all(
                    state in ("RUNNING", "FINISHED") for _, state in states.values()):
                found[-1].running_ns = event.time
    return found


def judge_reprocessing(run: Run, faults_at: list[int], reprocessing: Reprocessing, label: str) -> None:
    """Per restart: the input re-processed is what the failed attempt read from the restored
    checkpoint's position — from the checkpoint's trigger, or from the attempt's start when it
    began from that same checkpoint. Up to the first fault after that start (the failure itself
    for a raise) it must stay within the interval plus twice the longest checkpoint (the next
    checkpoint's trigger and completion) and the buffer timeout, counted from when the attempt's
    tasks all ran (no checkpoint is triggered before), unless a checkpoint failed in between. A
    failure the job was not restarted from (it ended first) re-processes nothing."""
    from kernel.runtime.cluster_events import TaskFailureHandled
    from plugins.checkpointing.events import CheckpointCompleted, CheckpointFailed, CheckpointTriggered

    triggered = {e.checkpoint_id: e.time for e in run.events if isinstance(e, CheckpointTriggered)}
    longest = max((e.duration_ms for e in run.events if isinstance(e, CheckpointCompleted)), default=0.0)
    failed_at = [e.time for e in run.events if isinstance(e, CheckpointFailed) and e.checkpoint_id > 0]
    begun = attempts(run.events)
    for index, failure in enumerate(run.events):
        if not (isinstance(failure, TaskFailureHandled) and failure.restart):
            continue
        failed = [a for a in begun if a.index < index][-1]
        restarted = [a for a in begun if a.index > index]
        if not restarted:
            continue
        restored = restarted[0].checkpoint_id
        if restored == failed.checkpoint_id:
            start_ns, running_ns, since = failed.began_ns, failed.running_ns, "the attempt's start"
        else:
            start_ns = running_ns = triggered.get(restored, 0)
            since = f"checkpoint {restored}'s trigger"
        later = [t * 1_000_000 for t in faults_at if start_ns <= t * 1_000_000 <= failure.time]
        if "InjectedFault" in failure.cause:
            later.append(failure.time)
        if not later:
            reprocessing.not_bounded += 1
            continue
        fault_ns = min(later)
        if running_ns is None or running_ns > fault_ns or any(start_ns < t < fault_ns for t in failed_at):
            reprocessing.not_bounded += 1
            continue
        reprocessed_ms = (fault_ns - start_ns) / 1e6
        (reprocessing.at_once_ms if fault_ns == failure.time else reprocessing.detected_later_ms).append(reprocessed_ms)
        deploying_ms = (running_ns - start_ns) / 1e6
        if reprocessed_ms > deploying_ms + INTERVAL_MS + 2 * longest + SLACK_MS:
            reprocessing.beyond.append(f"{label}: {reprocessed_ms:.0f} ms re-processed before the fault at "
                                       f"{fault_ns / 1e9:.3f} s, from {since} at {start_ns / 1e9:.3f} s "
                                       f"(tasks all running {deploying_ms:.0f} ms later; longest checkpoint "
                                       f"{longest:.0f} ms)")


def fault_times_ms(faults: list[str]) -> list[int]:
    """When each fault but the raises (whose time depends on the run) takes effect."""
    times = []
    for spec in faults:
        kind, _, rest = spec.partition(":")
        if kind != "raise":
            fields = dict(part.split("=", 1) for part in rest.split(","))
            times.append(parse_duration_ms(fields.get("at") or fields["start"]))
    return times


def last_checkpoint_ms(run: Run) -> float:
    from plugins.checkpointing.events import CheckpointCompleted

    return max((e.time / 1e6 for e in run.events if isinstance(e, CheckpointCompleted)), default=0.0)


def plan(base_seed: int, index: int) -> tuple[int, str, bool]:
    """Run ``index``'s seed, job and rolling policy (True: parts roll at every checkpoint)."""
    seed = base_seed * 100_000 + index
    kind = KINDS[index % len(KINDS)]
    return seed, kind, kind == "unbounded" or (kind == "bounded" and bool(seed // 2 % 2))


def expected_outputs(seed: int, duration_ms: int, root: str, indices: list[int]) -> dict[tuple[str, bool], list]:
    """The fault-free runs' outputs, per job and rolling policy the runs ``indices`` use."""
    wanted = {plan(seed, index)[1:] for index in indices}
    expected = {}
    for kind in KINDS:
        for roll in {"staged": (False,), "bounded": (True, False), "unbounded": (True,)}[kind]:
            if (kind, roll) not in wanted:
                continue
            workdir = tempfile.mkdtemp(dir=root)
            sets = settings_for(kind, seed, workdir, duration_ms + PROGRESS_WINDOW_MS)
            run = run_once(kind, sets, [], workdir, roll)
            assert run.status == ("CANCELED" if kind == "unbounded" else "FINISHED"), f"the fault-free {kind} run"
            expected[kind, roll] = run.lines
    return expected


@dataclass
class Verdict:
    """What one run of the campaign came to."""

    index: int
    kind: str
    label: str
    status: str
    lines: int
    duplicated: int = 0
    lost: int = 0
    unexpected: int = 0
    hang: str = ""
    failure: str = ""
    lost_events: str = ""
    faults: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reprocessing: Reprocessing = field(default_factory=Reprocessing)


_context: dict = {}


def _start_worker(root: str, expected: dict, duration_ms: int, base_seed: int) -> None:
    """Each worker process writes its own event log (no two processes share a DuckDB file)."""
    home = tempfile.mkdtemp(dir=root, prefix="home-")
    os.environ["RILL_HOME"] = home
    _context.update(root=root, expected=expected, duration_ms=duration_ms, base_seed=base_seed)


def evaluate(index: int) -> Verdict:
    """Run ``index`` of the campaign, judged."""
    root, expected, duration_ms = _context["root"], _context["expected"], _context["duration_ms"]
    seed, kind, roll = plan(_context["base_seed"], index)
    operators = ["Count"] if kind == "staged" else ["Count", "Window"]
    records = jobs.STAGED_RECORDS if kind == "staged" else jobs.CHECKPOINTED_RECORDS
    faults = random_faults(random.Random(seed), operators, records)
    workdir = tempfile.mkdtemp(dir=root)
    run = run_once(kind, settings_for(kind, seed, workdir, duration_ms), faults, workdir, roll)
    shutil.rmtree(workdir, ignore_errors=True)
    verdict = Verdict(index, kind, f"run {index}, seed {seed} ({kind}) {faults}", run.status, len(run.lines),
                      faults=faults, notes=run.notes[1:])
    reference = expected[kind, roll]
    if kind == "unbounded":
        verdict.duplicated, verdict.lost, verdict.unexpected = jobs.judge_unbounded(run.lines, reference)
        last = last_checkpoint_ms(run)
        if run.status == "CANCELED" and last < duration_ms - PROGRESS_WINDOW_MS:
            verdict.hang = f"no checkpoint completed after {last / 1000:.1f} s"
        elif run.status not in ("CANCELED", "FAILED"):
            verdict.hang = run.status
    elif run.status == "FINISHED":
        verdict.duplicated, verdict.lost, verdict.unexpected = jobs.judge_bounded(run.lines, reference)
    elif run.status == "CANCELED":
        verdict.hang = " | ".join(verdict.notes)
    if run.status == "FAILED":
        verdict.failure = run.failure.splitlines()[0] if run.failure else run.status
    if run.recorded != run.stored:
        verdict.lost_events = f"{run.recorded} events recorded, {run.stored} stored"
    if kind != "staged":
        judge_reprocessing(run, fault_times_ms(faults), verdict.reprocessing, verdict.label)
    return verdict


def campaign(args: argparse.Namespace, root: str, duration_ms: int) -> list[Verdict]:
    """The fault-free runs, then every run of the campaign in worker processes."""
    indices = args.only or list(range(args.runs))
    _start_worker(root, {}, duration_ms, args.seed)
    expected = expected_outputs(args.seed, duration_ms, root, indices)
    verdicts = []
    pool = multiprocessing.get_context("fork").Pool(max(1, args.workers), _start_worker,
                                                    (root, expected, duration_ms, args.seed))
    try:
        for verdict in pool.imap(evaluate, indices):
            verdicts.append(verdict)
            if args.verbose:
                print(f"run {verdict.index:4d} {verdict.label}: {verdict.status:9s} {verdict.lines} lines "
                      f"{' | '.join(verdict.notes)}", file=sys.stderr)
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.close()
        pool.join()
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", default="5 min", help="clock time of each unbounded run")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="runs at once (processes)")
    parser.add_argument("--only", type=int, action="append", metavar="N",
                        help="run only run N of the campaign (from 0; repeatable; instead of --runs)")
    parser.add_argument("--verbose", action="store_true", help="print every run")
    parser.add_argument("--kafka", action="store_true", help="the Kafka job instead: realtime runs against a mock "
                                                             "Kafka cluster (kafka_campaign.py)")
    args = parser.parse_args()
    if args.only and min(args.only) < 0:
        parser.error(f"--only {min(args.only)}: a run's index is 0 or more")
    if args.kafka:
        import kafka_campaign

        sys.exit(kafka_campaign.campaign(args.runs, args.seed, args.only, args.verbose))
    duration_ms = parse_duration_ms(args.duration)
    root = tempfile.mkdtemp(prefix="rill-campaign-")
    try:
        started = time.perf_counter()
        verdicts = campaign(args, root, duration_ms)
        took = time.perf_counter() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() + workers.ru_utime + workers.ru_stime
    clean = report(args, took, cpu, verdicts, duration_ms)
    if not clean:
        sys.exit(1)


def report(args, took: float, cpu: float, verdicts: list[Verdict], duration_ms: int) -> bool:
    """Print the campaign's figures; True if nothing went wrong."""
    runs_by_kind = Counter(v.kind for v in verdicts)
    committed: Counter = Counter()
    faults: Counter = Counter()
    detections, recoveries = [], []
    restarts = 0
    reprocessing = Reprocessing()
    for v in verdicts:
        committed[v.kind] += v.lines
        faults.update(spec.split(":")[0] for spec in v.faults)
        reprocessing.at_once_ms += v.reprocessing.at_once_ms
        reprocessing.detected_later_ms += v.reprocessing.detected_later_ms
        reprocessing.beyond += v.reprocessing.beyond
        reprocessing.not_bounded += v.reprocessing.not_bounded
        for note in v.notes:
            if "detected after" in note:
                detections.append(float(note.split("detected after ")[1].split(" s")[0]))
            if "recovered after" in note:
                recoveries.append(float(note.split("recovered after ")[1].split(" s")[0]))
            if note.startswith("failures:"):
                restarts += int(note.split("restarts: ")[1].split(";")[0])
    hangs = [v for v in verdicts if v.hang]
    wrong = [v for v in verdicts if v.duplicated or v.lost or v.unexpected]
    lost_events = [v for v in verdicts if v.lost_events]
    failed = [v for v in verdicts if v.failure]
    only = f", only run {', '.join(map(str, args.only))}" if args.only else ""
    print(f"fault campaign: {len(verdicts)} runs (seed {args.seed}{only}) in {took:.1f} s wall, {cpu:.1f} s CPU, "
          f"{args.workers} worker(s); jobs: " + ", ".join(f"{kind} {runs_by_kind[kind]} ({committed[kind]:,} lines committed)"
                                             for kind in KINDS)
          + f"; unbounded runs {duration_ms / 1000:.0f} s of clock time; faults: "
          + ", ".join(f"{kind} {count}" for kind, count in sorted(faults.items())))
    print(f"hangs: {len(hangs)}  duplicates: {sum(v.duplicated for v in verdicts)}  "
          f"losses: {sum(v.lost for v in verdicts)}  wrong outputs: {len(wrong)}  lost events: {len(lost_events)}  "
          f"failed jobs: {len(failed)}  restarts: {restarts}")
    if detections:
        print(f"detection latency: median {statistics.median(detections):.1f} s, max {max(detections):.1f} s "
              f"over {len(detections)} detected faults")
    if recoveries:
        print(f"recovery time: median {statistics.median(recoveries):.1f} s, max {max(recoveries):.1f} s "
              f"over {len(recoveries)} recoveries")
    for title, values in (("failures detected at once", reprocessing.at_once_ms),
                          ("faults detected later, up to the fault", reprocessing.detected_later_ms)):
        gaps = sorted(values)
        if gaps:
            print(f"re-processed input after a restore ({title}; interval {INTERVAL_MS} ms): median "
                  f"{statistics.median(gaps):.0f} ms, p99 {gaps[int(len(gaps) * 0.99)]:.0f} ms, max {gaps[-1]:.0f} ms "
                  f"over {len(gaps)} restarts")
    print(f"restores beyond the interval plus twice the longest checkpoint and {SLACK_MS} ms: "
          f"{len(reprocessing.beyond)}; not "
          f"bounded (a checkpoint failed first, the tasks were not all running by the fault, or the fault began "
          f"before the checkpoint or the attempt): "
          f"{reprocessing.not_bounded}")
    for title, cases, detail in (("hang", hangs, lambda v: v.hang), ("failed", failed, lambda v: v.failure),
                                 ("lost events", lost_events, lambda v: v.lost_events),
                                 ("wrong output", wrong, lambda v: f"{v.lines} lines: {v.duplicated} duplicated, "
                                                                   f"{v.lost} lost, {v.unexpected} unexpected")):
        for v in cases:
            print(f"  {title}: {v.label}: {detail(v)}")
    for line in reprocessing.beyond:
        print(f"  beyond the bound: {line}")
    return not (hangs or wrong or lost_events or reprocessing.beyond)


if __name__ == "__main__":
    main()

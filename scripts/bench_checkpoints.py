"""Benchmark of checkpoints: what they cost a running job, and snapshot / restore of big state.

    python scripts/bench_checkpoints.py [--records 1000000] [--entries 1000000] [--rounds 5]

1. Throughput: the WindowWordCount workload (d) of ``bench_windows.py`` (1,000 Zipf words, 2 s
   disorder, bounded out-of-orderness 2 s, 5 s tumbling event-time windows, count per word
   and window; parallelism 1, realtime clock) without checkpoints and with a checkpoint every
   second of the run's clock (EXACTLY_ONCE, filesystem storage in a temporary directory, so
   each checkpoint writes the window state and the source position and a bounded run ends
   with its final checkpoint). Runs alternate; the medians of ``--rounds`` each are compared
   (target: with checkpoints >= 97 % of the throughput without). The checkpoints' own figures
   (how many, synchronous and asynchronous parts) come from the run's events.
2. Snapshot and restore of ``--entries`` ValueState entries (one per key, int keys) held by a
   keyed process operator, through the code a task runs: the operator's snapshot (the
   synchronous part, the task stalls for it: copy-on-write views of its state), its encoding
   into key groups and the state file written (the asynchronous part, with the garbage
   collector paused as a task pauses it), then a new operator of the same job restoring from
   the file (read, decode, put back). Each time is printed; the restored state is compared
   with the original.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import tempfile
import time

from bench_windows import REDUCE
from benchkit import load, run_loop, run_rill, timed_words

from kernel.runtime.checkpointing.format import StateHandle
from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState, collector_paused
from kernel.common import Types
from kernel.lifecycle.compiler import compile_program
from kernel.datastream import KeyedProcessFunction, StreamExecutionEnvironment, ValueStateDescriptor
from kernel.lifecycle.executors import CapturingExecutor, ProgramCaptured, use_executor
from kernel.lifecycle.session import Session
from kernel.runtime.streaming.keygroups import key_group_range
from kernel.runtime.streaming.operators.factory import create_operator
from kernel.runtime.streaming.outputs import DiscardingOutput
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo
from kernel.testing import EventCapture


def throughput(records: list, rounds: int) -> None:
    directory = tempfile.mkdtemp(prefix="rill-bench-checkpoints-")
    checkpointed = ("execution.checkpointing.interval=1 s",
                    f"execution.checkpointing.dir={os.path.join(directory, 'checkpoints')}")
    for sets in ((), checkpointed):  # warm up: imports (checkpointing's own too), first-run costs
        run_rill(REDUCE, records[:20_000], directory, sets=sets)
    _, expected = run_loop(REDUCE, records)
    runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    taken: list[tuple[int, float, float]] = []
    for round_ in range(rounds):
        sides = (("without", ()), ("with", checkpointed))
        for name, sets in (sides if round_ % 2 == 0 else sides[::-1]):
            capture = EventCapture()
            took, found = run_rill(REDUCE, records, directory, sets=sets, plugins=(capture,))
            assert found == expected, f"rill counted differently {name} checkpoints"
            runs[name].append(took)
            if name == "with":
                taken.append(checkpoint_figures(capture))
    shutil.rmtree(directory, ignore_errors=True)
    n = len(records)
    wall = {name: statistics.median(run[0] for run in found) for name, found in runs.items()}
    cpu = {name: statistics.median(run[1] for run in found) for name, found in runs.items()}
    print(f"WindowWordCount, {n:,} records, p=1, realtime clock, median of {rounds} alternating runs "
          f"(wall time; CPU time of the process) (load {load()}):")
    for name, title in (("without", "without checkpoints"), ("with", "checkpoint every 1 s")):
        print(f"  {title:22s} {n / wall[name]:10,.0f} records/s wall ({wall[name]:6.3f} s)  "
              f"{n / cpu[name]:10,.0f} records/s CPU ({cpu[name]:6.3f} s)   "
              f"(wall: {', '.join(f'{run[0]:.3f}' for run in runs[name])})")
    ratios = [without[0] / with_[0] for without, with_ in zip(runs["without"], runs["with"])]
    print(f"  with checkpoints: {wall['without'] / wall['with'] * 100:5.1f} % of the throughput without (wall; "
          f"median of the pairs {statistics.median(ratios) * 100:5.1f} %), "
          f"{cpu['without'] / cpu['with'] * 100:5.1f} % (CPU); target >= 97 %")
    for count, sync_ms, async_ms in taken:
        print(f"    a run with checkpoints: {count} completed, synchronous part max {sync_ms:.1f} ms, "
              f"asynchronous part max {async_ms:.1f} ms")


def checkpoint_figures(capture: EventCapture) -> tuple[int, float, float]:
    from plugins.checkpointing.events import CheckpointAcknowledged, CheckpointCompleted

    events = capture.last.events
    acks = [e for e in events if isinstance(e, CheckpointAcknowledged)]
    completed = sum(1 for e in events if isinstance(e, CheckpointCompleted))
    return completed, max((e.sync_ms for e in acks), default=0.0), max((e.async_ms for e in acks), default=0.0)


class Remember(KeyedProcessFunction):
    def open(self, runtime_context):
        self.value = runtime_context.get_state(ValueStateDescriptor("value", Types.LONG()))

    def process_element(self, value, ctx):
        self.value.update(value)
        return ()


class BenchRuntime(OperatorRuntime):
    def __init__(self) -> None:
        super().__init__(TaskInfo("Remember", 0, 1, 128), random.Random)

    def now_ms(self) -> int:
        return 0

    def schedule(self, when_ms, callback):
        raise AssertionError("no timers")


def keyed_operator():
    """A new instance of the job's keyed process operator, opened."""
    session = Session.open(environ={})
    with use_executor(CapturingExecutor(session)):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1], Types.LONG()).key_by(lambda v: v, Types.LONG()) \
            .process(Remember(), Types.LONG()).name("Remember").print()
        try:
            env.execute()
        except ProgramCaptured as captured:
            graph = compile_program(session, captured.program).stream_graph
    [node] = [n for n in graph.nodes.values() if n.name == "Remember"]
    operator = create_operator(node, BenchRuntime())
    operator.output = DiscardingOutput()
    operator.open()
    return operator


def snapshot_and_restore(entries: int) -> None:
    operator = keyed_operator()
    keys = list(range(entries))
    for start in range(0, entries, 10_000):  # one record per key: its value is the key
        operator.process_batch(keys[start:start + 10_000], None)
    directory = tempfile.mkdtemp(prefix="rill-bench-state-")
    path = os.path.join(directory, "state")

    timer = Timer()
    with timer("synchronous part (the task stalls): views taken"):
        snapshot = OperatorSnapshot(operator.key_group_function())
        operator.snapshot_state(snapshot)
        snapshot.freeze()
    with timer("asynchronous part: into key groups, encoded"), collector_paused():
        data, key_groups, operator_state, _ = snapshot.encode()
    snapshot.release()
    with timer("asynchronous part: the state file written (fsync)"):
        with open(path, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
    handle = StateHandle(file="state", size=len(data), key_groups=key_groups, operator_state=operator_state)
    restored_operator = keyed_operator()
    with timer("restore (read, decode, put back)"), collector_paused():
        restored = RestoredOperatorState.read([(0, handle)], directory, key_group_range(128, 1, 0), 0, 1, 1)
        restored_operator.initialize_state(restored)
    table = restored_operator.backend.table("value")
    assert len(table) == entries and all(table[(key, None)] == key for key in keys)
    shutil.rmtree(directory, ignore_errors=True)
    print(f"{entries:,} ValueState entries ({len(data) / 1e6:.1f} MB in {len(key_groups)} key groups), wall / CPU "
          f"(load {load()}):")
    for title, wall, cpu in timer.times:
        print(f"  {title:50s} {wall:7.3f} s / {cpu:7.3f} s  ({entries / max(cpu, 1e-9):13,.0f} entries/s CPU)")
    print(f"  synchronous part: {timer.times[0][1] * 1000:.1f} ms wall, {timer.times[0][2] * 1000:.1f} ms CPU; "
          "target <= 50 ms")


class Timer:
    """Times named steps in wall and CPU time."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float, float]] = []

    @contextlib.contextmanager
    def __call__(self, title: str):
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.times.append((title, time.perf_counter() - wall, time.process_time() - cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs each (the median counts)")
    args = parser.parse_args()
    throughput(timed_words(args.records), args.rounds)
    snapshot_and_restore(args.entries)


if __name__ == "__main__":
    main()

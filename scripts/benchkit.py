"""What the per-workload benchmarks share (``scripts/bench_chain.py``, ``bench_reduce.py``,
``bench_timers.py``, ``bench_windows.py``): the workloads' records, rill and the plain loop
timed alternately in one process, peak memory, whole-process runs, and the printed figures.

A benchmark is a :class:`Workload`: its records, ``loop(records)`` — a plain Python loop
calling the same user functions rill calls — and ``job(env, records, sink)``, the rill job
(p=1, the event log on, the default realtime clock) whose sink gets every output record. Both
sides' outputs are compared (as multisets) before anything is printed.

Rates count the input records per second of the side's time: for rill from the
``from_collection`` call (its conversion included) to ``env.execute()`` returning. Each
side runs ``--rounds`` times, alternating (loop first in odd rounds, rill first in even
ones); the median counts. Peak memory is the peak resident set of a process forked from the
benchmark after the records were made, running one side once (so it includes the records
both sides share, and for rill its event log's writer).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

WORDS = 1_000
DISORDER_MS = 2_000


def zipf_words(n: int, distinct: int = WORDS, seed: int = 7) -> list[str]:
    """``n`` words of a ``distinct``-word vocabulary, Zipf distributed."""
    rng = random.Random(seed)
    vocabulary = [f"w{i:04d}" for i in range(distinct)]
    weights = [1.0 / (rank + 1) for rank in range(distinct)]
    return rng.choices(vocabulary, weights, k=n)


def timed_words(n: int, distinct: int = WORDS, seed: int = 11) -> list[tuple[str, int]]:
    """(word, event time): time advances 1 ms per record, with up to ``DISORDER_MS`` of disorder."""
    rng = random.Random(seed)
    vocabulary = [f"w{i:04d}" for i in range(distinct)]
    weights = [1.0 / (rank + 1) for rank in range(distinct)]
    words = rng.choices(vocabulary, weights, k=n)
    return [(word, max(0, i - rng.randrange(DISORDER_MS))) for i, word in enumerate(words)]


def rows_sink() -> tuple[Callable[[Any], None], Callable[[], Any]]:
    """A sink keeping every record: (sink, its result as a multiset)."""
    rows: list = []
    return rows.append, lambda: Counter(rows)


def counting_sink() -> tuple[Callable[[Any], None], Callable[[], Any]]:
    """A sink counting each distinct record."""
    counts: dict = {}
    get = counts.get

    def count(value: Any) -> None:
        counts[value] = get(value, 0) + 1

    return count, lambda: counts


@dataclass
class Workload:
    name: str
    describe: str
    records: Callable[[int], list]
    loop: Callable[[list, Callable[[Any], None]], None]
    job: Callable[[Any, list, Callable[[Any], None]], None]
    #: a new sink both sides call per output record: (sink, what it got)
    sink: Callable[[], tuple[Callable[[Any], None], Callable[[], Any]]] = rows_sink


# -- one side, once ---------------------------------------------------------------------------


Took = tuple[float, float]  # (wall seconds, CPU seconds of the process)


def run_loop(workload: Workload, records: list) -> tuple[Took, Any]:
    sink, result = workload.sink()
    started, cpu = time.perf_counter(), time.process_time()
    workload.loop(records, sink)
    return (time.perf_counter() - started, time.process_time() - cpu), result()


def run_rill(workload: Workload, records: list, directory: str, clock: str = "realtime",
             settle: bool = True, sets: tuple[str, ...] = (), plugins: tuple = ()) -> tuple[Took, Any]:
    """The job once (with more ``sets`` and ``plugins`` registered); then (``settle``) its
    events are stored in the log, here, untimed."""
    from kernel.datastream import StreamExecutionEnvironment
    from kernel.eventbus import drain_buses
    from kernel.lifecycle.executors import SessionExecutor, use_executor
    from kernel.lifecycle.session import Session

    session = Session.open(sets=[f"eventlog.path={directory}/bench.duckdb", f"rill.clock={clock}", *sets],
                           plugins=plugins, environ={})
    sink, result = workload.sink()
    with use_executor(SessionExecutor(session, quiet=True)):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        started, cpu = time.perf_counter(), time.process_time()
        workload.job(env, records, sink)
        env.execute(workload.name)
        took = (time.perf_counter() - started, time.process_time() - cpu)
    try:
        drain_buses(settle=settle)  # the log's writer stores the run off its path, not during the next timing
    except TypeError:  # a rill from before the deferred log (to measure it): its writer stores the run here
        drain_buses()
    return took, result()


def peak_rss_mb(side: Callable[[], Any]) -> float:
    """Peak resident set (MB) of a process forked from this one that runs ``side`` once (for
    rill: the job's process; a run that ended deferring its log is stored by another process)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            side()
            os.write(write, str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        peak = answer.read()
    os.waitpid(pid, 0)
    return int(peak) / 1024 if peak else float("nan")


# -- measuring ------------------------------------------------------------------------------


@dataclass
class Figures:
    workload: str
    records: int
    loop_runs: list[Took]
    rill_runs: list[Took]
    loop_peak_mb: float
    rill_peak_mb: float

    def median(self, side: str, cpu: bool = False) -> float:
        return statistics.median(run[cpu] for run in (self.loop_runs if side == "loop" else self.rill_runs))

    @property
    def ratio(self) -> float:
        return self.median("rill") / self.median("loop")

    @property
    def cpu_ratio(self) -> float:
        return self.median("rill", cpu=True) / self.median("loop", cpu=True)

    def lines(self) -> list[str]:
        n = self.records
        lines = []
        for side, peak in (("loop", self.loop_peak_mb), ("rill", self.rill_peak_mb)):
            runs = self.loop_runs if side == "loop" else self.rill_runs
            wall, cpu = self.median(side), self.median(side, cpu=True)
            name = "plain loop" if side == "loop" else "rill"
            lines.append(f"{name:<10}  {n / wall / 1e6:6.3f} M rec/s  {wall:7.3f} s (cpu {cpu:6.3f} s)  "
                         f"peak {peak:5.0f} MB   (wall: {', '.join(f'{r[0]:.3f}' for r in runs)})")
        lines.append(f"ratio       {self.ratio:5.2f}x the loop's time (cpu {self.cpu_ratio:4.2f}x)   "
                     f"memory {self.rill_peak_mb / self.loop_peak_mb:4.2f}x")
        return lines


def measure(workload: Workload, n: int, rounds: int, clock: str = "realtime") -> Figures:
    records = workload.records(n)
    with tempfile.TemporaryDirectory() as directory:
        loop_peak = peak_rss_mb(lambda: run_loop(workload, records))
        rill_peak = peak_rss_mb(lambda: run_rill(workload, records, directory, clock, settle=False))
        _, expected = run_loop(workload, records[: max(1, n // 50)])
        _, found = run_rill(workload, records[: max(1, n // 50)], directory, clock)  # warm up, and check
        if expected != found:
            raise SystemExit(f"{workload.name}: rill's output differs from the loop's on {n // 50:,} records")
        loop_times: list[Took] = []
        rill_times: list[Took] = []
        for round_ in range(rounds):
            outputs = {}
            for side in (("loop", "rill") if round_ % 2 == 0 else ("rill", "loop")):
                if side == "loop":
                    took, outputs[side] = run_loop(workload, records)
                    loop_times.append(took)
                else:
                    took, outputs[side] = run_rill(workload, records, directory, clock)
                    rill_times.append(took)
            if round_ == 0 and outputs["loop"] != outputs["rill"]:
                raise SystemExit(f"{workload.name}: rill's output differs from the loop's")
            del outputs
    return Figures(workload.name, n, loop_times, rill_times, loop_peak, rill_peak)


# -- whole processes --------------------------------------------------------------------------


def bytecode_env(directory: str) -> dict[str, str]:
    """The environment of a measured process: bytecode cached (in ``directory``) as an
    installed package has it, whatever ``PYTHONDONTWRITEBYTECODE`` says here."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(directory, "pycache")
    env["RILL_HOME"] = os.path.join(directory, "rill-home")
    return env


def run_process(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak resident MB of one process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read().decode()
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}): {errors}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def alternate_processes(commands: dict[str, list[str]], rounds: int, cwd: str | None = None
                        ) -> dict[str, list[tuple[float, float, float]]]:
    """Each command ``rounds`` times, alternating, after one untimed warm-up run each."""
    with tempfile.TemporaryDirectory() as directory:
        env = bytecode_env(directory)
        cwd = cwd or directory
        for command in commands.values():
            run_process(command, env, cwd)
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        names = list(commands)
        for round_ in range(rounds):
            for name in (names if round_ % 2 == 0 else names[::-1]):
                results[name].append(run_process(commands[name], env, cwd))
    return results


def median_of(runs: list[tuple[float, float, float]], index: int) -> float:
    return statistics.median(run[index] for run in runs)


def process_lines(results: dict[str, list[tuple[float, float, float]]]) -> list[str]:
    lines = []
    for name, runs in results.items():
        lines.append(f"{name:<12} {median_of(runs, 0):6.3f} s wall  {median_of(runs, 1):6.3f} s cpu  "
                     f"peak {median_of(runs, 2):6.0f} MB   (wall: {', '.join(f'{r[0]:.3f}' for r in runs)})")
    return lines


# -- the command line -------------------------------------------------------------------------


def load() -> str:
    with open("/proc/loadavg") as loadavg:
        return loadavg.read().split()[0]


def arguments(description: str, records: int = 1_000_000) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--records", type=int, default=records)
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs per side (the median counts)")
    parser.add_argument("--clock", choices=["realtime", "simulated"], default="realtime")
    parser.add_argument("--profile", type=int, metavar="N", default=0,
                        help="instead: run rill once under cProfile and print the N entries of most own time")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line (bench_all.py)")
    return parser


def profile(workload: Workload, n: int, clock: str, entries: int) -> None:
    """One rill run under cProfile, in CPU time: the entries with the most own time."""
    import cProfile
    import pstats

    records = workload.records(n)
    with tempfile.TemporaryDirectory() as directory:
        run_rill(workload, records[: max(1, n // 50)], directory, clock)  # imports, first-run costs
        profiler = cProfile.Profile(time.thread_time)  # CPU time of this thread: load elsewhere does not count
        profiler.enable()
        run_rill(workload, records, directory, clock, settle=False)
        profiler.disable()
    pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(entries)


def main(workload: Workload, args: argparse.Namespace | None = None) -> Figures:
    """Measure ``workload`` as the command line (or ``args``) asks, and print the figures."""
    if args is None:
        args = arguments(workload.describe.splitlines()[0]).parse_args()
    if args.profile:
        profile(workload, args.records, args.clock, args.profile)
        raise SystemExit(0)
    figures = measure(workload, args.records, args.rounds, args.clock)
    print(f"{workload.name}: {workload.describe.splitlines()[0]}")
    print(f"  {args.records:,} records, p=1, event log on, {args.clock} clock, median of {args.rounds} "
          f"alternating runs ({os.cpu_count()} cores, load {load()})")
    for line in figures.lines():
        print("  " + line)
    if args.json:
        print(json.dumps({"workload": workload.name, "records": args.records, "rounds": args.rounds,
                          "loop": figures.loop_runs, "rill": figures.rill_runs,
                          "loop_peak_mb": figures.loop_peak_mb, "rill_peak_mb": figures.rill_peak_mb}))
    return figures


if __name__ == "__main__":
    sys.exit("benchkit is imported by the bench_*.py scripts")

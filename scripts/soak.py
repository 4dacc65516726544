"""Soak test: memory of long unbounded runs stays flat.

    python scripts/soak.py [--simulated-minutes 60] [--realtime-minutes 10] [--warm-up 2]
                           [--rate 20000] [--only simulated|realtime] [--pipelines keys,events,pressure]
                           [--trace]

One unbounded job (parallelism 2, its event log written to a scratch RILL_HOME as usual) with
three pipelines, each in a process of its own per clock:

* ``Keys``: the issue's job, ``--rate`` records/s from a rate-limited DataGeneratorSource over
  5,000 keys into 1 s tumbling processing-time windows (window state, namespaces, timers);
* ``Events``: 1,000 records/s of event time over 1,000 keys: a KeyedProcessFunction keeping a
  count per key in ValueState and moving a 60 s event-time timeout timer at every record (timers
  deleted and registered again), plus processing-time timers at varying delays, and a sliding
  event-time window (10 s every 1 s) counting per key group;
* ``Pressure``: 2,000 records/s into a sink that can take 1,600 (it sleeps on the kernel
  clock): the source is back-pressured all the time.

The job runs ``--simulated-minutes`` of simulated clock time, then ``--realtime-minutes`` of
wall-clock time. An event observer in the job's process reads the process's resident set size
(Linux ``/proc/self/status``) whenever the run's clock passes a minute; they are printed per
minute, and the growth from the end of the warm-up to the end of the run (target: at most 5 %).
``--trace`` also compares tracemalloc snapshots taken then and prints the allocation sites that
grew most (slower; the RSS figures then include the snapshot kept since the warm-up). Exit
status 1 when a growth exceeds the target.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from kernel import hookimpl

TARGET_PERCENT = 5.0
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


PIPELINES = ("keys", "events", "pressure")


def build(env: Any, rate: int, pipelines: tuple[str, ...] = PIPELINES) -> None:
    from kernel import clock
    from kernel.common import Duration, Time, Types, WatermarkStrategy
    from kernel.datastream import KeyedProcessFunction
    from kernel.datastream.connectors.datagen import DataGeneratorSource
    from kernel.datastream.state import ValueStateDescriptor
    from kernel.datastream.window import SlidingEventTimeWindows, TumblingProcessingTimeWindows

    pair = Types.TUPLE([Types.INT(), Types.LONG()])
    env.set_parallelism(2)

    if "keys" in pipelines:
        env.from_source(DataGeneratorSource(lambda i: (i % 5000, 1), records_per_second=rate, type_info=pair),
                        WatermarkStrategy.no_watermarks(), "Keys") \
            .key_by(lambda t: t[0], Types.INT()) \
            .window(TumblingProcessingTimeWindows.of(Time.seconds(1))) \
            .reduce(lambda a, b: (a[0], a[1] + b[1])).name("Per Second") \
            .add_sink(lambda v: None).name("Keys Out")

    class Timeouts(KeyedProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
            self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline", Types.LONG()))

        def process_element(self, value: Any, ctx: Any) -> Any:
            timers = ctx.timer_service()
            self.count.update((self.count.value() or 0) + 1)
            previous = self.deadline.value()
            if previous is not None:
                timers.delete_event_time_timer(previous)
            self.deadline.update(ctx.timestamp() + 60_000)
            timers.register_event_time_timer(ctx.timestamp() + 60_000)
            timers.register_processing_time_timer(timers.current_processing_time() + 1000 - value[0] % 500)
            yield value

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            if timestamp == self.deadline.value():
                yield ctx.get_current_key(), self.count.value()
                self.count.clear()
                self.deadline.clear()

    if "events" in pipelines:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)) \
            .with_timestamp_assigner(lambda value, timestamp: value[1])
        events = env.from_source(DataGeneratorSource(lambda i: (i % 1000, i), records_per_second=1000, type_info=pair),
                                 strategy, "Events").set_parallelism(1)
        timed = events.key_by(lambda t: t[0], Types.INT()).process(Timeouts(), pair).name("Timeouts")
        timed.key_by(lambda t: t[0] % 100, Types.INT()) \
            .window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(1))) \
            .reduce(lambda a, b: (a[0], a[1] + 1)).name("Sliding") \
            .add_sink(lambda v: None).name("Events Out")

    def slow(value: Any) -> None:
        clock.sleep(1 / 800)  # two subtasks: 1,600 records/s in all

    if "pressure" in pipelines:
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=2000, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Pressure") \
            .map(lambda v: v + 1, Types.LONG()).name("Before Sink").rebalance() \
            .add_sink(slow).name("Slow Sink")
    env.execute("soak")


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


class MinuteSampler:
    """An event observer (registered as a plugin): the RSS each time the run's clock passes a
    minute, printed as ``minute N RSS_MB WALL_S`` lines."""

    def __init__(self, trace: bool, warm_up: int) -> None:
        self.origin: int | None = None
        self.minute = 0
        self.started = time.perf_counter()
        self.trace = trace
        self.warm_up = warm_up
        self.snapshot: Any = None
        self.lock = threading.Lock()

    @hookimpl
    def create_event_observers(self, run: Any) -> Any:
        return self

    def events_emitted(self, batch: Any) -> None:
        if self.origin is None:
            self.origin = batch.events[0].time
        minute = (batch.events[-1].time - self.origin) // 60_000_000_000
        if minute <= self.minute:
            return
        rss, wall = rss_mb(), time.perf_counter() - self.started
        for passed in range(self.minute + 1, minute + 1):  # a batch may span minutes of simulated time
            print(f"minute {passed} {rss:.1f} {wall:.0f}", flush=True)
        first, self.minute = self.minute, minute
        if self.trace and first < self.warm_up <= minute:
            import tracemalloc

            self.snapshot = tracemalloc.take_snapshot()

    def close(self, status: str) -> None:
        if self.snapshot is None:
            return
        import tracemalloc

        grown = [stat for stat in tracemalloc.take_snapshot().compare_to(self.snapshot, "lineno") if stat.size_diff > 0]
        for stat in sorted(grown, key=lambda stat: -stat.size_diff)[:15]:
            print(f"trace {stat}", flush=True)


def child(clock_mode: str, minutes: int, rate: int, trace: bool, warm_up: int, pipelines: tuple[str, ...]) -> None:
    """One run in this process (the parent reads what it prints)."""
    from kernel.config import load_raw
    from kernel.datastream import StreamExecutionEnvironment
    from kernel.eventbus import drain_buses
    from kernel.lifecycle.executors import SessionExecutor, use_executor
    from kernel.lifecycle.session import Session

    if trace:
        import tracemalloc

        tracemalloc.start()
    sampler = MinuteSampler(trace, warm_up)
    raw = load_raw(sets=[f"rill.clock={clock_mode}", f"rill.duration={minutes} min"])
    session = Session.from_raw(raw, plugins=[sampler])
    print(f"minute 0 {rss_mb():.1f} 0", flush=True)
    with use_executor(SessionExecutor(session, quiet=True)):
        build(StreamExecutionEnvironment.get_execution_environment(), rate, pipelines)
    drain_buses()


def soak(clock_mode: str, minutes: int, rate: int, trace: bool, warm_up: int, pipelines: tuple[str, ...]) -> float:
    """Run the job in a child process; print its RSS per minute; the growth after warm-up (%)."""
    print(f"\n{clock_mode} clock, {minutes} min of clock time, pipelines {', '.join(pipelines)} "
          f"(Keys at {rate:,} records/s):")
    print(f"{'minute':>6}  {'RSS MB':>8}  {'wall s':>7}")
    command = [sys.executable, os.path.abspath(__file__), "--child", clock_mode, "--minutes", str(minutes),
               "--rate", str(rate), "--warm-up", str(warm_up), "--pipelines", ",".join(pipelines),
               *(["--trace"] if trace else [])]
    with tempfile.TemporaryDirectory(prefix="rill-soak-") as home:
        env = {**os.environ, "RILL_HOME": home, "PYTHONPATH": ROOT}
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=home)
        samples: dict[int, float] = {}
        for line in process.stdout:
            if line.startswith("minute "):
                _, minute, rss, wall = line.split()
                samples[int(minute)] = float(rss)
                print(f"{int(minute):>6}  {float(rss):>8.1f}  {int(wall):>7}", flush=True)
            elif line.startswith("trace "):
                print("  " + line[6:].rstrip())
        if process.wait() != 0:
            raise SystemExit(f"the {clock_mode} soak run failed (exit {process.returncode})")
    last = max(samples)
    start = min(warm_up, last)
    growth = (samples[last] - samples[start]) / samples[start] * 100
    print(f"{clock_mode}: {samples[start]:.1f} MB after the warm-up (minute {start}), {samples[last]:.1f} MB at "
          f"minute {last}: growth {growth:+.1f} % (target <= {TARGET_PERCENT:g} %)")
    return growth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulated-minutes", type=int, default=60)
    parser.add_argument("--realtime-minutes", type=int, default=10)
    parser.add_argument("--warm-up", type=int, default=2, help="minutes of clock time before the growth is measured")
    parser.add_argument("--rate", type=int, default=20_000, help="records/s of the Keys pipeline")
    parser.add_argument("--only", choices=["simulated", "realtime"])
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="which pipelines of the job run (comma-separated)")
    parser.add_argument("--trace", action="store_true", help="print the allocation sites that grew most")
    parser.add_argument("--child", choices=["simulated", "realtime"], help=argparse.SUPPRESS)
    parser.add_argument("--minutes", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    pipelines = tuple(name.strip() for name in args.pipelines.split(","))
    unknown = sorted(set(pipelines) - set(PIPELINES))
    if unknown:
        parser.error(f"unknown pipeline(s) {', '.join(unknown)} (valid: {', '.join(PIPELINES)})")
    if args.child:
        child(args.child, args.minutes, args.rate, args.trace, args.warm_up, pipelines)
        return
    growths = []
    for clock_mode, minutes in (("simulated", args.simulated_minutes), ("realtime", args.realtime_minutes)):
        if args.only in (None, clock_mode) and minutes > 0:
            growths.append(soak(clock_mode, minutes, args.rate, args.trace, args.warm_up, pipelines))
    if any(growth > TARGET_PERCENT for growth in growths):
        sys.exit(1)


if __name__ == "__main__":
    main()

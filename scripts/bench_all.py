"""Every benchmark of rill's own cost, one process each, then one table against the targets.

    python scripts/bench_all.py [--rounds 5] [--records 1000000]

(a) map -> filter -> flat_map (``bench_chain.py``), (b) rolling keyed reduce
(``bench_runtime.py``), (c) KeyedProcessFunction with ValueState and event-time timers
(``bench_timers.py``), (d) WindowWordCount with a ReduceFunction and (e) with a
ProcessWindowFunction (``bench_windows.py``): rill against a plain loop calling the same
functions, in one process, p=1, event log on. Then (d) as whole processes, rill against the
plain loop (``bench_windows.py --whole``), and ``rill run examples/wordcount.py``
(``bench_startup.py``). Each script prints its own figures as it goes; the table at the end
takes the medians (wall and CPU) of every one.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from benchkit import arguments, load

HERE = os.path.dirname(os.path.abspath(__file__))
#: issue 31's targets: rill's time against the loop's, in process
TARGET_RATIO = {"(a)": 1.3, "(b)": 2.0, "(c)": 2.0, "(d)": 2.0, "(e)": 2.0}


def run(script: str, *args: str) -> dict:
    """Run a bench script with ``--json``: its output goes on to ours; returns its figures."""
    command = [sys.executable, os.path.join(HERE, script), *args, "--json"]
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    figures = None
    for line in output.splitlines():
        if line.startswith("{"):
            figures = json.loads(line)
        else:
            print(line, flush=True)
    assert figures is not None, f"{script} printed no figures"
    return figures


def median(runs: list, index: int) -> float:
    return statistics.median(run[index] for run in runs)


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    common = ["--rounds", str(args.rounds), "--records", str(args.records)]
    in_process = [
        ("(a) chain", run("bench_chain.py", *common)),
        ("(b) keyed reduce", run("bench_runtime.py", *common)),
        ("(c) process function + timers", run("bench_timers.py", *common)),
        ("(d) window word count", run("bench_windows.py", *common)),
        ("(e) ... with a ProcessWindowFunction", run("bench_windows.py", "--function", "process", *common)),
    ]
    whole = run("bench_windows.py", "--whole", *common)
    startup = run("bench_startup.py", "--rounds", str(args.rounds))

    n = args.records
    print(f"\nsummary: {n:,} records, p=1, event log on, medians of {args.rounds} alternating runs "
          f"({os.cpu_count()} cores, load {load()}; wall times suffer most from other work on the machine)")
    print(f"  {'workload':<38} {'loop M/s':>9} {'rill M/s':>9} {'wall x':>7} {'cpu x':>6} {'mem x':>6}  target")
    for name, figures in in_process:
        loop_wall, rill_wall = median(figures["loop"], 0), median(figures["rill"], 0)
        cpu = median(figures["rill"], 1) / median(figures["loop"], 1)
        ratio = rill_wall / loop_wall
        memory = figures["rill_peak_mb"] / figures["loop_peak_mb"]
        bound = TARGET_RATIO[name[:3]]
        target = f"<= {bound}x: {'met' if ratio <= bound else 'NOT met'}"
        if name.startswith("(d)"):
            target += f"; memory <= 1.3x: {'met' if memory <= 1.3 else 'NOT met'}"
        print(f"  {name:<38} {n / loop_wall / 1e6:9.3f} {n / rill_wall / 1e6:9.3f} {ratio:7.2f} {cpu:6.2f} "
              f"{memory:6.2f}  {target}")
    loop, rill = whole["loop"], whole["rill"]
    ratio = median(rill, 0) / median(loop, 0)
    print(f"  {'(d) whole process':<38} {median(loop, 0):8.3f}s {median(rill, 0):8.3f}s {ratio:7.2f} "
          f"{median(rill, 1) / median(loop, 1):6.2f} {median(rill, 2) / median(loop, 2):6.2f}  "
          f"<= 1.6x: {'met' if ratio <= 1.6 else 'NOT met'}; memory <= 1.3x: "
          f"{'met' if median(rill, 2) / median(loop, 2) <= 1.3 else 'NOT met'}")
    wordcount = median(startup["rill run"], 0)
    print(f"  {'rill run examples/wordcount.py':<38} {'':>9} {wordcount:8.3f}s {'':>7} {'':>6} {'':>6}  "
          f"<= 0.3 s: {'met' if wordcount <= 0.3 else 'NOT met'} "
          f"(python -c pass {median(startup['python -c pass'], 0):.3f} s)")


if __name__ == "__main__":
    main()

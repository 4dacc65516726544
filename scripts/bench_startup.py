"""Benchmark of a small job's whole process: ``rill run examples/wordcount.py``.

    python scripts/bench_startup.py [--rounds 5]

Times whole processes, alternating (bytecode cached, as an installed rill has it; each run in
a fresh directory's event log): ``python -c pass`` (the interpreter alone), ``rill --help``,
``rill run --quiet examples/wordcount.py`` as it is, with ``eventlog.defer=0`` (the run writes
its event log itself before it ends, as rill did before the log was deferred), and with
``slotmanager.requirement-check.delay=0`` (without Flink's two 50 ms waits of the slot
manager, which a realtime run spends asleep). For the run as it is, also when its stderr
closed, which a pipe reader waits for (nothing the run started outlives it: the run's events
wait in its segment for the next command that reads the log).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from benchkit import arguments, bytecode_env, load, median_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDCOUNT = os.path.join(ROOT, "examples", "wordcount.py")


def rill_command() -> list[str]:
    """The ``rill`` console script of this Python (its environment's ``bin/rill``)."""
    script = os.path.join(os.path.dirname(sys.executable), "rill")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-c", "import sys; from kernel.cli.main import console_main; sys.argv[0] = 'rill'; console_main()"]


def timed(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, float, float] | None:
    """Wall seconds to the process's exit, CPU seconds, peak MB, and wall seconds until its
    stderr closed (a process it left behind would keep it open); None if it failed."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    errors = child.stderr.read()
    closed = time.perf_counter() - started
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"  ({' '.join(command[-4:])} failed: {errors.decode().strip()[-200:]})")
        return None
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, closed


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    run = [*rill_command(), "run", "--quiet"]
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "rill --help": [*rill_command(), "--help"],
        "rill run": [*run, WORDCOUNT],
        "  eventlog.defer=0": [*run, "--set", "eventlog.defer=0", WORDCOUNT],
        "  check.delay=0": [*run, "--set", "slotmanager.requirement-check.delay=0", WORDCOUNT],
    }
    results: dict[str, list] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as directory:
        env = bytecode_env(directory)
        for name, command in list(commands.items()):  # warm up: bytecode caches
            if timed(command, env, directory) is None:  # (a rill without the key a variant sets)
                del commands[name], results[name]
        for round_ in range(args.rounds):
            for name in (list(commands) if round_ % 2 == 0 else list(commands)[::-1]):
                cwd = tempfile.mkdtemp(dir=directory)  # a fresh event log per run
                results[name].append(timed(commands[name], {**env, "RILL_HOME": os.path.join(cwd, ".rill")}, cwd))
    print(f"rill run examples/wordcount.py, whole process, median of {args.rounds} alternating runs "
          f"({os.cpu_count()} cores, load {load()})")
    for name, runs in results.items():
        print(f"  {name:<20} {median_of(runs, 0):6.3f} s wall  {median_of(runs, 1):6.3f} s cpu  "
              f"peak {median_of(runs, 2):5.0f} MB   (wall: {', '.join(f'{r[0]:.3f}' for r in runs)})")
    print(f"  its stderr closed {median_of(results['rill run'], 3):.3f} s after it started "
          "(what a pipe reader waits for)")
    if args.json:
        print(json.dumps({"startup": args.rounds, **results}))


if __name__ == "__main__":
    main()

"""``rill run``: execute a job file on the selected backend."""

from __future__ import annotations

import json
import os
import sys

import click

from kernel.cli.common import config_options, open_session
from kernel.cli.progress import LiveProgress
from kernel.configtypes import parse_duration_ms
from kernel.errors import JobDefinitionError, UsageError
from kernel.lifecycle.executors import SessionExecutor
from kernel.lifecycle.jobfile import run_script
from kernel.options import SEED_RANGE


def check_duration(duration: str) -> None:
    try:
        milliseconds = parse_duration_ms(duration)
    except ValueError as exc:
        raise UsageError(f"--duration {duration!r}: {exc}") from None
    if milliseconds < 0:
        raise UsageError(f"--duration {duration!r}: must not be negative (0 runs the job until it ends)")


@click.command("run", context_settings={"allow_interspersed_args": False})
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.option("--clock", type=click.Choice(["realtime", "simulated"]), default=None,
              help="realtime (wall clock) or simulated (virtual time jumps to the next timer).")
@click.option("--seed", type=click.IntRange(*SEED_RANGE), default=None, help="Seed of the kernel's RNG (rill.seed).")
@click.option("--duration", default=None, metavar="TIME",
              help="Stop the job after this much clock time, e.g. 30s (rill.duration).")
@click.option("--backend", default=None, help="Execution backend plugin (plugins.backend), e.g. local or spark.")
@click.option("--quiet", is_flag=True, help="No summary and no live status line on stderr.")
@click.option("-s", "--from-savepoint", "from_savepoint", metavar="PATH",
              help="Start from this savepoint or retained checkpoint (its directory or _metadata; "
                   "execution.state-recovery.path).")
@click.option("-n", "--allow-non-restored-state", is_flag=True,
              help="With -s: drop state of operators the job does not have instead of refusing to start "
                   "(execution.state-recovery.ignore-unclaimed-state).")
@click.option("--stop-with-savepoint", "stop_with_savepoint", metavar="DIR",
              help="With --duration: when it has passed, stop the job with a savepoint under DIR instead of "
                   "cancelling it, and print the savepoint's path (rill.stop-with-savepoint).")
@click.option("--inject", multiple=True, metavar="KIND:KEY=VALUE,...",
              help="Inject a fault (repeatable), e.g. kill:target=taskexecutor-1,at=30s; kinds: kill, partition, "
                   "drop, delay, slow, raise (see docs/failures.md).")
@config_options
def run_command(job_file: str, job_args: tuple[str, ...], clock: str | None, seed: int | None, duration: str | None,
                backend: str | None, quiet: bool, from_savepoint: str | None, allow_non_restored_state: bool,
                stop_with_savepoint: str | None, inject: tuple[str, ...], config_path: str | None,
                sets: tuple[str, ...]) -> None:
    """Run JOB_FILE with ARGS as its arguments (``sys.argv[1:]``; options of rill come before
    JOB_FILE, everything after it goes to the job): print sinks write to stdout, a summary of
    the run goes to stderr (on a terminal, a live status line while it runs)."""
    overrides = []
    if clock is not None:
        overrides.append(f"rill.clock={clock}")
    if seed is not None:
        overrides.append(f"rill.seed={seed}")
    if duration is not None:
        check_duration(duration)
        overrides.append(f"rill.duration={duration}")
    if backend is not None:
        overrides.append(f"plugins.backend={backend}")
    if from_savepoint == "":
        raise UsageError("-s: give the savepoint's or checkpoint's directory (or its _metadata)")
    if from_savepoint is not None:  # paths as TOML strings: "123" or "true" stay paths
        overrides.append(f"execution.state-recovery.path={json.dumps(from_savepoint)}")
    if allow_non_restored_state:
        overrides.append("execution.state-recovery.ignore-unclaimed-state=true")
    if stop_with_savepoint is not None:
        if duration is None:
            raise UsageError("--stop-with-savepoint DIR stops the job when --duration has passed: give --duration")
        overrides.append(f"rill.stop-with-savepoint={json.dumps(stop_with_savepoint)}")
    progress = LiveProgress(sys.stderr) if not quiet and sys.stderr.isatty() else None
    session = open_session(config_path, [*overrides, *sets], inject, plugins=[progress] if progress else [])
    if allow_non_restored_state and not session.config.get("execution.state-recovery.path"):
        raise UsageError("-n drops the state of operators the job does not have when it restores: give -s PATH")
    savepoints = session.config.get("rill.stop-with-savepoint")
    if savepoints is not None and os.path.exists(savepoints) and not os.path.isdir(savepoints):
        raise UsageError(f"--stop-with-savepoint {savepoints} is not a directory (savepoints are written under it)")
    executor = SessionExecutor(session, quiet=quiet, progress=progress)
    run_script(job_file, executor, job_args)
    executor.wait_for_jobs()
    if not executor.outcomes:
        raise JobDefinitionError(f"job file {job_file} defines no job: it never calls env.execute() or "
                                 "env.execute_async()")

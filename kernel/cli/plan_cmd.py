"""``rill plan``: compile a job file and print one of its graphs."""

from __future__ import annotations

import click

from kernel.cli.common import config_options, open_session
from kernel.lifecycle.compiler import compile_program
from kernel.lifecycle.execution import plan_run
from kernel.runtime.graph.render import render
from kernel.lifecycle.jobfile import load_program


@click.command("plan", context_settings={"allow_interspersed_args": False})
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.option("--level", type=click.Choice(["stream", "job", "execution"]), default="job", show_default=True,
              help="Which graph to print.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot"]), default="text", show_default=True,
              help="text: one line per node; json: Flink's plan JSON (stream level) or REST plan shape; dot: Graphviz.")
@config_options
def plan_command(job_file: str, job_args: tuple[str, ...], level: str, fmt: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Compile JOB_FILE (up to its env.execute(), given ARGS as ``sys.argv[1:]``; options of rill
    come before JOB_FILE) and print its StreamGraph, JobGraph or ExecutionGraph."""
    session = open_session(config_path, sets)
    program = load_program(job_file, session, job_args)
    job_session = session.with_sets(program.sets()) if program.sets() else session
    compiled = compile_program(job_session, program)
    _, execution = plan_run(job_session, compiled)
    click.echo(render(level, fmt, compiled.stream_graph, compiled.job_graph, execution))

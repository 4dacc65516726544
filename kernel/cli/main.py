"""Entry point of the ``rill`` command.

Errors are one line on stderr: exit code 2 for bad input (usage, config, plugins, job
files), 1 for failed runs and operations. ``--debug`` (or ``RILL_DEBUG=1``) shows tracebacks.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from kernel import __version__
from kernel.errors import RillError
from kernel.eventbus import drain_buses
from kernel.lifecycle.process_exit import skip_last_collection
from kernel.lifecycle.tracebacks import describe

#: the built-in commands, imported when used (a command imports only what it needs)
BUILTIN_COMMANDS: dict[str, str] = {
    "plugins": "kernel.cli.plugins_cmd:plugins_command",
    "config": "kernel.cli.config_cmd:config_command",
    "plan": "kernel.cli.plan_cmd:plan_command",
    "run": "kernel.cli.run_cmd:run_command",
}


def builtin_command(name: str) -> click.Command | None:
    target = BUILTIN_COMMANDS.get(name)
    if target is None:
        return None
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


class RillGroup(click.Group):
    """The top-level group: built-in commands plus those plugins register."""

    _plugin_commands: dict[str, click.Command] | None = None

    def plugin_commands(self) -> dict[str, click.Command]:
        if self._plugin_commands is None:
            from kernel.config import load_raw
            from kernel.pluginmanager import RillPluginManager

            manager = RillPluginManager()
            manager.load(load_raw().plugin_selection())
            found: dict[str, click.Command] = {}

            def register(command: click.Command) -> None:
                if command.name in BUILTIN_COMMANDS or command.name in found:
                    raise RillError(f"two plugins register the command {command.name!r}")
                found[command.name] = command  # type: ignore[index]

            manager.hook.register_commands(register=register)
            self._plugin_commands = found
        return self._plugin_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*BUILTIN_COMMANDS, *self.plugin_commands()})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return builtin_command(name) or self.plugin_commands().get(name)


@click.group(cls=RillGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
@click.version_option(__version__, prog_name="rill")
def cli(debug: bool) -> None:
    """rill: a stream-processing runtime that works the way Flink's runtime works."""
    if debug:
        os.environ["RILL_DEBUG"] = "1"


def _debug(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("RILL_DEBUG", "") not in ("", "0")


def _report_event_log_errors() -> bool:
    """Say what went wrong keeping this command's events, one line each (storing what was put
    off is left to the next reader); True if anything did."""
    errors = drain_buses(settle=False)
    for run_id, error in errors:
        if isinstance(error, RillError):
            click.echo(f"rill: error: {error}", err=True)
        else:
            click.echo(f"rill: error: run {run_id}: an event observer failed: {type(error).__name__}: {error}",
                       err=True)
    return bool(errors)


def usage_error_line(exc: click.UsageError) -> str:
    """One line for a usage error click found: the command, the problem, where help is."""
    command = exc.ctx.command_path if exc.ctx is not None else "rill"
    message = " ".join(exc.format_message().split()).rstrip(".")
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    where = "" if command == "rill" else f"{command}: "
    return f"rill: error: {where}{message} (see '{command} --help')"


def main(argv: list[str] | None = None) -> Any:
    argv = sys.argv[1:] if argv is None else list(argv)
    events_failed = False
    try:
        try:
            cli.main(args=argv, prog_name="rill", standalone_mode=False)
        finally:
            events_failed = _report_event_log_errors()
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        click.echo(usage_error_line(exc), err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"rill: error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("rill: aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("rill: interrupted", err=True)
        sys.exit(130)
    except RillError as exc:
        if _debug(argv):
            import traceback

            traceback.print_exc()
        click.echo(f"rill: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:
        if _debug(argv):
            import traceback

            traceback.print_exc()
        click.echo(
            f"rill: internal error: {describe(exc)} (run with --debug for the traceback)",
            err=True,
        )
        sys.exit(1)
    sys.exit(1 if events_failed else 0)


def console_main() -> None:
    """The ``rill`` command: :func:`main`, then the interpreter's exit without a last full
    collection (:mod:`kernel.lifecycle.process_exit`)."""
    try:
        main()
    finally:
        skip_last_collection()


if __name__ == "__main__":
    console_main()

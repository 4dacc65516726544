"""``rill config``: the effective configuration and where each value came from."""

from __future__ import annotations

import json

import click

from kernel.cli.common import config_options, format_table, open_session
from kernel.config import shown


def _show(value: object) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_options
def config_command(as_json: bool, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Print the effective configuration with the source of every value."""
    session = open_session(config_path, sets)
    config = session.config
    selection = config.plugins
    entries = config.resolved()
    for concern, name in sorted(session.selected_plugins().items()):
        entries.append((f"plugins.{concern}", name, selection.sources.get(concern, "default")))
    if selection.disabled:
        entries.append(("plugins.disabled", list(selection.disabled), selection.sources.get("disabled", "default")))
    for key, source in sorted(config.unused.items()):
        entries.append((key, f"{shown(key, config.raw.values[key])} (unused: its plugin is disabled)", source))
    if config.faults:
        entries.append(("faults", config.faults, config.raw.sources.get("faults", "?")))
    if as_json:
        click.echo(json.dumps({k: {"value": v, "source": s} for k, v, s in entries}, indent=2, default=str))
        return
    click.echo(format_table(("KEY", "VALUE", "SOURCE"), [(k, _show(v), s) for k, v, s in entries]))

"""``rill plugins``: which plugins serve which concern."""

from __future__ import annotations

import json

import click

from kernel.cli.common import config_options, format_table, open_session


@click.command("plugins")
@click.option("--all", "show_all", is_flag=True, help="Also list plugins that are available but not loaded.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_options
def plugins_command(show_all: bool, as_json: bool, config_path: str | None, sets: tuple[str, ...]) -> None:
    """List plugins: name, concern, status, version, module and hooks implemented."""
    session = open_session(config_path, sets)
    manager = session.plugin_manager
    infos = sorted(manager.infos.values(), key=lambda i: (i.concern, i.name))
    if not show_all:
        infos = [i for i in infos if i.plugin is not None]
    for info in infos:
        if info.plugin is None and info.status != "disabled":
            info.hooks = manager.hooks_of_module(info)
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in infos], indent=2))
        return
    rows = [
        (i.name, i.concern, i.status, i.version, i.module, ", ".join(i.hooks) or "-")
        for i in infos
    ]
    click.echo(format_table(("NAME", "CONCERN", "STATUS", "VERSION", "MODULE", "HOOKS"), rows))

"""Plugin ``replay.sql``: the commands that read recorded runs back, the views they read, and
``rill sql``'s DuckDB engine."""

from __future__ import annotations

from kernel import hookimpl


@hookimpl
def register_commands(register):
    from replay.commands.export import export_command
    from replay.commands.metrics import metrics_command
    from replay.commands.replay import replay_command
    from replay.commands.report import report_command
    from replay.commands.runs import runs_command
    from replay.commands.sql import sql_command

    register(runs_command)
    register(sql_command)
    register(metrics_command)
    register(replay_command)
    register(export_command)
    register(report_command)


@hookimpl
def register_views(register):
    from replay.views import VIEWS

    for name, select in VIEWS.items():
        register(name, select)


@hookimpl
def register_sql_engines(register):
    from replay.sql import DuckDBEngine

    register("duckdb", DuckDBEngine())

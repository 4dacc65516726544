"""Options and helpers shared by commands."""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Sequence

import click

from kernel.lifecycle.session import Session


def config_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--config PATH`` and ``--set key=value`` (repeatable) to a command."""

    @click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
                  help="TOML config file (default: ./rill.toml if present).")
    @click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                  help="Override a config key (repeatable), e.g. --set parallelism.default=2.")
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return command(*args, **kwargs)

    return wrapper


def open_session(config_path: str | None, sets: Iterable[str], inject: Iterable[str] = (),
                 plugins: Iterable[Any] = ()) -> Session:
    """A session from ``--config``/``--set``, with ``--inject`` faults (``KIND:key=value,...``)
    and extra plugin objects."""
    from kernel.config import load_raw
    from kernel.faults import parse_inject

    raw = load_raw(config_path, sets)
    tables = [parse_inject(spec) for spec in inject]
    return Session.from_raw(raw.with_faults(tables) if tables else raw, plugins)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain text table with aligned columns."""
    text_rows = [["" if v is None else str(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for row in text_rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(lines)

from __future__ import annotations

import os
import sys

import pytest

from kernel.session import Session


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Every test runs in its own directory with its own event log and no RILL_* variables."""
    for name in list(os.environ):
        if name.startswith("RILL_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RILL_HOME", str(tmp_path / ".rill"))
    return tmp_path


@pytest.fixture
def session_factory():
    """Open sessions: session_factory(*sets, plugins=[...])."""

    def make(*sets: str, plugins=(), **kwargs) -> Session:
        return Session.open(sets=sets, plugins=plugins, **kwargs)

    return make


@pytest.fixture
def cli(capsys):
    """Run the rill CLI in-process: returns (exit_code, stdout, stderr)."""
    from kernel.cli.main import RillGroup, main

    def invoke(*args: str) -> tuple[int, str, str]:
        RillGroup._plugin_commands = None
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


PY = sys.executable

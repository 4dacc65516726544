from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from kernel.lifecycle.session import Session


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


def rill_command() -> list[str]:
    """The installed ``rill`` command of the Python running the tests, as a user's shell finds it."""
    beside = os.path.join(os.path.dirname(sys.executable), "rill")
    found = beside if os.path.isfile(beside) else shutil.which("rill")
    if found is None:
        raise RuntimeError("the rill command is not installed (pip install -e '.[test]')")
    return [found]


@pytest.fixture
def shell(isolated):
    """Run the real ``rill`` command in a process of its own, in the test's directory, as a
    user's shell does: ``shell(*args, hash_seed=None, timeout=300, env=None)`` returns (exit
    code, stdout, stderr). ``hash_seed`` sets ``PYTHONHASHSEED``, so two commands can be made to
    differ in everything a process randomises."""

    def run(*args: str, hash_seed: int | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> tuple[int, str, str]:
        environment = {**os.environ, **(env or {})}
        if hash_seed is not None:
            environment["PYTHONHASHSEED"] = str(hash_seed)
        done = subprocess.run([*rill_command(), *args], capture_output=True, text=True, cwd=os.getcwd(),
                              env=environment, timeout=timeout)
        return done.returncode, done.stdout, done.stderr

    return run


PY = sys.executable


@pytest.fixture(scope="session")
def kafka_cluster():
    """librdkafka's mock Kafka cluster in a process of its own, for the whole test session:
    its bootstrap address (``tests/kafka_mock.py``)."""
    from tests.kafka_mock import MockCluster

    cluster = MockCluster()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()

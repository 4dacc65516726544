"""Views registered by plugins (``register_views``, :mod:`kernel.views`): the order they are
created in, what a registration may not do, and a plugin's view over its own events through
``rill sql`` on the log and on an export, with the plugin and without it."""

from __future__ import annotations

import importlib.metadata
import textwrap
import uuid

import pytest

from kernel import pluginmanager
from kernel.errors import PluginError
from kernel.lifecycle.session import Session
from kernel.views import ViewRegistry

#: a third-party plugin: one event type and the views over it (one reads a kind nobody registers)
DEMO_PLUGIN = '''
from kernel import hookimpl
from kernel.events import Event


class DemoTicked(Event, tag="demo_ticked"):
    count: int = 0


@hookimpl
def register_event_types(register):
    register(DemoTicked)


@hookimpl
def register_views(register):
    register("demo_ticks", """
        SELECT t.run_id, r.job_name, count(*) AS ticks, sum(t.count) AS total
        FROM rill.ev_demo_ticked t JOIN rill.runs r ON r.run_id = t.run_id GROUP BY t.run_id, r.job_name""")
    register("demo_lost_too", "SELECT * FROM demo_lost")  # reads a view registered after it
    register("demo_lost", "SELECT run_id FROM rill.ev_demo_never_registered")
'''


class Demo:
    """The demo plugin, installed as an entry point (``demo.views``) next to the built-in ones."""

    def __init__(self, tmp_path, monkeypatch) -> None:
        self.module = f"demo_views_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{self.module}.py").write_text(textwrap.dedent(DEMO_PLUGIN))
        monkeypatch.syspath_prepend(str(tmp_path))
        self.builtin = pluginmanager.discover_entry_points()
        self.monkeypatch = monkeypatch

    def install(self, present: bool = True) -> None:
        found = [*self.builtin, importlib.metadata.EntryPoint("demo.views", self.module, "rill")] if present \
            else self.builtin
        self.monkeypatch.setattr(pluginmanager, "discover_entry_points", lambda: list(found))

    def record(self, job_name: str, counts: list[int]) -> str:
        """A run that emits one ``demo_ticked`` per count (the plugin must be installed)."""
        session = Session.open(sets=["rill.clock=simulated"])
        assert "demo_ticked" in session.events
        event_type = next(t for t in session.events.types() if t.__module__ == self.module)
        run = session.new_run(job_name)
        run.start()
        for i, count in enumerate(counts):
            run.bus.emit(event_type(time=(i + 1) * 1_000_000, count=count))
        run.finish("finished")
        return run.id


@pytest.fixture
def demo(tmp_path, monkeypatch) -> Demo:
    return Demo(tmp_path, monkeypatch)


def record_without_plugin(job_name: str) -> str:
    session = Session.open(sets=["rill.clock=simulated"])
    run = session.new_run(job_name)
    run.start()
    run.finish("finished")
    return run.id


# -- the registry ------------------------------------------------------------------------------


def test_views_are_created_after_the_views_they_read():
    views = ViewRegistry()
    views.register("level", "SELECT run_id, max(busy) AS busy FROM per_second GROUP BY run_id")
    views.register("per_second", "SELECT run_id, busy_ms AS busy FROM rill.ev_task_metrics_sampled")
    views.register("runs_seen", "SELECT run_id FROM rill.runs")
    assert [view.name for view in views.views()] == ["per_second", "level", "runs_seen"]
    assert [sorted(view.kinds) for view in views.views()] == [["task_metrics_sampled"], [], []]
    assert views.reads(views.views()[1]) == {"per_second"}


def test_a_view_over_a_kind_that_cannot_be_read_is_left_out_with_the_views_reading_it():
    views = ViewRegistry()
    views.register("known", "SELECT * FROM rill.ev_run_started")
    views.register("unknown", "SELECT * FROM rill.ev_nobody_emits JOIN rill.ev_run_started USING (run_id)")
    views.register("over_unknown", "SELECT * FROM unknown")
    views.register("over_known", "SELECT * FROM known")
    assert [view.name for view in views.readable({"run_started"})] == ["known", "over_known"]
    assert [view.name for view in views.readable({"run_started", "nobody_emits"})] == [
        "known", "unknown", "over_unknown", "over_known"]


@pytest.mark.parametrize("name, problem", [
    ("runs", "view name 'runs' must be a snake_case SQL name, not ev_<kind> or a table of the log "
             "(event_tables, events, migrations, runs)"),
    ("ev_run_started", "view name 'ev_run_started' must be a snake_case SQL name"),
    ("Task-Metrics", "view name 'Task-Metrics' must be a snake_case SQL name"),
    ("task_metrics", "two plugins register the view 'task_metrics'"),
])
def test_a_bad_registration_is_refused(name, problem):
    views = ViewRegistry()
    views.register("task_metrics", "SELECT 1 AS x")
    with pytest.raises(PluginError) as refused:
        views.register(name, "SELECT 1 AS x")
    assert str(refused.value).startswith(problem)


def test_views_reading_each_other_in_a_cycle_are_refused():
    views = ViewRegistry()
    views.register("a", "SELECT * FROM b")
    views.register("b", "SELECT * FROM c")
    views.register("c", "SELECT * FROM a")
    with pytest.raises(PluginError, match=r"^views read each other in a cycle: a -> b -> c -> a$"):
        views.views()


def test_the_session_collects_the_views_of_its_plugins():
    assert [view.name for view in Session.open().views.views()] == [
        "task_metrics", "user_metrics", "backpressure", "watermarks", "heartbeats", "task_timeline", "slots",
        "failures", "checkpoints", "checkpoint_subtasks", "backpressure_sampling"]
    disabled = Session.open(sets=["plugins.disabled=replay.sql"])
    assert [view.name for view in disabled.views.views()] == ["checkpoints", "checkpoint_subtasks", "backpressure_sampling"]
    alone = Session.open(sets=["plugins.disabled=replay.sql,backpressure.sampling,checkpointing.default"])
    assert alone.views.views() == []


# -- a plugin's view through rill sql ---------------------------------------------------------------


def test_a_plugins_view_reads_its_events_on_the_log_and_on_an_export(cli, demo, tmp_path):
    demo.install()
    run_id = demo.record("ticking", [2, 3, 4])
    query = "SELECT job_name, ticks, total FROM demo_ticks"
    assert cli("sql", "--format", "csv", query) == (0, "job_name,ticks,total\nticking,3,9\n", "")
    code, out, err = cli("export", "last", "--parquet", str(tmp_path / "export"))
    assert code == 0, err
    views = sorted(path.name for path in (tmp_path / "export" / run_id / "views").iterdir())
    assert views == sorted(f"{name}.parquet" for name in ("task_metrics", "user_metrics", "backpressure",
                                                          "watermarks", "heartbeats", "task_timeline", "slots",
                                                          "failures", "demo_ticks",
                                                          "backpressure_sampling", "checkpoints", "checkpoint_subtasks"))
    assert cli("sql", "--format", "csv", "--parquet", str(tmp_path / "export"), query) == \
        (0, "job_name,ticks,total\nticking,3,9\n", "")
    for target in ((), ("--parquet", str(tmp_path / "export"))):  # left out: it reads a kind nobody registers
        for view in ("demo_lost", "demo_lost_too"):
            code, out, err = cli("sql", *target, f"SELECT * FROM {view}")
            assert (code, out) == (2, "") and err.startswith("rill: error: SQL error: Catalog Error: ") \
                and view in err, err


def test_without_its_plugin_the_view_is_gone_and_the_rest_reads_as_before(cli, demo):
    demo.install()
    demo.record("ticking", [5])
    demo.install(present=False)
    assert cli("sql", "--format", "csv", "SELECT count(*) AS n, sum(count) AS total FROM ev_demo_ticked") == \
        (0, "n,total\n1,5\n", "")
    code, out, err = cli("sql", "SELECT * FROM demo_ticks")
    assert (code, out) == (2, "") and err.startswith("rill: error: SQL error: Catalog Error: ") \
        and "demo_ticks" in err, err
    assert cli("sql", "--format", "csv", "SELECT count(*) AS n FROM failures") == (0, "n\n0\n", "")
    code, out, err = cli("metrics", "last")
    assert code == 0 and out.startswith("run ") and "failures 0, restarts 0" in out, err


def test_a_log_without_the_plugins_events_reads_its_view_as_empty(cli, demo, tmp_path):
    record_without_plugin("before the plugin")
    demo.install()
    query = "SELECT count(*) AS n FROM demo_ticks"
    assert cli("sql", "--format", "csv", "SELECT count(*) AS n FROM information_schema.tables "
               "WHERE table_name = 'ev_demo_ticked'") == (0, "n\n0\n", "")
    assert cli("sql", "--format", "csv", query) == (0, "n\n0\n", "")
    assert cli("export", "last", "--parquet", str(tmp_path / "export"))[0] == 0
    assert cli("sql", "--format", "csv", "--parquet", str(tmp_path / "export"), query) == (0, "n\n0\n", "")

from __future__ import annotations

import importlib.metadata
import json
import sys
import textwrap
import uuid

import pytest

from kernel import hookimpl, pluginmanager
from kernel.config import PluginSelection
from kernel.errors import PluginError
from kernel.pluginmanager import RillPluginManager
from kernel.lifecycle.session import Session

PLUGIN_SOURCE = '''
from kernel import hookimpl
IMPORTED = True

@hookimpl
def create_scheduling_strategy(execution_graph, scheduler, config):
    return {name!r}
'''


@pytest.fixture
def fake_plugins(tmp_path, monkeypatch):
    """Write plugin modules and expose them as entry points of group rill (nothing installed)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_points: list[importlib.metadata.EntryPoint] = []
    modules: dict[str, str] = {}

    def add(entry_name: str, source: str | None = None) -> str:
        module = f"fakeplugin_{uuid.uuid4().hex[:8]}"
        name = entry_name.split(".", 1)[1]
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source or PLUGIN_SOURCE.format(name=name)))
        entry_points.append(importlib.metadata.EntryPoint(entry_name, module, "rill"))
        modules[entry_name] = module
        return module

    monkeypatch.setattr(pluginmanager, "discover_entry_points", lambda: list(entry_points))
    add.modules = modules  # type: ignore[attr-defined]
    return add


def selection(**selected: str) -> PluginSelection:
    disabled = tuple(selected.pop("disabled", "").split(",")) if "disabled" in selected else ()
    return PluginSelection(selected, tuple(d for d in disabled if d), {})


def strategy(manager: RillPluginManager):
    return manager.hook.create_scheduling_strategy(execution_graph=None, scheduler=None, config=None)


DECLARING_SOURCE = PLUGIN_SOURCE + '''

@hookimpl
def register_config(register):
    register({name!r} + " section")


@hookimpl
def register_commands(register):
    register({name!r} + " command")
'''


def declared(manager: RillPluginManager, hook: str) -> list[str]:
    found: list[str] = []
    getattr(manager.hook, hook)(register=found.append)
    return found


def test_every_installed_plugin_declares_and_only_the_selected_one_serves(fake_plugins):
    """Registration is not selection: the plugin not chosen for its concern is imported and its
    config sections registered, but its factories (and commands) are not."""
    default = fake_plugins("scheduling.pipelined-region", DECLARING_SOURCE.format(name="pipelined-region"))
    other = fake_plugins("scheduling.eager", DECLARING_SOURCE.format(name="eager"))
    manager = RillPluginManager()
    manager.load(selection())
    assert strategy(manager) == "pipelined-region"
    assert default in sys.modules and other in sys.modules
    assert sorted(declared(manager, "register_config")) == ["eager section", "pipelined-region section"]
    assert declared(manager, "register_commands") == ["pipelined-region command"]
    assert manager.infos["scheduling.pipelined-region"].status == "selected"
    assert manager.infos["scheduling.eager"].status == "available"
    assert manager.infos["scheduling.eager"].plugin is None


def test_config_selects_another_plugin(fake_plugins):
    fake_plugins("scheduling.pipelined-region", DECLARING_SOURCE.format(name="pipelined-region"))
    eager = fake_plugins("scheduling.eager", DECLARING_SOURCE.format(name="eager"))
    manager = RillPluginManager()
    manager.load(selection(scheduling="eager"))
    assert strategy(manager) == "eager"
    assert eager in sys.modules
    assert declared(manager, "register_commands") == ["eager command"]
    assert sorted(declared(manager, "register_config")) == ["eager section", "pipelined-region section"]


def test_third_party_plugin_of_a_new_concern_loads_like_builtins(fake_plugins):
    module = fake_plugins(
        "metrics-export.prometheus",
        """
        from kernel import hookimpl
        @hookimpl
        def register_commands(register):
            register("prometheus-command")
        """,
    )
    manager = RillPluginManager()
    manager.load(selection())
    found = []
    manager.hook.register_commands(register=found.append)
    assert found == ["prometheus-command"]
    info = manager.infos["metrics-export.prometheus"]
    assert (info.concern, info.name, info.module, info.status) == ("metrics-export", "prometheus", module, "loaded")
    assert info.hooks == ["register_commands"]


def test_disabled_plugin_is_never_imported(fake_plugins):
    fake_plugins("scheduling.pipelined-region")
    ext = fake_plugins("extras.noisy", "raise RuntimeError('must not be imported')\n")
    manager = RillPluginManager()
    manager.load(selection(disabled="extras.noisy"))
    assert ext not in sys.modules
    assert manager.infos["extras.noisy"].status == "disabled"
    manager = RillPluginManager()
    manager.load(selection(disabled="noisy"))  # a unique short name is enough
    assert manager.infos["extras.noisy"].status == "disabled"


def test_unknown_plugin_lists_valid_ones(fake_plugins):
    fake_plugins("scheduling.pipelined-region")
    fake_plugins("scheduling.eager")
    with pytest.raises(PluginError, match=r"unknown plugin 'lazy'. Valid scheduling plugins: eager, pipelined-region"):
        RillPluginManager().load(selection(scheduling="lazy"))


def test_unknown_concern_lists_valid_ones(fake_plugins):
    fake_plugins("scheduling.eager")
    with pytest.raises(PluginError) as err:
        RillPluginManager().load(selection(scheduler="eager"))
    assert "unknown concern 'scheduler'" in str(err.value)
    assert "scheduling" in str(err.value) and "heartbeats" in str(err.value)


def test_unknown_disabled_plugin_is_an_error(fake_plugins):
    fake_plugins("scheduling.eager")
    with pytest.raises(PluginError, match=r"plugins.disabled: unknown plugin 'scheduling.eagre'. Did you mean 'scheduling.eager'"):
        RillPluginManager().load(selection(disabled="scheduling.eagre"))


def test_essential_plugin_refuses_to_be_disabled(fake_plugins):
    fake_plugins("scheduling.pipelined-region")
    fake_plugins("scheduling.eager")
    with pytest.raises(PluginError, match=r"'scheduling.pipelined-region' is essential.*plugins.scheduling = one of eager"):
        RillPluginManager().load(selection(disabled="scheduling.pipelined-region"))
    manager = RillPluginManager()
    manager.load(selection(scheduling="eager", disabled="scheduling.pipelined-region"))
    assert strategy(manager) == "eager"


def test_selecting_a_disabled_plugin_is_an_error(fake_plugins):
    fake_plugins("scheduling.eager")
    with pytest.raises(PluginError, match="selects 'eager', which plugins.disabled disables"):
        RillPluginManager().load(selection(scheduling="eager", disabled="scheduling.eager"))


def test_misspelt_hook_fails_at_start_up(fake_plugins):
    fake_plugins(
        "scheduling.pipelined-region",
        """
        from kernel import hookimpl
        @hookimpl
        def create_sheduling_strategy(config):
            return 1
        """,
    )
    with pytest.raises(PluginError, match="create_sheduling_strategy"):
        RillPluginManager().load(selection())


def test_import_error_names_the_plugin(fake_plugins):
    module = fake_plugins("scheduling.pipelined-region", "import not_a_module_anywhere\n")
    with pytest.raises(PluginError, match=rf"'scheduling.pipelined-region' \({module}\) failed to import: ModuleNotFoundError"):
        RillPluginManager().load(selection())


def test_malformed_entry_point_name(fake_plugins, monkeypatch):
    monkeypatch.setattr(
        pluginmanager, "discover_entry_points", lambda: [importlib.metadata.EntryPoint("noconcern", "x", "rill")]
    )
    with pytest.raises(PluginError, match="must be named '<concern>.<name>'"):
        RillPluginManager().load(selection())


def test_require_names_the_missing_hook(fake_plugins):
    manager = RillPluginManager()
    manager.load(selection())
    with pytest.raises(PluginError, match="no plugin of concern 'graph' implements build_stream_graph"):
        manager.require("build_stream_graph", "graph")


def test_inline_plugin_registered_by_a_session(fake_plugins):
    fake_plugins("scheduling.pipelined-region")

    class Inline:
        @hookimpl
        def create_failover_strategy(self, execution_graph, config):
            return ("full", config.get("rill.seed"))

    session = Session.open(sets=["rill.seed=7"], plugins=[Inline()], environ={})
    assert session.plugin_manager.hook.create_failover_strategy(execution_graph=None, config=session.config) == ("full", 7)


def test_plugins_command_lists_and_json(fake_plugins, cli):
    fake_plugins("scheduling.pipelined-region")
    fake_plugins("scheduling.eager")
    code, out, err = cli("plugins")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "CONCERN", "STATUS", "VERSION", "MODULE", "HOOKS"]
    assert any(l.split()[:3] == ["pipelined-region", "scheduling", "selected"] for l in lines)
    assert not any(l.startswith("eager") for l in lines)
    code, out, _ = cli("plugins", "--all", "--json")
    listed = {(p["concern"], p["name"]): p for p in json.loads(out)}
    assert listed[("scheduling", "eager")]["status"] == "available"
    assert listed[("scheduling", "eager")]["hooks"] == ["create_scheduling_strategy"]
    assert listed[("scheduling", "pipelined-region")]["status"] == "selected"
    code, out, _ = cli("plugins", "--all", "--json", "--set", "plugins.scheduling=eager")
    listed = {(p["concern"], p["name"]): p["status"] for p in json.loads(out)}
    assert listed[("scheduling", "eager")] == "selected"
    assert listed[("scheduling", "pipelined-region")] == "available"

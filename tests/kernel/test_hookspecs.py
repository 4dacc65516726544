"""Meta-tests: every hook spec is documented and can be exercised through the plugin manager."""

from __future__ import annotations

import inspect

import pytest

from kernel import hookimpl, hookspecs
from kernel.pluginmanager import RillPluginManager

SPECS = {
    name: func
    for name, func in vars(hookspecs).items()
    if callable(func) and hasattr(func, "rill_spec")
}


def spec_options(name: str) -> dict:
    return getattr(SPECS[name], "rill_spec")


def test_specs_exist_for_every_family():
    families = {
        "graph": {"build_stream_graph", "allow_chaining", "build_job_graph", "build_execution_graph"},
        "scheduling": {"create_scheduling_strategy", "create_restart_strategy", "create_failover_strategy"},
        "mailbox": {"create_mailbox_processor"},
        "watermarking": {"create_watermark_generator", "create_watermark_valve", "create_watermark_alignment"},
        "checkpointing": {"create_checkpoint_coordinator", "create_checkpoint_barrier_handler"},
        "heartbeats": {"create_heartbeat_manager"},
        "backpressure": {"create_back_pressure_monitor"},
        "backend": {"create_execution_backend"},
        "workers": {"create_resource_manager_driver"},
        "events": {"register_event_types", "create_event_observers", "open_event_store"},
        "registration": {"register_commands", "register_config", "register_sql_engines", "register_views"},
    }
    assert set().union(*families.values()) == set(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_is_documented(name):
    func = SPECS[name]
    doc = inspect.getdoc(func) or ""
    summary = doc.split("\n\n")[0]
    assert summary and summary.endswith("."), f"{name}: summary paragraph"
    assert "Called:" in doc, f"{name}: says when it is called"
    for param in inspect.signature(func).parameters:
        assert f":param {param}:" in doc, f"{name}: documents {param}"
    assert ":returns:" in doc, f"{name}: documents its result"
    firstresult = spec_options(name).get("firstresult", False)
    assert ("Stops at first non-None result." in doc) == firstresult, f"{name}: firstresult sentence"


def _impl(name: str, value):
    params = list(inspect.signature(SPECS[name]).parameters)
    namespace: dict = {}
    exec(f"def {name}({', '.join(params)}):\n    return VALUE\n", {"VALUE": value}, namespace)
    return hookimpl(namespace[name])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_is_exercised_with_keyword_arguments(name):
    """Two plugins implement the hook; calling it with exactly the spec's keywords reaches them
    with the calling convention the spec declares (firstresult or all results)."""
    manager = RillPluginManager()
    first = type("First", (), {name: staticmethod(_impl(name, None))})()
    second = type("Second", (), {name: staticmethod(_impl(name, f"{name}-result"))})()
    manager.register(first, name="first")
    manager.register(second, name="second")
    kwargs = {param: object() for param in inspect.signature(SPECS[name]).parameters}
    options = spec_options(name)
    if options.get("historic"):
        seen = []
        getattr(manager.hook, name).call_historic(result_callback=seen.append, kwargs=kwargs)
        assert seen == [f"{name}-result"]
        return
    result = getattr(manager.hook, name)(**kwargs)
    if options.get("firstresult"):
        assert result == f"{name}-result"
    else:
        assert result == [f"{name}-result"]  # every implementation is called; None results are dropped

from __future__ import annotations

from typing import Annotated

import msgspec
import pytest

from kernel.config import Section, load_raw, validate
from kernel.configtypes import DurationMs, MemoryBytes, parse_duration_ms, parse_memory_bytes
from kernel.errors import ConfigError
from kernel.options import KERNEL_SECTIONS


class DemoOptions(Section):
    interval: DurationMs = msgspec.field(name="demo.interval", default=10_000)
    timeout: DurationMs = msgspec.field(name="demo.timeout", default=50_000)
    slots: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(name="demo.numberOfSlots", default=1)
    segment: MemoryBytes = msgspec.field(name="demo.segment-size", default=32 * 1024)

    def check(self) -> None:
        if self.timeout < self.interval:
            raise ValueError("demo.timeout must be at least demo.interval")


SECTIONS = (*KERNEL_SECTIONS, DemoOptions)


def config(tmp_path, toml: str | None = None, sets=(), env=None):
    if toml is not None:
        (tmp_path / "rill.toml").write_text(toml)
    return validate(load_raw(sets=sets, environ=env or {}, cwd=tmp_path), SECTIONS)


def test_defaults_have_source_default(tmp_path):
    cfg = config(tmp_path)
    assert cfg.section(DemoOptions).interval == 10_000
    assert cfg.get("rill.clock") == "realtime"
    assert cfg.source("demo.interval") == "default"


def test_precedence_file_env_set(tmp_path):
    toml = '[demo]\ninterval = "20 s"\ntimeout = "2 min"\nnumberOfSlots = 2\n'
    cfg = config(tmp_path, toml)
    assert (cfg.get("demo.interval"), cfg.get("demo.timeout"), cfg.get("demo.numberOfSlots")) == (20_000, 120_000, 2)
    assert cfg.source("demo.interval").endswith("rill.toml")

    cfg = config(tmp_path, toml, env={"RILL_DEMO_INTERVAL": "30 s", "RILL_DEMO_NUMBEROFSLOTS": "3"})
    assert cfg.get("demo.interval") == 30_000
    assert cfg.get("demo.numberOfSlots") == 3
    assert cfg.source("demo.interval") == "env RILL_DEMO_INTERVAL"

    cfg = config(tmp_path, toml, sets=["demo.interval=40s"], env={"RILL_DEMO_INTERVAL": "30 s"})
    assert cfg.get("demo.interval") == 40_000
    assert cfg.source("demo.interval") == "--set"
    assert cfg.get("demo.timeout") == 120_000  # untouched keys keep the file's value


def test_dotted_keys_and_tables_are_the_same(tmp_path):
    cfg = config(tmp_path, '"demo.interval" = 1500\n')
    assert cfg.get("demo.interval") == 1500


def test_typo_names_the_key_and_lists_valid_keys(tmp_path):
    with pytest.raises(ConfigError) as err:
        config(tmp_path, sets=["demo.intervall=3"])
    message = str(err.value)
    assert "unknown config key 'demo.intervall' (--set)" in message
    assert "Did you mean 'demo.interval'?" in message
    assert "demo.numberOfSlots" in message and "demo.timeout" in message


def test_typo_in_file_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown config key 'demo.intervl' \(.*rill.toml\)"):
        config(tmp_path, "[demo]\nintervl = 1\n")


def test_unknown_environment_variable(tmp_path):
    with pytest.raises(ConfigError, match="RILL_DEMO_INTERVL is not a rill config key. Did you mean RILL_DEMO_INTERVAL"):
        config(tmp_path, env={"RILL_DEMO_INTERVL": "1"})


def test_reserved_environment_variables_are_not_keys(tmp_path):
    cfg = config(tmp_path, env={"RILL_HOME": "/x", "RILL_DEBUG": "1"})
    assert cfg.get("rill.seed") == 0


def test_bad_values_are_named(tmp_path):
    with pytest.raises(ConfigError, match=r"config key 'demo.interval' \(--set\): expected a duration like '10 s', got 'soon'$"):
        config(tmp_path, sets=["demo.interval=soon"])
    with pytest.raises(ConfigError, match=r"config key 'demo.numberOfSlots' \(--set\): Expected `int` >= 1"):
        config(tmp_path, sets=["demo.numberOfSlots=0"])
    with pytest.raises(ConfigError, match=r"'rill.clock' \(--set\): expected one of realtime, simulated, got 'fast'"):
        config(tmp_path, sets=["rill.clock=fast"])


def test_relations_between_keys(tmp_path):
    with pytest.raises(ConfigError, match="demo.timeout must be at least demo.interval"):
        config(tmp_path, sets=["demo.timeout=1 s"])


def test_invalid_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="is not valid TOML"):
        config(tmp_path, "demo = [\n")
    with pytest.raises(ConfigError, match="does not exist"):
        load_raw(config_path=tmp_path / "nope.toml", environ={})


def test_set_needs_key_value(tmp_path):
    with pytest.raises(ConfigError, match="expected key=value"):
        config(tmp_path, sets=["demo.interval"])


def test_plugin_selection_from_all_layers(tmp_path):
    (tmp_path / "rill.toml").write_text('[plugins]\nscheduling = "eager"\ndisabled = ["eventlog.duckdb"]\n')
    raw = load_raw(environ={"RILL_PLUGINS_WATERMARKING": "aligned"}, cwd=tmp_path, sets=["plugins.heartbeats=phi-accrual"])
    selection = raw.plugin_selection()
    assert dict(selection.selected) == {"scheduling": "eager", "watermarking": "aligned", "heartbeats": "phi-accrual"}
    assert selection.disabled == ("eventlog.duckdb",)
    assert selection.sources["watermarking"] == "env RILL_PLUGINS_WATERMARKING"
    assert raw.with_sets(["plugins.disabled=a,b"]).plugin_selection().disabled == ("a", "b")


def test_units():
    assert parse_duration_ms("10 s") == 10_000
    assert parse_duration_ms("1 min") == 60_000
    assert parse_duration_ms("1.5h") == 5_400_000
    assert parse_duration_ms(250) == 250
    assert parse_duration_ms("250") == 250
    assert parse_duration_ms("1500 us") == 1
    assert parse_memory_bytes("32 kb") == 32768
    assert parse_memory_bytes("1 mb") == 1 << 20
    with pytest.raises(ValueError, match="unknown time unit 'parsecs'"):
        parse_duration_ms("3 parsecs")


def test_effective_lists_every_key_with_source(tmp_path):
    cfg = config(tmp_path, sets=["demo.interval=2 s"])
    effective = {k: (v, s) for k, v, s in cfg.effective()}
    assert effective["demo.interval"] == (2000, "--set")
    assert effective["demo.timeout"] == (50_000, "default")
    assert set(effective) == {info.key for info in cfg.keys()}


def test_the_keys_of_a_plugin_not_selected_are_listed_and_checked(shell):
    """Registration is not selection: with the default heartbeat managers selected, ``rill
    config`` still lists the phi-accrual detector's keys and refuses a bad value of one."""
    code, out, err = shell("config", "--set", "heartbeats.phi-accrual.threshold=9")
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert rows["plugins.heartbeats"] == ["default", "default"]
    assert rows["heartbeats.phi-accrual.threshold"] == ["9.0", "--set"]
    assert rows["heartbeats.phi-accrual.max-sample-size"] == ["1000", "default"]
    assert rows["web.backpressure.num-samples"] == ["100", "default"]
    code, out, err = shell("config", "--set", "heartbeats.phi-accrual.threshold=0")
    assert (code, out, err) == (2, "", "rill: error: config key 'heartbeats.phi-accrual.threshold' (--set): "
                                       "Expected `float` > 0.0, got 0\n")

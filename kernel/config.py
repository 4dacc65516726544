"""Configuration: Flink's key names, validated into frozen msgspec sections.

Sources, lowest precedence first: defaults, the TOML file (``rill.toml`` in the working
directory or ``--config PATH``), ``RILL_*`` environment variables, ``--set key=value``.
Keys are flat and dotted like Flink's (``heartbeat.interval``); a TOML table is the same as a
dotted prefix. Two tables are special: ``[plugins]`` chooses one implementation per concern
(and ``disabled`` lists plugins never to load), ``[[faults]]`` lists injected faults.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable, Literal, Mapping, get_args, get_origin

import msgspec

from kernel.configtypes import unit_of
from kernel.errors import ConfigError

DEFAULT_CONFIG_FILE = "rill.toml"
ENV_PREFIX = "RILL_"
#: Environment variables of rill that are not config keys.
RESERVED_ENV = frozenset({"RILL_HOME", "RILL_CONFIG", "RILL_DEBUG"})
DEFAULT_HOME = ".rill"
PLUGINS_PREFIX = "plugins."
FAULTS_KEY = "faults"


def rill_home() -> Path:
    """``$RILL_HOME``: where rill keeps what outlives a run (default ``./.rill``): the event
    log, spools, cached Python environments, what it ships to Spark."""
    return Path(os.environ.get("RILL_HOME", DEFAULT_HOME)).expanduser()


class Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A group of config keys. Each field's encoded name is its full key::

        class HeartbeatOptions(Section):
            interval: DurationMs = msgspec.field(name="heartbeat.interval", default=10_000)

    Override ``check`` to validate relations between keys (raise ``ValueError``).
    ``deprecated_keys`` maps Flink's older names of the section's keys to the current ones:
    a value given under an old name counts for the current key unless that is set too.
    """

    #: deprecated key -> the current key it stands for
    deprecated_keys: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        try:
            self.check()
        except ValueError as exc:
            raise msgspec.ValidationError(str(exc)) from None

    def check(self) -> None:
        """Validate relations between this section's values; raise ``ValueError``."""

    def resolved(self) -> dict[str, tuple[Any, str]]:
        """Values the section's keys take in effect where they differ from the configured
        ones (a default worked out from the environment, a relative path made absolute):
        key -> (value, how it was worked out). ``rill config`` shows them."""
        return {}


@dataclass(frozen=True)
class KeyInfo:
    """One config key: which section holds it and how its value is read."""

    key: str
    section: type[Section]
    attribute: str
    annotation: Any
    default: Any
    description: str

    @property
    def unit(self):
        return unit_of(self.annotation)


@functools.cache
def section_keys(section: type[Section]) -> tuple[KeyInfo, ...]:
    """The keys a section declares, in field order (derived once per section)."""
    keys = []
    for field in msgspec.structs.fields(section):  # annotations as declared, Annotated included
        default = field.default if field.default is not msgspec.NODEFAULT else None
        if field.default_factory is not msgspec.NODEFAULT:
            default = field.default_factory()
        keys.append(KeyInfo(field.encode_name, section, field.name, field.type, default, _description(field.type)))
    return tuple(keys)


def _description(annotation: Any) -> str:
    """The description a ``msgspec.Meta`` of the annotation gives (the last one that does)."""
    found = ""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, msgspec.Meta) and meta.description:
            found = meta.description
    return found


@dataclass(frozen=True)
class PluginSelection:
    """The ``[plugins]`` table: concern -> chosen plugin name, and plugins never to load."""

    selected: Mapping[str, str]
    disabled: tuple[str, ...]
    sources: Mapping[str, str]


@dataclass
class RawConfig:
    """Merged but unvalidated values with the source each came from."""

    values: dict[str, Any]
    sources: dict[str, str]
    env: dict[str, str]

    def plugin_selection(self) -> PluginSelection:
        selected: dict[str, str] = {}
        disabled: list[str] = []
        sources: dict[str, str] = {}
        for key, value in self.values.items():
            if not key.startswith(PLUGINS_PREFIX):
                continue
            concern = key[len(PLUGINS_PREFIX):]
            sources[concern] = self.sources[key]
            if concern == "disabled":
                disabled = _as_list(value, key, self.sources[key])
            elif isinstance(value, str):
                selected[concern] = value
            else:
                raise ConfigError(
                    f"config key {key!r} ({self.sources[key]}): expected a plugin name, got {value!r}"
                )
        return PluginSelection(selected, tuple(disabled), sources)

    def faults(self) -> list[Any]:
        value = self.values.get(FAULTS_KEY, [])
        return list(value) if isinstance(value, list) else [value]

    def with_faults(self, tables: Iterable[dict[str, Any]]) -> RawConfig:
        """A copy with more fault tables (``rill run --inject``)."""
        values = dict(self.values)
        values[FAULTS_KEY] = self.faults() + list(tables)
        return RawConfig(values, {**self.sources, FAULTS_KEY: "--inject"}, dict(self.env))

    def with_sets(self, sets: Iterable[str]) -> RawConfig:
        """A copy with ``key=value`` overrides applied on top."""
        values, sources = dict(self.values), dict(self.sources)
        for key, value in parse_sets(sets).items():
            values[key] = value
            sources[key] = "--set"
        return RawConfig(values, sources, dict(self.env))


def _as_list(value: Any, key: str, source: str) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"config key {key!r} ({source}): expected a list of names, got {value!r}")


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, key + "."))
        else:
            flat[key] = value
    return flat


def parse_value(text: str) -> Any:
    """A ``--set`` or environment value: a TOML literal if it is one, else the plain string."""
    import tomllib  # (config files and values given are rare: not at every start)

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_sets(sets: Iterable[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in sets:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected key=value")
        values[key] = parse_value(text.strip())
    return values


def load_raw(
    config_path: str | os.PathLike | None = None,
    sets: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
) -> RawConfig:
    """Merge the file, environment and ``--set`` layers (not yet validated)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if config_path is not None and not str(config_path):
        raise ConfigError("--config: give the path of a TOML file")
    path = config_path or environ.get("RILL_CONFIG")
    if path is None:
        candidate = Path(cwd or os.getcwd()) / DEFAULT_CONFIG_FILE
        path = candidate if candidate.is_file() else None
    elif not Path(path).is_file():
        what = "is not a regular file" if Path(path).exists() else "does not exist"
        raise ConfigError(f"config file {str(path)!r} {what}")
    if path is not None:
        import tomllib

        try:
            table = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from None
        for key, value in _flatten(table).items():
            if key.startswith(FAULTS_KEY + "."):
                raise ConfigError(f"config file {str(path)!r}: write faults as [[faults]] tables")
            values[key] = value
            sources[key] = str(path)
    env = {
        name: value
        for name, value in environ.items()
        if name.startswith(ENV_PREFIX) and name not in RESERVED_ENV
    }
    raw = RawConfig(values, sources, env)
    # Plugin choices from the environment are needed before plugins are loaded.
    for name, text in env.items():
        if name.startswith(ENV_PREFIX + "PLUGINS_"):
            concern = name[len(ENV_PREFIX + "PLUGINS_"):].lower().replace("_", "-")
            raw.values[PLUGINS_PREFIX + concern] = parse_value(text)
            raw.sources[PLUGINS_PREFIX + concern] = f"env {name}"
    return raw.with_sets(sets)


def env_name(key: str) -> str:
    """The environment variable setting ``key``: ``heartbeat.rpc-failure-threshold`` ->
    ``RILL_HEARTBEAT_RPC_FAILURE_THRESHOLD``; rill's own ``rill.seed`` -> ``RILL_SEED``."""
    if key.startswith("rill."):
        key = key[len("rill."):]
    return ENV_PREFIX + re.sub(r"[^0-9A-Za-z]+", "_", key).upper()


class Config:
    """The validated configuration: typed sections plus where every value came from."""

    def __init__(
        self,
        sections: dict[type[Section], Section],
        keys: dict[str, KeyInfo],
        sources: dict[str, str],
        plugins: PluginSelection,
        faults: list[Any],
        raw: RawConfig,
    ):
        self._sections = sections
        self._keys = keys
        self._sources = sources
        self.plugins = plugins
        self.faults = faults
        self.raw = raw
        #: keys of installed plugins that are not loaded (key -> source)
        self.unused: dict[str, str] = {}

    def section(self, section: type[Section]) -> Any:
        """The validated values of one section (a frozen Struct)."""
        try:
            return self._sections[section]
        except KeyError:
            raise ConfigError(f"config section {section.__name__} is not registered") from None

    def get(self, key: str) -> Any:
        info = self._keys.get(key)
        if info is None:
            raise ConfigError(_unknown_key_message(key, "lookup", self._keys))
        return getattr(self._sections[info.section], info.attribute)

    def source(self, key: str) -> str:
        return self._sources.get(key, "default")

    def keys(self) -> list[KeyInfo]:
        return sorted(self._keys.values(), key=lambda info: info.key)

    def effective(self) -> list[tuple[str, Any, str]]:
        """(key, value, source) for every key, sorted by key; a password set is shown as
        ``HIDDEN`` (what ``rill config`` prints and a run's ``runs`` row records)."""
        return [(info.key, shown(info.key, self.get(info.key)), self.source(info.key)) for info in self.keys()]

    def resolved(self) -> list[tuple[str, Any, str]]:
        """As :meth:`effective`, with the values sections work out in effect (``Section.resolved``)."""
        worked_out: dict[str, tuple[Any, str]] = {}
        for section in self._sections.values():
            worked_out.update(section.resolved())
        rows = []
        for key, value, source in self.effective():
            if key in worked_out:
                value, how = worked_out[key]
                source = how if source == "default" else f"{source}, {how}"
            rows.append((key, value, source))
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Effective flat values (JSON-friendly), with the plugin choices."""
        flat: dict[str, Any] = {key: value for key, value, _ in self.effective()}
        for concern, name in sorted(self.plugins.selected.items()):
            flat[PLUGINS_PREFIX + concern] = name
        if self.plugins.disabled:
            flat[PLUGINS_PREFIX + "disabled"] = list(self.plugins.disabled)
        if self.faults:
            flat[FAULTS_KEY] = [msgspec.to_builtins(fault) for fault in self.faults]
        return flat


#: what the value of a sensitive key is shown and recorded as (Flink's hidden content)
HIDDEN = "******"


def shown(key: str, value: Any) -> Any:
    """``value`` of ``key`` as it may be shown or recorded: a password's set value hidden."""
    return HIDDEN if value is not None and "password" in key.lower() else value


def _unknown_key_message(key: str, source: str, keys: Mapping[str, KeyInfo]) -> str:
    namespace = key.split(".", 1)[0]
    related = sorted(k for k in keys if k.split(".", 1)[0] == namespace) or sorted(keys)
    import difflib

    close = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.75)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"unknown config key {key!r} ({source}).{hint} Valid keys: {', '.join(related)}"


def _convert(info: KeyInfo, value: Any, source: str) -> Any:
    unit = info.unit
    try:
        if unit is not None and value is not None:
            value = unit.parse(value)
        return msgspec.convert(value, info.annotation, strict=False)
    except (ValueError, msgspec.ValidationError) as exc:
        detail = str(exc).replace(" - at `$`", "")
        if unit is not None and repr(unit.example) not in detail:
            detail += f" (e.g. {unit.example!r})"
        choices = literal_choices(info.annotation)
        if choices:
            detail = f"expected one of {', '.join(map(str, choices))}"
        raise ConfigError(f"config key {info.key!r} ({source}): {detail}, got {value!r}") from None


def override_section(section: Section, values: Mapping[str, Any], source: str) -> Section:
    """``section`` with the values of its keys among ``values`` (deprecated names too) converted
    and validated as a config layer's values are; other keys in ``values`` are ignored."""
    keys = {info.key: info for info in section_keys(type(section))}
    given = dict(values)
    sources = dict.fromkeys(given, source)
    _apply_deprecated_keys(given, sources, [type(section)], keys)
    changes = {info.attribute: _convert(info, given[key], sources[key]) for key, info in keys.items() if key in given}
    if not changes:
        return section
    try:
        return msgspec.structs.replace(section, **changes)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration [{source}]: {exc}") from None


def literal_choices(annotation: Any) -> tuple[Any, ...]:
    """The allowed values of a ``Literal`` annotation (inside ``Annotated``/``Optional``)."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    for arg in get_args(annotation):
        found = literal_choices(arg)
        if found:
            return found
    return ()


def _apply_deprecated_keys(values: dict[str, Any], sources: dict[str, str], sections: Iterable[type[Section]],
                           keys: Mapping[str, KeyInfo]) -> None:
    """Values given under a deprecated key move to the current key (which wins when both are set)."""
    for section in sections:
        for old, new in section.deprecated_keys.items():
            if new not in keys:
                raise ConfigError(f"{section.__name__} maps the deprecated key {old!r} to {new!r}, which it lacks")
            if old not in values:
                continue
            value, source = values.pop(old), sources.pop(old, "?")
            if new not in values:
                values[new] = value
                sources[new] = f"{source}, as {old}"


def validate(raw: RawConfig, sections: Iterable[type[Section]], dormant: Iterable[str] = ()) -> Config:
    """Check every key against the registered sections and build the typed config.

    ``dormant`` are key prefixes of disabled plugins (every other installed plugin registers
    its sections): their keys are kept (``Config.unused``) instead of being unknown, so
    disabling a plugin does not invalidate a config file.
    """
    dormant = tuple(dormant)
    unused: dict[str, str] = {}
    keys: dict[str, KeyInfo] = {}
    for section in sections:
        for info in section_keys(section):
            if info.key in keys and keys[info.key].section is not section:
                raise ConfigError(
                    f"config key {info.key!r} is declared by both {keys[info.key].section.__name__} "
                    f"and {section.__name__}"
                )
            keys[info.key] = info
    values = dict(raw.values)
    sources = dict(raw.sources)
    _apply_deprecated_keys(values, sources, sections, keys)
    by_env = {env_name(key): key for key in keys}
    for name, text in raw.env.items():
        if name.startswith(ENV_PREFIX + "PLUGINS_"):
            continue
        key = by_env.get(name)
        if key is None:
            import difflib

            close = difflib.get_close_matches(name, list(by_env), n=1, cutoff=0.75)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise ConfigError(f"environment variable {name} is not a rill config key.{hint}")
        if not sources.get(key, "").startswith("--set"):
            values[key] = parse_value(text)
            sources[key] = f"env {name}"
    per_section: dict[type[Section], dict[str, Any]] = {section: {} for section in sections}
    for key, value in values.items():
        if key.startswith(PLUGINS_PREFIX) or key == FAULTS_KEY:
            continue
        info = keys.get(key)
        if info is None:
            if key.startswith(dormant) and dormant:
                unused[key] = sources.get(key, "?")
                continue
            raise ConfigError(_unknown_key_message(key, sources.get(key, "?"), keys))
        per_section[info.section][info.key] = _convert(info, value, sources[key])
    built: dict[type[Section], Section] = {}
    for section, given in per_section.items():
        try:
            built[section] = msgspec.convert(given, section, strict=False)
        except msgspec.ValidationError as exc:
            named = ", ".join(f"{k} ({sources[k]})" for k in given) or "defaults"
            raise ConfigError(f"invalid configuration [{named}]: {exc}") from None
    from kernel.faults import build_faults

    faults = build_faults(raw.faults())
    config = Config(built, keys, {k: s for k, s in sources.items() if k in keys}, raw.plugin_selection(), faults, raw)
    config.unused = unused
    return config

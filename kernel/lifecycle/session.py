"""A configured kernel: plugins loaded, configuration validated, event types registered (and,
once something reads recorded runs, views)."""

from __future__ import annotations

import os
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from kernel.config import Config, RawConfig, Section, load_raw, validate
from kernel.runtime.cluster_events import CLUSTER_EVENT_TYPES
from kernel.events import KERNEL_EVENT_TYPES, EventRegistry
from kernel.runtime.kafka_events import KAFKA_EVENT_TYPES
from kernel.options import KERNEL_SECTIONS
from kernel.pluginmanager import RillPluginManager

if TYPE_CHECKING:
    from kernel.views import ViewRegistry


class Session:
    def __init__(self, plugin_manager: RillPluginManager, config: Config) -> None:
        self.plugin_manager = plugin_manager
        self.config = config
        self.events = EventRegistry(KERNEL_EVENT_TYPES + CLUSTER_EVENT_TYPES + KAFKA_EVENT_TYPES)
        plugin_manager.hook.register_event_types(register=self.events.register)
        #: input files runs of this session read instead of the job's own (a re-execution)
        self.input_overrides: dict[str, str] = {}
        #: plugin objects registered besides the discovered ones (kept by ``with_sets``)
        self.extra_plugins: tuple[Any, ...] = ()

    @classmethod
    def open(
        cls,
        config_path: str | os.PathLike | None = None,
        sets: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
        cwd: str | os.PathLike | None = None,
        plugins: Iterable[Any] = (),
        entry_points: Iterable[Any] | None = None,
    ) -> Session:
        """Load config layers, load the chosen plugins, validate.

        ``plugins`` are extra plugin objects registered after discovery (tests, embedding).
        """
        return cls.from_raw(load_raw(config_path, sets, environ, cwd), plugins, entry_points)

    @classmethod
    def from_raw(cls, raw: RawConfig, plugins: Iterable[Any] = (), entry_points: Iterable[Any] | None = None) -> Session:
        manager = RillPluginManager()
        manager.load(raw.plugin_selection(), entry_points)
        for plugin in plugins:
            manager.register(plugin)
        sections: list[type[Section]] = list(KERNEL_SECTIONS)
        manager.hook.register_config(register=lambda section: sections.append(section)
                                     if section not in sections else None)  # plugins may share a section
        prefixes = {info.id: (f"{info.concern}.", f"{info.name}.") for info in manager.infos.values()}
        dormant = {p for info in manager.infos.values() if info.status == "disabled" for p in prefixes[info.id]}
        registered = {p for info in manager.infos.values() if info.status != "disabled" for p in prefixes[info.id]}
        config = validate(raw, sections, sorted(dormant - registered))
        session = cls(manager, config)
        session.extra_plugins = tuple(plugins)
        return session

    def with_sets(self, sets: Iterable[str]) -> Session:
        """A new session with ``key=value`` overrides (e.g. a what-if re-execution)."""
        session = Session.from_raw(self.config.raw.with_sets(sets), self.extra_plugins)
        session.input_overrides = dict(self.input_overrides)
        return session

    def selected_plugins(self) -> dict[str, str]:
        """concern -> plugin name of every loaded plugin (extensions: comma-joined)."""
        chosen: dict[str, list[str]] = {}
        for info in self.plugin_manager.infos.values():
            if info.plugin is not None:
                chosen.setdefault(info.concern, []).append(info.name)
        return {concern: ",".join(sorted(names)) for concern, names in sorted(chosen.items())}

    def new_run(self, job_name: str, **kwargs: Any):
        from kernel.lifecycle.run import Run

        return Run(self, job_name, **kwargs)

    @cached_property
    def views(self) -> ViewRegistry:
        """The SQL views plugins register (``register_views``), collected when first read."""
        from kernel.views import ViewRegistry  # what reads recorded runs needs it; a run does not

        views = ViewRegistry()
        self.plugin_manager.hook.register_views(register=views.register)
        return views

"""Finds, selects, blocks and loads plugins.

Built-in and third-party plugins are found the same way: entry points of group ``rill``
named ``<concern>.<name>``. Registration is not selection: every installed plugin registers
what it declares (:data:`DECLARATION_HOOKS`: its config sections, event types and views), so
its keys are valid and recorded runs are readable whatever is selected; only the plugins
selected for their concern (``[plugins]``; extensions: all) register their other hooks
(factories, commands, engines). Disabled plugins are blocked *before* their module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import pluggy

from kernel import PROJECT, hookspecs
from kernel.concerns import KERNEL_CONCERNS, Concern, concern_of
from kernel.entrypoints import entry_points
from kernel.config import PluginSelection
from kernel.errors import PluginError

ENTRY_POINT_GROUP = PROJECT
#: the hooks every installed plugin registers, selected or not
DECLARATION_HOOKS = ("register_config", "register_event_types", "register_views")


def discover_entry_points() -> list[Any]:
    """Entry points of group ``rill`` of every installed distribution
    (``importlib.metadata.EntryPoint`` or :class:`kernel.entrypoints.EntryPoint`)."""
    return entry_points(ENTRY_POINT_GROUP)


@dataclass
class PluginInfo:
    """A discovered plugin and what became of it."""

    id: str
    concern: str
    name: str
    module: str
    entry_point: Any = None
    status: str = "available"  # selected | loaded | available (declarations only) | disabled
    #: the registered plugin module, when selected or loaded
    plugin: Any = None
    hooks: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        """Version of the distribution it comes from (read when asked: parsing a
        distribution's metadata is slow)."""
        dist = getattr(self.entry_point, "dist", None)
        return dist.version if dist is not None else "-"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "concern": self.concern,
            "status": self.status,
            "module": self.module,
            "version": self.version,
            "hooks": self.hooks,
        }


class Declarations:
    """An installed plugin that is not selected: only the hooks it declares with
    (:data:`DECLARATION_HOOKS`), never its factories."""

    def __init__(self, module: Any) -> None:
        for name in DECLARATION_HOOKS:
            function = getattr(module, name, None)
            if function is not None:
                setattr(self, name, function)


class RillPluginManager(pluggy.PluginManager):
    """pluggy's manager with rill's discovery, per-concern selection and listing."""

    def __init__(self) -> None:
        super().__init__(PROJECT)
        self.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}

    # -- discovery --------------------------------------------------------------------------

    def _discover(self, found: Iterable[Any]) -> None:
        for ep in found:
            concern, dot, name = ep.name.partition(".")
            if not dot or not concern or not name:
                raise PluginError(
                    f"plugin entry point {ep.name!r} ({ep.value}) must be named '<concern>.<name>'"
                )
            if ep.name in self.infos:
                other = self.infos[ep.name]
                if other.module != ep.value:
                    raise PluginError(
                        f"two plugins are named {ep.name!r}: {other.module} and {ep.value}"
                    )
                continue
            self.infos[ep.name] = PluginInfo(ep.name, concern, name, ep.value, ep)

    def concerns(self) -> dict[str, Concern]:
        """Every concern the kernel knows plus the ones discovered plugins serve."""
        found = dict(KERNEL_CONCERNS)
        for info in self.infos.values():
            found.setdefault(info.concern, concern_of(info.concern))
        return found

    def plugins_of(self, concern: str) -> list[PluginInfo]:
        return sorted((i for i in self.infos.values() if i.concern == concern), key=lambda i: i.name)

    def _resolve_disabled(self, names: Iterable[str]) -> set[str]:
        resolved = set()
        for name in names:
            if name in self.infos:
                resolved.add(name)
                continue
            matches = [i.id for i in self.infos.values() if i.name == name]
            if len(matches) == 1:
                resolved.add(matches[0])
                continue
            valid = sorted(self.infos)
            if len(matches) > 1:
                raise PluginError(
                    f"plugins.disabled: {name!r} is ambiguous; write one of {', '.join(matches)}"
                )
            import difflib

            close = difflib.get_close_matches(name, valid, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise PluginError(
                f"plugins.disabled: unknown plugin {name!r}.{hint} Valid plugins: {', '.join(valid)}"
            )
        return resolved

    def _choose(self, selection: PluginSelection, disabled: set[str]) -> set[str]:
        concerns = self.concerns()
        for concern_name, plugin_name in selection.selected.items():
            if concern_name not in concerns:
                raise PluginError(
                    f"plugins.{concern_name} ({selection.sources.get(concern_name, '?')}): unknown "
                    f"concern {concern_name!r}. Valid concerns: {', '.join(sorted(concerns))}"
                )
            concern = concerns[concern_name]
            names = [i.name for i in self.plugins_of(concern_name)]
            if not concern.single:
                raise PluginError(
                    f"plugins.{concern_name}: all plugins of concern {concern_name!r} load together "
                    f"({', '.join(names)}); disable the ones you do not want with plugins.disabled"
                )
            if plugin_name not in names:
                raise PluginError(
                    f"plugins.{concern_name} ({selection.sources.get(concern_name, '?')}): unknown "
                    f"plugin {plugin_name!r}. Valid {concern_name} plugins: {', '.join(names) or 'none installed'}"
                )
            if f"{concern_name}.{plugin_name}" in disabled:
                raise PluginError(
                    f"plugins.{concern_name} selects {plugin_name!r}, which plugins.disabled disables"
                )
        chosen: set[str] = set()
        for concern in concerns.values():
            candidates = self.plugins_of(concern.name)
            if not concern.single:
                chosen.update(i.id for i in candidates if i.id not in disabled)
                continue
            wanted = selection.selected.get(concern.name, concern.default)
            plugin_id = f"{concern.name}.{wanted}"
            if plugin_id in self.infos and plugin_id not in disabled:
                chosen.add(plugin_id)
            elif plugin_id in disabled and concern.required:
                others = [i.name for i in candidates if i.id != plugin_id]
                alternative = (
                    f"; select another with plugins.{concern.name} = one of {', '.join(others)}"
                    if others
                    else ""
                )
                raise PluginError(
                    f"plugin {plugin_id!r} is essential: concern {concern.name!r} needs a plugin"
                    f"{alternative}"
                )
        return chosen

    # -- loading ----------------------------------------------------------------------------

    def load(
        self,
        selection: PluginSelection,
        entry_points: Iterable[Any] | None = None,
    ) -> None:
        """Discover plugins and block the disabled ones; import the rest, registering the
        chosen ones whole and the others' declarations."""
        self._discover(discover_entry_points() if entry_points is None else entry_points)
        disabled = self._resolve_disabled(selection.disabled)
        chosen = self._choose(selection, disabled)
        for plugin_id in disabled:
            self.infos[plugin_id].status = "disabled"
            self.set_blocked(plugin_id)
        for plugin_id in sorted(set(self.infos) - disabled):
            info = self.infos[plugin_id]
            module = self._import(info)
            if plugin_id in chosen:
                self.register(module, name=plugin_id)
                info.status = "selected" if concern_of(info.concern).single else "loaded"
                info.plugin = module
                info.hooks = sorted(caller.name for caller in self.get_hookcallers(module) or ())
            else:
                self.register(Declarations(module), name=plugin_id)
        self.check_pending()

    @staticmethod
    def _import(info: PluginInfo) -> Any:
        try:
            return info.entry_point.load()
        except Exception as exc:
            raise PluginError(
                f"plugin {info.id!r} ({info.module}) failed to import: {type(exc).__name__}: {exc}"
            ) from exc

    def check_pending(self) -> None:
        """Fail at start-up for a hook implementation without a spec (a misspelt hook)."""
        specs = [name for name in vars(self.hook) if not name.startswith("_") and getattr(self.hook, name).has_spec()]
        for name in vars(self.hook):
            caller = getattr(self.hook, name)
            if name.startswith("_") or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if not impl.optionalhook:
                    import difflib

                    close = difflib.get_close_matches(name, specs, n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    raise PluginError(f"plugin {impl.plugin_name!r} implements unknown hook {name!r}{hint}")

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        try:
            return super().register(plugin, name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name or exc.plugin!r}: {exc}") from None

    def require(self, hook_name: str, concern: str) -> None:
        """Fail clearly when no plugin implements a hook a run needs."""
        if not getattr(self.hook, hook_name).get_hookimpls():
            installed = ", ".join(i.name for i in self.plugins_of(concern)) or "none installed"
            raise PluginError(
                f"no plugin of concern {concern!r} implements {hook_name} (installed: {installed})"
            )

    def hooks_of_module(self, info: PluginInfo) -> list[str]:
        """Hook names a plugin that is not selected implements (a disabled one is imported,
        not registered)."""
        if info.plugin is not None:
            return info.hooks
        module = info.entry_point.load()
        names = []
        for attr in dir(module):
            opts = self.parse_hookimpl_opts(module, attr)
            if opts is not None:
                names.append(attr)
        return sorted(names)

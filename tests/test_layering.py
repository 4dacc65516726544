"""Meta-test of the dependency direction: ``plugins -> kernel`` and ``replay -> kernel``, nothing
else. A module under ``plugins/X`` imports neither another plugin ``plugins/Y`` nor ``replay``,
nor the kernel's session and execution internals (a plugin is handed a run, a config, a
request); ``replay`` imports no plugin; the kernel imports neither. Every import counts: at the
top, inside functions, under ``TYPE_CHECKING``, relative, and ``importlib.import_module`` or
``__import__`` of a literal name."""

from __future__ import annotations

import ast
import pathlib
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("kernel", "plugins", "replay")
#: kernel modules a plugin must not reach into: what the kernel does with a session and a run
KERNEL_INTERNALS = ("kernel.lifecycle.session", "kernel.lifecycle.execution", "kernel.lifecycle.executors")


def module_name(root: pathlib.Path, path: pathlib.Path) -> tuple[str, bool]:
    """(dotted name of the module at ``path``, whether it is a package's ``__init__``)."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a relative import ``from <level dots><name> import ...``."""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - level + 1]
    return ".".join(base + ([name] if name else []))


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of everything a module imports, anywhere in it; for
    ``from A import b`` both ``A`` and ``A.b`` (``b`` may be a sub-module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node.level, node.module) if node.level else node.module or ""
            found.append((node.lineno, source))
            found.extend((node.lineno, f"{source}.{alias.name}") for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if function not in ("import_module", "__import__"):
                continue
            name = node.args[0].value
            if name.startswith("."):
                package = next((k.value.value for k in node.keywords if k.arg == "package"
                                and isinstance(k.value, ast.Constant)), None)
                if package is None:
                    continue
                level = len(name) - len(name.lstrip("."))
                name = _absolute(package, True, level, name.lstrip(".") or None)
            found.append((node.lineno, name))
    return found


def _refusal(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported`` (None: it may)."""
    layer = importer.split(".")
    target = imported.split(".")
    if layer[0] == "kernel" and target[0] in ("plugins", "replay"):
        return f"the kernel imports no {target[0]}"
    if layer[0] == "replay" and target[0] == "plugins":
        return "replay imports no plugin"
    if layer[0] == "plugins" and len(layer) > 1:
        if target[0] == "replay":
            return "a plugin imports no replay"
        if target[0] == "plugins" and len(target) > 1 and target[1] != layer[1]:
            return "a plugin imports no other plugin"
        if any(imported == name or imported.startswith(name + ".") for name in KERNEL_INTERNALS):
            return "a plugin imports no kernel internals (session, execution)"
    return None


def layering_violations(root: pathlib.Path) -> list[str]:
    """``path:line: importer imports imported (rule)`` for every import against the direction."""
    problems = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module, is_package = module_name(root, path)
            tree = ast.parse(path.read_text(), str(path))
            seen = set()
            for line, imported in imported_names(tree, module, is_package):
                reason = _refusal(module, imported)
                if reason and (line, reason) not in seen:
                    seen.add((line, reason))
                    problems.append(f"{path.relative_to(root)}:{line}: {module} imports {imported} ({reason})")
    return problems


def test_the_house_keeps_the_dependency_direction():
    assert layering_violations(ROOT) == []


def test_the_check_finds_every_kind_of_import(tmp_path):
    """A small tree with one import of each kind against the direction, and allowed ones."""
    files = {
        "kernel/__init__.py": "",
        "kernel/lifecycle/session.py": "",
        "kernel/loader.py": """
            import importlib
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from replay.views import VIEWS

            def load(name):
                importlib.import_module(name)  # not a literal: the plugin manager's entry points
                return importlib.import_module("plugins.local.plugin")
            """,
        "plugins/__init__.py": "",
        "plugins/a/__init__.py": "from plugins.a.inner import x\n",
        "plugins/a/inner.py": """
            from kernel.events import Event
            from . import helper
            from ..b import other

            def later():
                import replay.store
                from plugins import b
                from kernel.lifecycle.session import Session
                return __import__("plugins.b.thing")
            """,
        "plugins/a/helper.py": "from importlib import import_module\nimport_module('.c', package='plugins')\n",
        "plugins/b/__init__.py": "import kernel.lifecycle.execution\nfrom kernel.lifecycle.run import Run\n",
        "replay/__init__.py": "",
        "replay/views.py": "from kernel.lifecycle.session import Session\nfrom plugins.eventlog import schema\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    assert layering_violations(tmp_path) == [
        "kernel/loader.py:6: kernel.loader imports replay.views (the kernel imports no replay)",
        "kernel/loader.py:10: kernel.loader imports plugins.local.plugin (the kernel imports no plugins)",
        "plugins/a/helper.py:2: plugins.a.helper imports plugins.c (a plugin imports no other plugin)",
        "plugins/a/inner.py:4: plugins.a.inner imports plugins.b (a plugin imports no other plugin)",
        "plugins/a/inner.py:7: plugins.a.inner imports replay.store (a plugin imports no replay)",
        "plugins/a/inner.py:8: plugins.a.inner imports plugins.b (a plugin imports no other plugin)",
        "plugins/a/inner.py:9: plugins.a.inner imports kernel.lifecycle.session (a plugin imports no kernel internals "
        "(session, execution))",
        "plugins/a/inner.py:10: plugins.a.inner imports plugins.b.thing (a plugin imports no other plugin)",
        "plugins/b/__init__.py:1: plugins.b imports kernel.lifecycle.execution (a plugin imports no kernel internals "
        "(session, execution))",
        "replay/views.py:2: replay.views imports plugins.eventlog (replay imports no plugin)",
    ]

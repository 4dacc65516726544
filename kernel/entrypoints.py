"""Entry points of one group, read from the installed distributions' metadata directories.

What ``importlib.metadata.entry_points(group=...)`` finds, without importing it (with the
email, zip and CSV modules it needs, a good part of a small command's start-up): every
``*.dist-info`` and ``*.egg-info`` directory on ``sys.path``, in path order, the first
distribution of a name winning, its ``entry_points.txt`` read for the group. Where the
metadata may lie elsewhere — a zip file on the path, a meta path finder of its own that finds
distributions — ``importlib.metadata`` itself answers.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

__all__ = ["entry_points"]

class Distribution:
    """Where an entry point comes from; its version is read when asked."""

    def __init__(self, path: str) -> None:
        self._path = path

    @property
    def version(self) -> str:
        for name in ("METADATA", "PKG-INFO"):
            try:
                with open(os.path.join(self._path, name), encoding="utf-8") as metadata:
                    for line in metadata:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break
            except OSError:
                continue
        return "-"


class EntryPoint:
    """``name = value`` of a group (``importlib.metadata.EntryPoint``'s attributes and ``load``)."""

    def __init__(self, name: str, value: str, group: str, dist: Distribution | None = None) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self) -> Any:
        module, _, attributes = self.value.partition(":")
        found = importlib.import_module(module.strip())
        for attribute in filter(None, attributes.strip().split(".")):
            found = getattr(found, attribute)
        return found

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


def entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` of every installed distribution, in the order
    ``importlib.metadata`` finds them."""
    if _elsewhere():
        import importlib.metadata

        return list(importlib.metadata.entry_points(group=group))
    found: list[Any] = []
    seen: set[str] = set()
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            continue
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = _normalized(low.rpartition(".")[0].partition("-")[0])
                by_name.setdefault(name, []).append(child)
        for name, directories in by_name.items():
            for directory in directories:
                if name not in seen:  # the first distribution of a name wins
                    seen.add(name)
                    found.extend(_group(os.path.join(root, directory), group))
    return found


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _elsewhere() -> bool:
    """Whether distributions may be found where this module does not look: a file (zip) or
    an egg directory on the path, a meta path finder of another kind that finds them."""
    if any(entry.lower().endswith(".egg") or os.path.isfile(entry) for entry in sys.path if entry):
        return True
    from importlib.machinery import PathFinder

    return any(hasattr(finder, "find_distributions") for finder in sys.meta_path if finder is not PathFinder)


def _group(path: str, group: str) -> list[EntryPoint]:
    try:
        with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as text:
            lines = text.read().splitlines()
    except OSError:
        return []
    dist = Distribution(path)
    found, section = [], None
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, _, value = line.partition("=")
            found.append(EntryPoint(name.strip(), value.strip(), group, dist))
    return found

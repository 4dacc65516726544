"""kernel.entrypoints finds what importlib.metadata finds, without importing it."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile

from kernel.entrypoints import entry_points


def described(found):
    return [(ep.name, ep.value, ep.group) for ep in found]


def test_the_installed_entry_points_are_importlib_metadatas():
    found = entry_points("rill")
    assert described(found) == described(importlib.metadata.entry_points(group="rill"))
    graph = next(ep for ep in found if ep.name == "graph.flink")
    assert graph.load() is importlib.import_module("plugins.graph.plugin")
    assert graph.dist.version == importlib.metadata.version("rill")


def write_distribution(root, directory, entry_points_txt, version="1.0"):
    path = root / directory
    path.mkdir()
    (path / "METADATA").write_text(f"Metadata-Version: 2.1\nName: x\nVersion: {version}\n\nbody\n")
    (path / "entry_points.txt").write_text(entry_points_txt)


def test_distributions_on_the_path_in_order_the_first_of_a_name_winning(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    write_distribution(first, "demo_plugin-1.0.dist-info",
                       "[console_scripts]\ndemo = demo:main\n\n[rill]\n# a comment\ndemo.one = json\n"
                       "demo.two = json:dumps\n", version="1.0")
    write_distribution(second, "Demo.Plugin-2.0.dist-info", "[rill]\ndemo.one = other\n", version="2.0")
    write_distribution(second, "legacy-0.1.egg-info", "[rill]\nlegacy.one = json\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second), str(tmp_path / "missing")])
    found = entry_points("rill")
    assert described(found) == [("demo.one", "json", "rill"), ("demo.two", "json:dumps", "rill"),
                                ("legacy.one", "json", "rill")]
    assert described(found) == described(importlib.metadata.entry_points(group="rill"))
    import json

    assert found[1].load() is json.dumps and found[0].dist.version == "1.0"


def test_a_zip_on_the_path_is_left_to_importlib_metadata(tmp_path, monkeypatch):
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
        zipped.writestr("zipped-1.0.dist-info/entry_points.txt", "[rill]\nzipped.one = json\n")
    monkeypatch.setattr(sys, "path", [str(archive)])
    found = entry_points("rill")
    assert described(found) == [("zipped.one", "json", "rill")]
    assert isinstance(found[0], importlib.metadata.EntryPoint)

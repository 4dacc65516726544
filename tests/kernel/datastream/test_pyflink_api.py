"""PyFlink 2.3's public DataStream API, name by name: each exists under ``kernel.`` at the same
module path (with PyFlink's type parameters for generic classes), or is one of rill's listed
unsupported names, which import cleanly and are refused with one clear error when used.

``pyflink_api.txt`` was generated from PyFlink 2.3.0's source by
``scripts/pyflink_api_list.py`` (see its docstring for the command and the line format).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from kernel.pyflink.unsupported import MARK, UNSUPPORTED, NotSupportedByRill, dotted, is_stand_in
from kernel.pyflink.unsupported_names import GROUPS

API = Path(__file__).with_name("pyflink_api.txt")
PYFLINK_PAGE = Path(__file__).resolve().parents[3] / "docs" / "pyflink.md"


def _entries() -> dict[str, list[tuple[str, str, str]]]:
    """module -> [(path, kind, details)] in file order."""
    by_module: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for line in API.read_text().splitlines():
        if line.startswith("#"):
            continue
        path, kind, *details = line.split(" ", 2)
        by_module[path.partition(":")[0]].append((path, kind, details[0] if details else ""))
    return by_module


ENTRIES = _entries()
PATHS = {path for entries in ENTRIES.values() for path, _, _ in entries}


def resolve(path: str) -> tuple[Any, str | None]:
    """The kernel object for a PyFlink ``module:qualname``, or the unsupported name of the stand-in
    met on the way (its members are refused with it)."""
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module("kernel" + module[len("pyflink"):])
    for part in qualname.split(".") if qualname else []:
        obj = getattr(obj, part)
        if is_stand_in(obj):
            return obj, getattr(obj, MARK)
    return obj, None


def test_the_list_covers_pyflinks_datastream_and_common_packages():
    assert len(ENTRIES) == 56
    assert {"pyflink.common", "pyflink.datastream", "pyflink.datastream.functions", "pyflink.datastream.state",
            "pyflink.datastream.window", "pyflink.datastream.connectors.kafka",
            "pyflink.datastream.formats.csv"} <= set(ENTRIES)
    assert ("pyflink.datastream.functions:ProcessWindowFunction", "class", "[IN, OUT, KEY, W]") in \
        ENTRIES["pyflink.datastream.functions"]


@pytest.mark.parametrize("module", sorted(ENTRIES))
def test_every_name_exists_under_kernel_or_is_listed_unsupported(module):
    problems = []
    for path, kind, details in ENTRIES[module]:
        try:
            obj, stand_in = resolve(path)
        except (ImportError, AttributeError) as exc:
            problems.append(f"{path}: missing ({exc})")
            continue
        if stand_in is not None:
            if stand_in not in UNSUPPORTED:
                problems.append(f"{path}: stands for {stand_in}, which is not in the unsupported list")
            continue
        if kind == "module" and not inspect.ismodule(obj):
            problems.append(f"{path}: not a module")
        elif kind == "class":
            if not inspect.isclass(obj):
                problems.append(f"{path}: not a class")
                continue
            parameters = "[" + ", ".join(p.__name__ for p in getattr(obj, "__parameters__", ())) + "]"
            if parameters != (details or "[]"):
                problems.append(f"{path}: type parameters {parameters}, PyFlink has {details or '[]'}")
        elif kind in ("method", "function") and not callable(obj):
            problems.append(f"{path}: not callable")
        elif kind == "alias":
            target, _ = resolve(details)
            if obj is not target:
                problems.append(f"{path}: is not {details}")
    assert problems == []


def test_every_unsupported_name_is_a_pyflink_name_and_belongs_to_one_group():
    listed = [f"{module}:{name}" for group in GROUPS for module, names in group.names.items() for name in names]
    assert sorted(set(listed)) == sorted(listed)
    assert [name for name in listed if name not in PATHS] == []


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_names_import_and_are_refused_when_used(name):
    obj, stand_in = resolve(name)
    assert stand_in == name
    expected = re.escape(f"not supported by rill: {dotted(name)} ({UNSUPPORTED[name].title}: ")
    with pytest.raises(NotSupportedByRill, match=expected):
        obj()
    if inspect.isclass(obj):
        with pytest.raises(NotSupportedByRill, match=expected):
            obj.any_attribute  # noqa: B018 - reading an attribute is a use
        assert obj[int, str] is obj  # generic subscription (AsyncFunction[IN, OUT]) is not a use

        class Subclass(obj):  # defining a subclass at import is not a use either
            pass

        with pytest.raises(NotSupportedByRill, match=expected):
            Subclass()


def test_the_error_is_a_job_definition_error_the_cli_reports_in_one_line(tmp_path, cli):
    job = tmp_path / "pulsar_job.py"
    job.write_text(
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "from kernel.datastream.connectors.pulsar import PulsarSource\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "source = PulsarSource.builder().set_topics('t').build()\n"
    )
    code, out, err = cli("run", str(job))
    assert code == 2
    assert err.strip().splitlines() == [
        "rill: error: not supported by rill: "
        "pyflink.datastream.connectors.pulsar.PulsarSource (connectors: rill reads collections, files, number "
        "sequences, generated data and Kafka (KafkaSource), and writes to stdout, files, Kafka (KafkaSink) and sink "
        "functions) (pulsar_job.py, line 4)"
    ]


def test_unsupported_methods_of_supported_classes_are_refused():
    from kernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(NotSupportedByRill, match="not supported by rill: pyflink.datastream.stream_execution_environment"
                                                 r".StreamExecutionEnvironment.enable_changelog_state_backend "
                                                 r"\(changelog state backend: "):
        env.enable_changelog_state_backend(True)
    stream = env.from_collection([1, 2])
    with pytest.raises(NotSupportedByRill, match=r"pyflink.datastream.data_stream.DataStream.cache \(cached streams"):
        stream.cache()
    assert stream.broadcast().get_transformation().partitioner.__class__.__name__ == "BroadcastPartitioner"


def test_the_pyflink_page_lists_every_unsupported_group():
    text = PYFLINK_PAGE.read_text()
    section = text[text.index("## Unsupported PyFlink API"):]
    missing = [group.title for group in GROUPS if f"**{group.title}**" not in section]
    assert missing == []

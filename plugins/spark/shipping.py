"""Shipping rill and the job's Python dependencies to a Spark cluster's executors, the way
Spark ships Python code: through its own file distribution, never through a shared file system.

What goes, each a zip Spark unpacks on every executor (``SparkContext.addArchive``) or a file
it copies there (``addFile``), named by a hash of its content so that runs sharing a
SparkContext never clash and an executor never keeps a stale copy:

* rill itself: its packages (``kernel``, ``plugins``, ``replay``) and distribution metadata
  (plugins are found through its entry points), with every distribution it depends on (and
  the ``kafka`` extra's confluent-kafka, when installed) except
  PySpark and py4j (Spark gives them to every Python worker) and DuckDB and PyArrow (only the
  driver's event log and SQL use them). The compiled ones among them (msgspec, mmh3, PyYAML's
  extension) are the driver's builds: the executors' Python must be the driver's version on the
  driver's platform. Built once into ``$RILL_HOME/spark/`` and reused while rill's installation
  is unchanged.
* the job's Python files (a ``.py`` file in a zip of its own, a directory as a zip of its
  content, a zip/wheel/egg as it is), the site directories of its requirements (installed by
  the client), and its archives (``archive#target``, unpacked in the executors' working
  directory, Spark's ``spark.archives`` layout).

Functions handed to Spark go wrapped in :class:`~plugins.spark.bootstrap.Shipped`, which puts
what was shipped on the import path before it unpickles them. Before the first worker or
stage, one probe task checks that rill runs on the executors; if not, the run fails at once
with one line saying what they lack.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import zipfile
from typing import TYPE_CHECKING, Any, Iterable

from kernel.errors import RillError
from kernel.config import rill_home
from plugins.spark import bootstrap

if TYPE_CHECKING:
    from kernel.lifecycle.pythonenv.environment import PythonEnvironment

#: rill's top-level packages
RILL_PACKAGES = ("kernel", "plugins", "replay")
#: distributions every Python worker of Spark has from Spark itself
SPARK_PROVIDED = frozenset({"pyspark", "py4j"})
#: rill's extras that go with it when installed (the clients of the connectors jobs run)
SHIPPED_EXTRAS = ("kafka",)
#: distributions only the driver uses (the event log, SQL over it)
DRIVER_ONLY = frozenset({"duckdb", "pyarrow"})
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
#: (Spark application, what was shipped) already probed successfully
_probed: set[tuple[str, tuple[str, ...]]] = set()
#: Spark application -> the names of what was shipped to it (by content: a name is never shipped twice)
_shipped: dict[str, set[str]] = {}


class ExecutorsCannotRunRill(RillError):
    """The executors' Python cannot run rill, even with what was shipped."""


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependencies(name: str = "rill") -> list[importlib.metadata.Distribution]:
    """The distributions ``name`` needs on the executors (its requirements' closure, without
    what Spark provides or only the driver uses; of rill's extras only those of ``SHIPPED_EXTRAS``,
    when installed: a job's connectors run on the executors)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    pending = [name]
    while pending:
        distribution = importlib.metadata.distribution(pending.pop())
        for requirement in distribution.requires or ():
            match = _NAME.match(requirement)
            marker = requirement.partition(";")[2]
            if match is None or ("extra" in marker and not (distribution.metadata["Name"] == name and any(
                    f'extra == "{extra}"' in marker for extra in SHIPPED_EXTRAS))):
                continue
            key = _normalized(match.group(1))
            if key in found or key in SPARK_PROVIDED or key in DRIVER_ONLY:
                continue
            try:
                found[key] = importlib.metadata.distribution(key)
            except importlib.metadata.PackageNotFoundError:
                continue  # a requirement under a marker this Python does not need
            pending.append(key)
    return list(found.values())


def _package_files(package: str) -> Iterable[tuple[str, str]]:
    root = os.path.dirname(importlib.import_module(package).__file__)
    for directory, names, files in os.walk(root):
        names[:] = [name for name in names if name != "__pycache__"]
        for file in files:
            if not file.endswith((".pyc", ".pyo")):
                path = os.path.join(directory, file)
                yield path, os.path.relpath(path, os.path.dirname(root)).replace(os.sep, "/")


def _distribution_files(distribution: importlib.metadata.Distribution) -> Iterable[tuple[str, str]]:
    for file in distribution.files or ():
        if ".." in file.parts or "__pycache__" in file.parts or file.suffix in (".pyc", ".pyo"):
            continue
        path = str(file.locate())
        if os.path.isfile(path):
            yield path, file.as_posix()


def rill_files() -> tuple[list[tuple[str, str]], dict[str, str]]:
    """rill's packages and its dependencies' files ((path, name in the zip)), and its metadata
    (name in the zip -> text)."""
    files = [item for package in RILL_PACKAGES for item in _package_files(package)]
    for distribution in dependencies():
        files.extend(_distribution_files(distribution))
    rill = importlib.metadata.distribution("rill")
    texts = {f"rill-{rill.version}.dist-info/{name}": rill.read_text(name) or ""
             for name in ("METADATA", "entry_points.txt")}
    return files, texts


class Packed:
    """A zip of ``files`` ((path, name in the zip)) and ``texts`` (name -> text) named by a hash
    of what it holds, kept in ``$RILL_HOME/spark``: :meth:`path` builds it unless it is there."""

    def __init__(self, files: list[tuple[str, str]], prefix: str, texts: dict[str, str] | None = None) -> None:
        self.files = files
        self.texts = texts or {}
        digest = hashlib.sha256()
        for path, name in sorted(files, key=lambda item: item[1]):
            stat = os.stat(path)
            digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        for name, text in sorted(self.texts.items()):
            digest.update(f"{name}\0{text}\0".encode())
        self.name = f"{prefix}-{digest.hexdigest()[:16]}.zip"

    def path(self) -> str:
        directory = os.path.join(os.path.abspath(rill_home()), "spark")
        target = os.path.join(directory, self.name)
        if not os.path.isfile(target):
            os.makedirs(directory, exist_ok=True)
            handle, staging = tempfile.mkstemp(dir=directory, prefix=".packing-")
            os.close(handle)
            try:
                with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
                    for path, name in self.files:
                        archive.write(path, name)
                    for name, text in self.texts.items():
                        archive.writestr(name, text)
                os.replace(staging, target)
            finally:
                if os.path.exists(staging):
                    os.unlink(staging)
        return target


@functools.lru_cache(maxsize=1)
def packed_rill() -> Packed:
    """rill with its dependencies, packed (looked at once per process: an installation does
    not change under a running rill)."""
    files, texts = rill_files()
    return Packed(files, "rill", texts)


def _directory_files(root: str) -> list[tuple[str, str]]:
    found = []
    for directory, names, files in os.walk(root):
        names[:] = [name for name in names if name != "__pycache__"]
        for file in files:
            path = os.path.join(directory, file)
            found.append((path, os.path.relpath(path, root).replace(os.sep, "/")))
    return found


def _copy_named_by_content(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    directory = os.path.join(os.path.abspath(rill_home()), "spark")
    target = os.path.join(directory, f"{digest.hexdigest()[:16]}-{os.path.basename(path)}")
    if not os.path.isfile(target):
        os.makedirs(directory, exist_ok=True)
        shutil.copyfile(path, target + ".tmp")
        os.replace(target + ".tmp", target)
    return target


def executors_python(options: Any, environment: PythonEnvironment) -> str:
    """``python.executable`` for Spark's Python workers: as found on this machine for a
    ``local`` master, as the job gave it for a cluster's executors."""
    return environment.executable if options.master.startswith("local") else environment.info.executable


class Shipment:
    """What one run ships to the executors of ``context``: import roots (the names Spark
    unpacked them under, the job's first, rill's last) and the job's archives."""

    def __init__(self, context: Any, environment: PythonEnvironment) -> None:
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(bootstrap)
        self.context = context
        self.application = f"{context.applicationId}@{context.startTime}"
        self.shipped = _shipped.setdefault(self.application, set())
        self.roots: list[str] = []
        for path in environment.info.files:
            if os.path.isdir(path):
                self._archive(Packed(_directory_files(path), f"files-{os.path.basename(path)}"))
            elif path.endswith(".py"):
                self._archive(Packed([(path, os.path.basename(path))], f"files-{os.path.basename(path)[:-3]}"))
            else:  # a zip, wheel or egg: imported as it is
                copy = _copy_named_by_content(path)
                name = os.path.basename(copy)
                if name not in self.shipped:
                    context.addFile(copy)
                    self.shipped.add(name)
                self.roots.append(name)
        for site in environment.requirements:
            self._archive(Packed(_directory_files(site), "requirements"))
        self._archive(packed_rill())
        for archive in environment.info.archives:  # unpacked into the executors' working directory
            context.addArchive(f"{archive.path}#{archive.target}")

    def _archive(self, packed: Packed) -> None:
        if packed.name not in self.shipped:
            self.context.addArchive(packed.path())
            self.shipped.add(packed.name)
        self.roots.append(packed.name)

    def wrap(self, function: Any) -> bootstrap.Shipped:
        """``function`` for Spark's Python workers, with what was shipped."""
        from pyspark import cloudpickle

        return bootstrap.Shipped(cloudpickle.dumps(function), list(self.roots))

    def check(self, modules: list[str]) -> None:
        """One probe task: rill's ``modules`` import on an executor with what was shipped, or
        the run fails at once saying what the executors lack."""
        key = (self.application, tuple(self.roots))
        if key in _probed:
            return
        self.context.setJobGroup(f"rill-probe-{os.getpid()}", "rill: can the executors run rill?")
        try:
            error, python, tag, platform = self.context.parallelize([0], 1).map(
                bootstrap.Probe(self.roots, modules)).collect()[0]
        except Exception as exc:
            from plugins.spark.failures import spark_failure

            raise ExecutorsCannotRunRill(f"the Spark executors cannot run rill: {spark_failure(str(exc))}") from None
        finally:
            self.context.setJobGroup("", "")
        if error:
            ours = (sys.implementation.cache_tag, sysconfig.get_platform())
            if (tag, platform) != ours:
                error = (f"{error} — rill's compiled dependencies shipped from the driver are built for "
                         f"{ours[0]} on {ours[1]}; run the executors with the driver's Python version "
                         "(python.executable, spark.pyspark.python or PYSPARK_PYTHON)")
            raise ExecutorsCannotRunRill(f"the Spark executors' {python} cannot run rill: {error}")
        _probed.add(key)

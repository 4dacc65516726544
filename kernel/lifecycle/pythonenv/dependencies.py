"""What the job asks for (Flink's PythonDependencyInfo): its Python files, archives,
requirements and interpreter, read from :class:`~kernel.lifecycle.pythonenv.options.PythonOptions` with
paths made absolute against the client's working directory and checked there — a missing file
or a bad entry is one line naming the key, before anything runs."""

from __future__ import annotations

import os

import msgspec

from kernel.errors import UsageError
from kernel.lifecycle.pythonenv.options import PythonOptions, _entries


class PythonArchive(msgspec.Struct, frozen=True):
    """A zip archive and the directory of the working directory it is extracted into."""

    path: str
    target: str


class PythonDependencyInfo(msgspec.Struct, frozen=True, kw_only=True):
    files: list[str] = []
    archives: list[PythonArchive] = []
    requirements_file: str = ""
    requirements_cache_dir: str = ""
    executable: str = ""

    @property
    def empty(self) -> bool:
        return not (self.files or self.archives or self.requirements_file or self.executable)

    @classmethod
    def of(cls, options: PythonOptions) -> PythonDependencyInfo:
        files = [_existing("python.files", path) for path in _entries(options.files)]
        archives = [_archive(entry) for entry in _entries(options.archives)]
        targets = [archive.target for archive in archives]
        for target in targets:
            if targets.count(target) > 1:
                raise UsageError(f"python.archives: two archives are extracted into {target!r}")
        requirements_file = cache_dir = ""
        if options.requirements.strip():
            file, _, cache = options.requirements.strip().partition("#")
            requirements_file = _existing("python.requirements", file, kind="file")
            if cache:
                cache_dir = _existing("python.requirements", cache, kind="directory")
        return cls(files=files, archives=archives, requirements_file=requirements_file,
                   requirements_cache_dir=cache_dir, executable=options.executable.strip())


def _existing(key: str, path: str, kind: str = "") -> str:
    absolute = os.path.abspath(os.path.expanduser(path.strip()))
    if not os.path.exists(absolute):
        raise UsageError(f"{key}: {path.strip()!r} does not exist")
    if kind == "file" and not os.path.isfile(absolute):
        raise UsageError(f"{key}: {path.strip()!r} is not a file")
    if kind == "directory" and not os.path.isdir(absolute):
        raise UsageError(f"{key}: {path.strip()!r} (the cache directory) is not a directory")
    return absolute


def _archive(entry: str) -> PythonArchive:
    path, _, target = entry.partition("#")
    import zipfile

    absolute = _existing("python.archives", path, kind="file")
    if not zipfile.is_zipfile(absolute):
        raise UsageError(f"python.archives: {path.strip()!r} is not a zip archive (PyFlink's archives are zip files)")
    target = target.strip() or os.path.basename(absolute)
    if target in (".", "..") or "/" in target or os.sep in target:
        raise UsageError(f"python.archives: the target directory {target!r} of {path.strip()!r} must be a plain name")
    return PythonArchive(absolute, target)

"""The job's requirements installed into an environment of their own, as Flink's
PythonEnvironmentManager installs them for its Python workers: ``pip install
--ignore-installed -r requirements.txt --prefix <dir>``, with ``--no-index --find-links
<cache_dir>`` when a cache directory is given (offline). The environment is cached under
``$RILL_HOME/python/requirements/<key>``, the key a hash of the requirements file, the cache
directory's listing and the interpreter's version and platform: a later job with the same
requirements uses it at once. It is installed into a directory of its own and renamed into
place, so two runs installing at once never see half an environment."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from kernel.errors import RillError
from kernel.config import rill_home

#: what the interpreter says about itself: the cache key's part, and where ``--prefix`` installs
_DESCRIBE = ("import json, sys, sysconfig; prefix = sys.argv[1]; "
             "print(json.dumps({'tag': sys.implementation.cache_tag, 'platform': sysconfig.get_platform(), "
             "'paths': sorted({sysconfig.get_path(name, vars={'base': prefix, 'platbase': prefix}) "
             "for name in ('purelib', 'platlib')})}))")


class RequirementsError(RillError):
    """The requirements cannot be installed."""


def install_requirements(requirements_file: str, cache_dir: str, interpreter: str) -> list[str]:
    """The site directories of the environment with the requirements installed by
    ``interpreter`` (installed now unless cached)."""
    described = _describe(interpreter, "PREFIX")
    key = _key(requirements_file, cache_dir, described)
    root = os.path.join(os.path.abspath(rill_home()), "python", "requirements")
    target = os.path.join(root, key)
    if not os.path.isdir(target):
        os.makedirs(root, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{key}-", dir=root)
        try:
            _pip_install(interpreter, requirements_file, cache_dir, staging)
            os.rename(staging, target)
        except OSError:  # another run put the same environment in place meanwhile
            if not os.path.isdir(target):
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return [path for path in _describe(interpreter, target)["paths"] if os.path.isdir(path)]


def _describe(interpreter: str, prefix: str) -> dict:
    """The interpreter's cache tag and platform, and where ``--prefix prefix`` installs."""
    if interpreter == sys.executable:
        return {"tag": sys.implementation.cache_tag, "platform": sysconfig.get_platform(),
                "paths": sorted({sysconfig.get_path(name, vars={"base": prefix, "platbase": prefix})
                                 for name in ("purelib", "platlib")})}
    answer = subprocess.run([interpreter, "-c", _DESCRIBE, prefix], capture_output=True, text=True)
    if answer.returncode != 0:
        raise RequirementsError(f"python.requirements: the interpreter {interpreter} failed: {_last_line(answer.stderr)}")
    return json.loads(answer.stdout)


def _key(requirements_file: str, cache_dir: str, described: dict) -> str:
    digest = hashlib.sha256()
    with open(requirements_file, "rb") as handle:
        digest.update(handle.read())
    digest.update(json.dumps([described["tag"], described["platform"], bool(cache_dir)]).encode())
    if cache_dir:
        listing = sorted((entry.name, entry.stat().st_size) for entry in os.scandir(cache_dir) if entry.is_file())
        digest.update(json.dumps(listing).encode())
    return digest.hexdigest()[:16]


def _pip_install(interpreter: str, requirements_file: str, cache_dir: str, prefix: str) -> None:
    command = [interpreter, "-m", "pip", "install", "--ignore-installed", "-r", requirements_file, "--prefix", prefix,
               "--disable-pip-version-check", "--no-warn-script-location", "--quiet"]
    if cache_dir:
        command += ["--no-index", "--find-links", cache_dir]
    answer = subprocess.run(command, capture_output=True, text=True, cwd=os.path.dirname(requirements_file))
    if answer.returncode != 0:
        where = f"offline from {cache_dir}" if cache_dir else "from the package index"
        raise RequirementsError(f"python.requirements: pip could not install {requirements_file} ({where}): "
                                f"{_last_line(answer.stderr) or f'pip exited with code {answer.returncode}'}")


def _last_line(text: str) -> str:
    """pip's (or Python's) own last word: its last ``ERROR:`` line, else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or [""])[-1]

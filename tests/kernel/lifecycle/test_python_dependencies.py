"""The job's Python dependencies as PyFlink delivers them (``add_python_file``,
``add_python_archive``, ``set_python_requirements``, ``set_python_executable``): a Python file
on the import path, an archive extracted into the job's working directory, requirements
installed offline from a cache directory (a wheel built here) into an environment cached under
``$RILL_HOME``, and the interpreter of TaskExecutor processes — for embedded TaskExecutors and
worker processes, run as a user runs them (the ``rill`` command in a subprocess). Bad input is
one line naming the key."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kernel.errors import UsageError
from kernel.lifecycle.pythonenv.dependencies import PythonDependencyInfo
from kernel.lifecycle.pythonenv.options import PythonOptions
from kernel.lifecycle.pythonenv.requirements import RequirementsError, install_requirements

RILL = str(Path(sys.executable).parent / "rill")

JOB = '''
import os
import sys

from kernel.datastream import StreamExecutionEnvironment

RELATIVE = sys.argv[1:] == ["relative"]


def use(value):
    import helper  # python.files
    import rill_sample  # python.requirements, installed offline from the cache directory

    # python.archives: in the job's working directory (a worker process works there, as
    # PyFlink's Python worker; an embedded TaskExecutor names it in _PYTHON_WORKING_DIR)
    path = "data/greeting.txt" if RELATIVE else \\
        os.path.join(os.environ["_PYTHON_WORKING_DIR"], "data", "greeting.txt")
    with open(path) as handle:
        greeting = handle.read().strip()
    return f"{helper.tag(rill_sample.shout(value))} {greeting}"


env = StreamExecutionEnvironment.get_execution_environment()
env.add_python_file("lib/helper.py")
env.set_python_requirements("requirements.txt", "cache")
env.add_python_archive("data.zip", "data")
env.from_collection(["a", "b"]).map(use).print()
env.execute("dependencies")
'''
EXPECTED = ["<A!> hello from the archive", "<B!> hello from the archive"]


def build_wheel(directory: Path, name: str = "rill_sample", version: str = "1.0") -> Path:
    """A pure-Python wheel of one module with ``shout(text)``, written by hand (a wheel is a
    zip with its metadata and RECORD)."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": "def shout(text):\n    return text.upper() + '!'\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: rill-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for path, text in files.items()]
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return wheel


def write_job(directory: Path) -> Path:
    """The job and its dependencies: ``lib/helper.py`` (and a sibling PyFlink does not make
    importable), ``requirements.txt`` with the wheel in ``cache/``, ``data.zip``."""
    (directory / "lib").mkdir(parents=True, exist_ok=True)
    (directory / "lib" / "helper.py").write_text("def tag(value):\n    return f'<{value}>'\n")
    (directory / "lib" / "sibling.py").write_text("")
    build_wheel(directory / "cache")
    (directory / "requirements.txt").write_text("rill_sample==1.0\n")
    with zipfile.ZipFile(directory / "data.zip", "w") as archive:
        archive.writestr("greeting.txt", "hello from the archive\n")
    job = directory / "job.py"
    job.write_text(JOB)
    return job


def rill(*args: str, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([RILL, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


# -- what the job asks for, checked on the client ---------------------------------------------


def info(**keys: str) -> PythonDependencyInfo:
    return PythonDependencyInfo.of(PythonOptions(**keys))


def test_dependencies_are_made_absolute_and_bad_ones_are_one_line_naming_the_key(tmp_path):
    write_job(tmp_path)
    (tmp_path / "notes.txt").write_text("not a zip")
    read = info(files="lib/helper.py, lib", archives="data.zip,data.zip#other", requirements="requirements.txt#cache")
    assert read.files == [str(tmp_path / "lib" / "helper.py"), str(tmp_path / "lib")]
    assert [(a.path, a.target) for a in read.archives] == [(str(tmp_path / "data.zip"), "data.zip"),
                                                          (str(tmp_path / "data.zip"), "other")]
    assert (read.requirements_file, read.requirements_cache_dir) == (str(tmp_path / "requirements.txt"),
                                                                     str(tmp_path / "cache"))
    bad = {
        (("files", "lib/missing.py"),): "python.files: 'lib/missing.py' does not exist",
        (("archives", "notes.txt"),): "python.archives: 'notes.txt' is not a zip archive (PyFlink's archives are "
                                      "zip files)",
        (("archives", "data.zip#../up"),): "python.archives: the target directory '../up' of 'data.zip' must be a "
                                           "plain name",
        (("archives", "data.zip#d,data.zip#d"),): "python.archives: two archives are extracted into 'd'",
        (("requirements", "missing.txt"),): "python.requirements: 'missing.txt' does not exist",
        (("requirements", "requirements.txt#nocache"),): "python.requirements: 'nocache' does not exist",
        (("requirements", "requirements.txt#notes.txt"),): "python.requirements: 'notes.txt' (the cache directory) "
                                                           "is not a directory",
    }
    for keys, message in bad.items():
        with pytest.raises(UsageError) as raised:
            info(**dict(keys))
        assert str(raised.value) == message


def test_requirements_install_offline_from_the_cache_dir_once_then_come_from_the_cache(tmp_path, monkeypatch):
    write_job(tmp_path)
    requirements, cache = str(tmp_path / "requirements.txt"), str(tmp_path / "cache")
    [site] = install_requirements(requirements, cache, sys.executable)
    assert site.startswith(str(tmp_path / ".rill" / "python" / "requirements"))
    assert (Path(site) / "rill_sample.py").read_text().startswith("def shout")
    with monkeypatch.context() as patched:  # the cached environment: pip is not run again
        patched.setattr("kernel.lifecycle.pythonenv.requirements._pip_install", None)
        assert install_requirements(requirements, cache, sys.executable) == [site]
    (tmp_path / "requirements.txt").write_text("rill_sample==1.0\nrill_missing_sample==2.0\n")
    with pytest.raises(RequirementsError) as raised:
        install_requirements(requirements, cache, sys.executable)
    assert str(raised.value).startswith(f"python.requirements: pip could not install {requirements} (offline from "
                                        f"{cache}): ERROR: ")
    assert len(str(raised.value).splitlines()) == 1 and "rill_missing_sample" in str(raised.value)


# -- as a user runs the job -----------------------------------------------------------------


@pytest.mark.parametrize("workers", ["embedded", "processes"])
def test_a_job_uses_its_python_file_requirements_and_archive(tmp_path, workers):
    job = write_job(tmp_path / "project")
    args = ["--set", f"plugins.workers={workers}", str(job)]
    if workers == "processes":  # a worker process works in the job's working directory, as PyFlink's
        args.append("relative")
    done = rill("run", "--quiet", *args, cwd=tmp_path / "project")
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (0, EXPECTED, "")
    [environment] = (tmp_path / ".rill" / "python" / "requirements").iterdir()  # the test's RILL_HOME
    assert [p.name for p in environment.rglob("rill_sample.py")] == ["rill_sample.py"]


def test_a_python_file_is_importable_alone_as_in_pyflink(tmp_path):
    job = write_job(tmp_path)
    job.write_text(JOB.replace("import helper  # python.files", "import helper, sibling"))
    done = rill("run", "--quiet", str(job), cwd=tmp_path)
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'sibling'" in done.stderr.splitlines()[-1]


def test_bad_dependencies_stop_the_run_in_one_line(tmp_path):
    job = write_job(tmp_path)
    (tmp_path / "lib" / "helper.py").unlink()
    done = rill("run", "--quiet", str(job), cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "rill: error: python.files: "
                                                                  "'lib/helper.py' does not exist\n")
    write_job(tmp_path)
    (tmp_path / "requirements.txt").write_text("rill_missing_sample==2.0\n")
    done = rill("run", "--quiet", str(job), cwd=tmp_path)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"rill: error: python.requirements: pip could not install "
                                  f"{tmp_path / 'requirements.txt'} (offline from {tmp_path / 'cache'}): ERROR: ")


# -- the interpreter of worker processes ------------------------------------------------------


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A venv of this Python with nothing installed: no rill, none of its dependencies."""
    directory = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=300)
    return str(directory / "bin" / "python")


WHERE = '''
import sys

from kernel.datastream import StreamExecutionEnvironment


def where(value):
    return f"{value} {sys.prefix}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_python_executable(sys.argv[1])
env.from_collection(["a"]).map(where).print()
env.execute("where")
'''


def test_worker_processes_run_the_jobs_interpreter_and_one_that_cannot_is_one_line(tmp_path, bare_python):
    job = tmp_path / "where.py"
    job.write_text(WHERE)
    done = rill("run", "--quiet", "--set", "plugins.workers=processes", str(job), bare_python, cwd=tmp_path)
    # the venv's interpreter, its own packages first, rill's from this installation after them
    assert (done.returncode, done.stdout, done.stderr) == (0, f"a {Path(bare_python).parents[1]}\n", "")
    (tmp_path / "broken").write_text("#!/bin/sh\necho 'no Python here' >&2\nexit 3\n")
    (tmp_path / "broken").chmod(0o755)
    done = rill("run", "--quiet", "--set", "plugins.workers=processes", str(job), "./broken", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", f"rill: error: python.executable {tmp_path / 'broken'} cannot run rill's TaskExecutor: no Python here\n")

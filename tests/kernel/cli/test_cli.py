from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import rill_command

def test_help_lists_builtin_and_plugin_commands(cli):
    code, out, _ = cli("--help")
    assert code == 0
    commands = out.split("Commands:")[1].split()
    for name in ("config", "plugins", "runs", "sql"):
        assert name in commands


def test_config_prints_values_and_sources(cli, tmp_path):
    (tmp_path / "rill.toml").write_text('[rill]\nseed = 3\n')
    code, out, err = cli("config", "--set", "rill.clock=simulated")
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert rows["rill.seed"] == ["3", str(tmp_path / "rill.toml")]
    assert rows["rill.clock"] == ["simulated", "--set"]
    assert rows["rill.events.flush-interval"] == ["1000", "default"]
    code, out, _ = cli("config", "--json")
    data = json.loads(out)
    assert data["rill.seed"] == {"value": 3, "source": str(tmp_path / "rill.toml")}
    assert data["plugins.eventlog"] == {"value": "duckdb", "source": "default"}


def test_config_shows_where_the_event_log_is(cli, tmp_path, monkeypatch):
    code, out, _ = cli("config", "--json")
    assert json.loads(out)["eventlog.path"] == {"value": str(tmp_path / ".rill" / "rill.duckdb"),
                                                "source": "default: $RILL_HOME/rill.duckdb"}
    monkeypatch.delenv("RILL_HOME")
    rows = {line.split()[0]: line.split(maxsplit=2)[1:] for line in cli("config")[1].splitlines()[1:]}
    assert rows["eventlog.path"] == [str(tmp_path / ".rill" / "rill.duckdb"), "default: ./.rill/rill.duckdb"]
    code, out, _ = cli("config", "--json", "--set", "eventlog.path=logs/runs.duckdb")
    assert json.loads(out)["eventlog.path"] == {"value": str(tmp_path / "logs" / "runs.duckdb"),
                                                "source": "--set, made absolute"}
    code, out, _ = cli("config", "--json", "--set", f"eventlog.path={tmp_path / 'x.duckdb'}")
    assert json.loads(out)["eventlog.path"] == {"value": str(tmp_path / "x.duckdb"), "source": "--set"}


def test_errors_are_one_line_with_exit_code_2(cli):
    code, out, err = cli("config", "--set", "rill.sead=1")
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith("rill: error: unknown config key 'rill.sead' (--set). Did you mean 'rill.seed'?")
    code, _, err = cli("config", "--set", "plugins.eventlog=sqlite")
    assert code == 2
    assert err == "rill: error: plugins.eventlog (--set): unknown plugin 'sqlite'. Valid eventlog plugins: duckdb\n"


def test_debug_shows_the_traceback(cli):
    code, _, err = cli("--debug", "config", "--set", "rill.sead=1")
    assert code == 2
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("rill: error: unknown config key")


def test_broken_config_file_is_a_clear_error(cli, tmp_path):
    (tmp_path / "rill.toml").write_text("[rill\n")
    code, _, err = cli("config")
    assert code == 2
    assert err.startswith(f"rill: error: config file '{tmp_path / 'rill.toml'}' is not valid TOML")


@pytest.mark.parametrize("args, line", [
    (("frobnicate",), "rill: error: no such command 'frobnicate' (see 'rill --help')"),
    (("run",), "rill: error: rill run: missing argument 'JOB_FILE' (see 'rill run --help')"),
    (("run", "--bogus", "job.py"), "rill: error: rill run: no such option '--bogus' (see 'rill run --help')"),
    (("run", "--clock", "fast", "job.py"), "rill: error: rill run: invalid value for '--clock': 'fast' is not one of "
                                           "'realtime', 'simulated' (see 'rill run --help')"),
    (("metrics",), "rill: error: rill metrics: missing argument 'RUN' (see 'rill metrics --help')"),
    (("--verbose", "runs"), "rill: error: no such option '--verbose'. Did you mean '--version'? (see 'rill --help')"),
])
def test_usage_errors_are_one_line_with_exit_code_2(cli, args, line):
    code, out, err = cli(*args)
    assert (code, out, err) == (2, "", line + "\n")


USER_FAILURE_JOB = """
from kernel.common import Types
from kernel.datastream import StreamExecutionEnvironment

def check(value):
    if value == 3:
        raise ValueError(f"bad value {value}")
    return value

def double(value):
    return check(value) * 2

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3], Types.INT()).map(double).name("Doubler").print()
env.execute("failing")
"""


def test_a_failed_job_shows_the_users_frames_and_rills_only_with_debug(cli, tmp_path):
    job = tmp_path / "failing.py"
    job.write_text(USER_FAILURE_JOB)
    code, _, err = cli("run", "--clock", "simulated", str(job))
    assert code == 1
    report = err[err.index("Traceback"):err.index("JobException")].splitlines()
    assert report == [
        "Traceback (most recent call last):",
        f'  File "{job}", line 11, in double',
        "    return check(value) * 2",
        "           ^^^^^^^^^^^^",
        f'  File "{job}", line 7, in check',
        '    raise ValueError(f"bad value {value}")',
        "ValueError: bad value 3",
        "",
    ]
    code, _, err = cli("--debug", "run", "--clock", "simulated", str(job))
    assert code == 1
    report = err[err.index("Traceback"):err.index("JobException")]
    frames = [line.split('"')[1] for line in report.splitlines() if line.startswith('  File "')]
    assert frames[-2:] == [str(job), str(job)]
    assert any(frame.endswith(os.path.join("plugins", "local", "tasks", "streamtask.py")) for frame in frames[:-2])


def test_console_script_runs_without_traceback(tmp_path):
    result = subprocess.run([*rill_command(), "sql", "SELECT 1"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("rill: error: no event log at ")
    assert "Traceback" not in result.stderr


def test_a_closed_stdout_ends_the_output_not_the_job(tmp_path):
    """`rill run JOB | head -1`: the print sink's reader went away; the job still finishes."""
    job = tmp_path / "many.py"
    job.write_text(
        "from kernel.common import Types\n"
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection(list(range(200_000)), Types.INT()).map(lambda v: v * 2).print()\n"
        "env.execute('many')\n")
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    process = subprocess.Popen([*rill_command(), "run", str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=tmp_path, env=env)
    assert process.stdout.readline() == b"0\n"
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    assert b"FINISHED" in err and b"Traceback" not in err
    runs = subprocess.run([*rill_command(), "runs", "--format", "json"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert json.loads(runs.stdout)[0]["status"] == "finished"


def test_a_negative_duration_is_refused(cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(USER_FAILURE_JOB)
    for value in ("-5s", "-1"):
        code, out, err = cli("run", "--duration", value, str(job))
        assert (code, out, err) == (2, "", f"rill: error: --duration {value!r}: must not be negative "
                                           "(0 runs the job until it ends)\n")
    code, out, err = cli("run", "--set", "rill.duration=-2 s", str(job))
    assert (code, out, err) == (2, "", "rill: error: config key 'rill.duration' (--set): Expected `int` >= 0 "
                                       "(e.g. '10 s'), got -2000\n")
    assert cli("runs")[1].lower().startswith("no runs recorded yet")


ASYNC_JOB = """
from kernel.common import Types
from kernel.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3], Types.INT()).map(lambda v: 6 // (v - DIVISOR)).name("Divide").print()
client = env.execute_async("submitted")
print("submitted", client.get_job_id())
"""


def test_a_job_submitted_with_execute_async_is_a_job_the_run_waits_for(cli, tmp_path):
    job = tmp_path / "async_job.py"
    job.write_text("DIVISOR = 0\n" + ASYNC_JOB)
    code, out, err = cli("run", "--clock", "simulated", str(job))
    assert code == 0, err
    lines = sorted(out.splitlines())  # the job runs on a thread of its own
    assert lines[:3] == ["2", "3", "6"] and re.fullmatch(r"submitted [0-9a-f]{32}", lines[3])
    assert json.loads(cli("runs", "--format", "json")[1])[0]["status"] == "finished"
    job.write_text("DIVISOR = 2\n" + ASYNC_JOB)  # it fails, and the script never asks for its result
    code, _, err = cli("run", "--clock", "simulated", "--quiet", str(job))
    assert code == 1
    assert err.startswith("rill: error: job 'submitted' failed (run ") and "ZeroDivisionError" in err
    job.write_text("DIVISOR = 2\n" + ASYNC_JOB + "try:\n    client.get_job_execution_result().result()\n"
                   "except Exception as exc:\n    print('handled', type(exc).__name__)\n")
    code, out, err = cli("run", "--clock", "simulated", "--quiet", str(job))
    assert (code, out.splitlines()[-1], err) == (0, "handled JobFailed", "")


ARGS_JOB = """
import sys
from kernel.common import Types
from kernel.datastream import StreamExecutionEnvironment
print("argv", sys.argv)
count = int(sys.argv[sys.argv.index("--count") + 1])
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection(list(range(count)), Types.INT()).print()
env.execute("with arguments")
"""


def test_rill_run_passes_the_program_arguments_after_the_job_file(cli, tmp_path):
    job = tmp_path / "args_job.py"
    job.write_text(ARGS_JOB)
    code, out, err = cli("run", "--clock", "simulated", "--quiet", str(job), "--count", "3", "--clock", "x", "--", "-h")
    assert code == 0, err
    assert out.splitlines() == [f"argv {[str(job), '--count', '3', '--clock', 'x', '--', '-h']}", "0", "1", "2"]
    code, out, err = cli("replay", "last", "--rerun")  # the recorded arguments are given again
    assert code == 0, err
    assert "identical sequence" in out
    code, out, _ = cli("plan", str(job), "--count", "2")
    assert code == 0 and out.splitlines()[0] == f"argv {[str(job), '--count', '2']}"
    code, out, _ = cli("run", "--help")
    assert "Usage: rill run [OPTIONS] JOB_FILE [ARGS]..." in out


def test_rill_run_loads_only_what_its_job_uses(tmp_path):
    """A small job's process imports no module for what it does not do: no event-log
    database or Arrow (the log is stored after the run), no importlib.metadata (plugins are
    found from the entry points' files), no TOML parser without a config file, none of the
    window, async I/O, broadcast or two-input operators of a job without them, no sockets or
    TCP transport with the TaskExecutors in its own process, no SQL views or event log ingest."""
    job = tmp_path / "small.py"
    job.write_text(
        "import atexit, sys\n"
        "unwanted = ('duckdb', 'pyarrow', 'importlib.metadata', 'tomllib', 'asyncio',\n"
        "            'kernel.datastream.window', 'kernel.datastream.async_data_stream',\n"
        "            'kernel.runtime.streaming.operators.window', 'kernel.runtime.streaming.operators.async_wait',\n"
        "            'kernel.runtime.streaming.operators.broadcast', 'kernel.runtime.streaming.operators.twoinput',\n"
        "            'socket', 'kernel.remoting.tcp', 'kernel.remoting.transport', 'plugins.local.network.remote',\n"
        "            'kernel.views', 'plugins.eventlog.ingest')\n"
        "atexit.register(lambda: print('loaded:', [m for m in unwanted if m in sys.modules], file=sys.stderr))\n"
        "from kernel.common import Types\n"
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([('a', 1), ('b', 2), ('a', 3)], Types.TUPLE([Types.STRING(), Types.INT()]))"
        ".key_by(lambda v: v[0], Types.STRING()).sum(1).print()\n"
        "env.execute('small')\n")
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    result = subprocess.run([*rill_command(), "run", "--quiet", str(job)], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "(a,1)\n(b,2)\n(a,4)\n"
    assert result.stderr.splitlines()[-1] == "loaded: []"


def test_the_command_ends_without_a_last_collection_unless_it_loaded_duckdb(tmp_path):
    """`rill` freezes the collector's generations when its command is done (the interpreter's
    exit does not traverse every object of the run again); not after a command that loaded
    DuckDB, whose bindings would report their objects still alive at exit. Output and the
    recorded run are complete either way."""
    job = tmp_path / "frozen.py"
    job.write_text(
        "import atexit, gc, sys\n"
        "if sys.argv[1:] == ['duckdb']:\n"
        "    import duckdb\n"
        "    duckdb.sql('SELECT 1').fetchall()\n"
        "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "from kernel.common import Types\n"
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2, 3], Types.INT()).map(lambda v: v * 2, Types.INT()).print()\n"
        "env.execute('frozen')\n")
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    for args, frozen in (((), "True"), (("duckdb",), "False")):
        result = subprocess.run([*rill_command(), "run", "--quiet", str(job), *args], capture_output=True, text=True,
                                cwd=tmp_path, env=env, timeout=300)
        assert (result.returncode, result.stdout) == (0, "2\n4\n6\n"), result.stderr
        assert result.stderr.splitlines() == [f"frozen: {frozen}"]
    runs = subprocess.run([*rill_command(), "runs", "--format", "json"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert [run["status"] for run in json.loads(runs.stdout)] == ["finished", "finished"]


def test_rill_run_keys_a_stream_by_a_list_as_pyflink(tmp_path):
    """Issue 27's job, run as a user runs it: a key Python cannot hash (``[1]``) routed and
    reduced by its pickled bytes; PyFlink 2.3.0 printed these lines (sorted here: two sinks)."""
    job = tmp_path / "list_keys.py"
    job.write_text(
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.set_parallelism(2)\n"
        "ds = env.from_collection([(1, 'a'), (2, 'b'), (3, 'c')])\n"
        "ds.key_by(lambda x: [1]).min_by(0).print()\n"
        "ds.key_by(lambda x: [x[0] % 2]).reduce(lambda a, b: (a[0] + b[0], a[1] + b[1])).print()\n"
        "env.execute()\n")
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    result = subprocess.run([*rill_command(), "run", "--quiet", str(job)], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "1> (1, 'a')", "1> (1, 'a')", "1> (1, 'a')", "1> (1, 'a')", "1> (4, 'ac')", "2> (2, 'b')"]


# -- every input a user types is checked ----------------------------------------------------------------

MAX = (1 << 63) - 1
LONG = "a duration of at most 106751 d"


@pytest.fixture(scope="module")
def recorded_log(tmp_path_factory) -> str:
    """The event log of one simulated word count."""
    base = tmp_path_factory.mktemp("checked")
    wordcount = str(Path(__file__).resolve().parents[3] / "examples" / "wordcount.py")
    env = {name: value for name, value in os.environ.items() if not name.startswith("RILL_")}
    done = subprocess.run([*rill_command(), "run", "--clock", "simulated", "--quiet", wordcount], cwd=base,
                          env={**env, "RILL_HOME": str(base / ".rill")}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return str(base / ".rill" / "rill.duckdb")


@pytest.mark.parametrize("args, line", [
    (("runs", "--limit", "-5"), f"rill runs: invalid value for '--limit': -5 is not in the range 1<=x<={MAX} (see "
                                "'rill runs --help')"),
    (("runs", "--limit", "0"), f"rill runs: invalid value for '--limit': 0 is not in the range 1<=x<={MAX} (see "
                               "'rill runs --help')"),
    (("runs", "--limit", "99999999999999999999999"), "rill runs: invalid value for '--limit': 99999999999999999999999 "
                                                     f"is not in the range 1<=x<={MAX} (see 'rill runs --help')"),
    (("replay", "last", "--events", "--from", "5", "--to", "1"), "--from '5' is after --to '1': nothing lies between "
                                                                 "them"),
    (("replay", "last", "--events", "--from", "soon"), "--from 'soon': expected a duration like '10 s'"),
    (("replay", "last", "--at", "1", "--kind", "run_started"), "--kind goes with --events, not with --at"),
    (("replay", "last", "--at", "1", "--to", "3"), "--to goes with --events, not with --at"),
    (("replay", "last", "--events", "--json"), "--json goes with --at or --rerun, not with --events"),
    (("replay", "last", "--rerun", "--from", "1"), "--from goes with --events, not with --rerun"),
    (("replay", "last", "--events", "--allow-changed"), "--allow-changed goes with --rerun, not with --events"),
    (("metrics", " "), "give a run: its id, a unique prefix of one, or last (`rill runs` lists them)"),
    (("export", "last", "--parquet", ""), "--parquet: give a directory"),
    (("sql", "--parquet", "", "SELECT 1"), "--parquet: give a path"),
    (("sql", "--checkpoint", "", "SELECT 1"), "--checkpoint: give a path"),
    (("sql", "-o", "", "SELECT 1"), "--output: give a path"),
    (("sql", "--set", "sql.timeout=0", "SELECT 1"), "config key 'sql.timeout' (--set): Expected `int` >= 1 (e.g. "
                                                    "'10 s'), got 0"),
    (("sql", "--set", "sql.timeout=99999999999d", "SELECT 1"), f"config key 'sql.timeout' (--set): {LONG} (e.g. "
                                                               "'10 s'), got '99999999999d'"),
    (("sql", "--set", "sql.max-rows=-1", "SELECT 1"), "config key 'sql.max-rows' (--set): Expected `int` >= 1, got -1"),
    (("sql", "--set", "sql.memory-limit=1kb", "SELECT 1"), "invalid configuration [sql.memory-limit (--set)]: "
                                                           "sql.memory-limit must be at least 16 MiB"),
    (("run", "--seed", str(MAX + 1), "job.py"), f"rill run: invalid value for '--seed': {MAX + 1} is not in the range "
                                                f"{-MAX - 1}<=x<={MAX} (see 'rill run --help')"),
    (("run", "--duration", "999999999d", "job.py"), f"--duration '999999999d': {LONG}"),
    (("run", "-s", "", "job.py"), "-s: give the savepoint's or checkpoint's directory (or its _metadata)"),
    (("run", "-n", "job.py"), "-n drops the state of operators the job does not have when it restores: give -s PATH"),
    (("run", "--duration", "1s", "--stop-with-savepoint", "job.py", "job.py"),
     "--stop-with-savepoint job.py is not a directory (savepoints are written under it)"),
    (("run", "--set", "rill.stop-with-savepoint=", "job.py"), "invalid configuration [rill.stop-with-savepoint "
                                                              "(--set)]: rill.stop-with-savepoint: give a directory"),
    (("run", "fifo"), "job file 'fifo' is not a regular file"),
    (("run", "--config", "fifo", "job.py"), "config file 'fifo' is not a regular file"),
    (("run", "--config", "", "job.py"), "--config: give the path of a TOML file"),
    (("run", "--inject", "raise:operator=Map,subtask=-1", "job.py"), "fault #1 (raise): subtask: Expected `int` >= 0"),
    (("run", "--inject", "kill:target=taskexecutor-1,at=-1s", "job.py"),
     "fault #1 (kill): at must not be negative (times are clock time since the run started)"),
    (("config", "--set", "execution.buffer-timeout.interval=-1"),
     "config key 'execution.buffer-timeout.interval' (--set): Expected `int` >= 0 (e.g. '10 s'), got -1"),
    (("config", "--set", "pipeline.auto-watermark-interval=-1s"),
     "config key 'pipeline.auto-watermark-interval' (--set): Expected `int` >= 0 (e.g. '10 s'), got -1000"),
    (("config", "--set", "metrics.latency.interval=-1s"),
     "config key 'metrics.latency.interval' (--set): Expected `int` >= 0 (e.g. '10 s'), got -1000"),
    (("config", "--set", "slot.request.timeout=-1s"),
     "config key 'slot.request.timeout' (--set): Expected `int` >= 0 (e.g. '10 s'), got -1000"),
    (("config", "--set", "taskmanager.memory.segment-size=0"),
     "config key 'taskmanager.memory.segment-size' (--set): Expected `int` >= 1 (e.g. '32 kb'), got 0"),
])
def test_every_input_a_user_types_is_checked(cli, tmp_path, recorded_log, args, line):
    (tmp_path / "job.py").write_text(USER_FAILURE_JOB)
    os.mkfifo(tmp_path / "fifo")
    code, out, err = cli(*args, "--set", f"eventlog.path={recorded_log}") if args[0] in (
        "runs", "replay", "metrics", "export") else cli(*args)
    assert (code, out, err) == (2, "", f"rill: error: {line}\n")


def test_the_issues_two_inputs_are_refused_by_the_rill_command(recorded_log, tmp_path):
    for args, line in ((("runs", "--limit", "-5"), f"rill: error: rill runs: invalid value for '--limit': -5 is not "
                                                   f"in the range 1<=x<={MAX} (see 'rill runs --help')\n"),
                       (("replay", "last", "--events", "--from", "5", "--to", "1"),
                        "rill: error: --from '5' is after --to '1': nothing lies between them\n")):
        done = subprocess.run([*rill_command(), *args, "--set", f"eventlog.path={recorded_log}"], capture_output=True,
                              text=True, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", line)

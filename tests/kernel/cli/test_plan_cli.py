from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WORDCOUNT = str(ROOT / "examples" / "window_wordcount.py")


def test_plan_prints_the_job_graph(cli):
    code, out, err = cli("plan", WORDCOUNT)
    assert code == 0, err
    vertex_lines = [line for line in out.splitlines()[1:] if not line.startswith(" ")]
    assert [line.split("  ")[1] for line in vertex_lines] == [
        "Source: Text File", "Flat Map", "TumblingEventTimeWindows -> Sink: Print to Std. Out",
    ]
    assert "p=3 ssg=sum_sg OneInputStreamTask" in vertex_lines[2]
    assert "    operator Sink: Print to Std. Out id=604ee7bed040266218075078a35a4449" in out.splitlines()


def test_plan_levels_and_formats(cli):
    code, out, _ = cli("plan", "--level", "stream", "--format", "json", WORDCOUNT)
    assert code == 0
    nodes = json.loads(out)["nodes"]
    assert [(n["id"], n["type"], n["parallelism"]) for n in nodes] == [
        (1, "Source: Text File", 1), (2, "Flat Map", 4), (4, "TumblingEventTimeWindows", 3),
        (5, "Sink: Print to Std. Out", 3),
    ]
    code, out, _ = cli("plan", "--level", "job", "--format", "json", WORDCOUNT)
    plan = json.loads(out)
    assert [n["parallelism"] for n in plan["nodes"]] == [1, 4, 3]
    assert plan["nodes"][2]["inputs"][0]["ship_strategy"] == "HASH"
    code, out, _ = cli("plan", "--level", "execution", WORDCOUNT)
    assert out.splitlines()[0] == (
        'ExecutionGraph "Window WordCount": 3 job vertices, 8 execution vertices, 2 intermediate results'
    )
    assert "    Flat Map (4/4)  CREATED  reads REBALANCE <- 0" in out.splitlines()
    code, out, _ = cli("plan", "--format", "dot", WORDCOUNT)
    assert out.startswith('digraph "Window WordCount" {') and '[label="HASH"]' in out


def test_plan_records_the_compilation_in_the_event_log(cli):
    cli("plan", WORDCOUNT)
    code, out, _ = cli("sql", "SELECT r.status, c.vertices, c.chained_operators, c.slot_sharing_groups "
                       "FROM ev_job_graph_compiled c JOIN runs r USING (run_id)", "--format", "csv")
    assert out.splitlines() == ["status,vertices,chained_operators,slot_sharing_groups", "planned,3,1,3"]
    code, out, _ = cli("sql", "SELECT name, parallelism, operators FROM ev_job_vertex_defined ORDER BY seq",
                       "--format", "json")
    assert [(v["name"], v["parallelism"], json.loads(v["operators"])) for v in json.loads(out)] == [
        ("Source: Text File", 1, ["Source: Text File"]),
        ("Flat Map", 4, ["Flat Map"]),
        ("TumblingEventTimeWindows -> Sink: Print to Std. Out", 3, ["TumblingEventTimeWindows", "Sink: Print to Std. Out"]),
    ]
    code, out, _ = cli("sql", "SELECT job_vertices, execution_vertices, result_partitions FROM ev_execution_graph_compiled",
                       "--format", "csv")
    assert out.splitlines()[1] == "3,8,5"


def write(tmp_path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text("from kernel.datastream import StreamExecutionEnvironment\n"
                    "env = StreamExecutionEnvironment.get_execution_environment()\n" + body)
    return str(path)


def test_a_job_that_raises_names_file_and_line(cli, tmp_path):
    code, out, err = cli("plan", write(tmp_path, "x = 1\nraise ValueError('bad input file')\n"))
    assert code == 2 and out == ""
    assert err == f"rill: error: job file {tmp_path / 'job.py'} raised ValueError: bad input file (job.py, line 4)\n"


def test_an_error_whose_message_cannot_be_read_is_still_one_line(shell, tmp_path):
    """As Python's own traceback line says of an exception whose ``str()`` raises (a Py4J error
    of a JVM that is gone): the report of a job's error stays one line (rill's internal errors
    are described by the same ``describe``, tested below)."""
    path = write(tmp_path, "class Gone(Exception):\n"
                           "    def __str__(self):\n"
                           "        raise ConnectionRefusedError(111, 'Connection refused')\n"
                           "raise Gone()\n")
    code, out, err = shell("run", path)
    assert (code, out) == (2, "")
    assert err == f"rill: error: job file {path} raised Gone: <exception str() failed> (job.py, line 6)\n"


def test_describe_says_so_when_an_exception_s_message_cannot_be_read():
    from kernel.lifecycle.tracebacks import describe

    class Gone(Exception):
        def __str__(self):
            raise ConnectionRefusedError(111, "Connection refused")

    assert describe(Gone()) == "Gone: <exception str() failed>"
    assert describe(ValueError()) == "ValueError" and describe(ValueError("x")) == "ValueError: x"


def test_a_job_that_never_executes(cli, tmp_path):
    code, _, err = cli("plan", write(tmp_path, "env.from_collection([1]).print()\n"))
    assert code == 2
    assert err.endswith("defines no job: it never calls env.execute() or env.execute_async()\n")


def test_a_job_with_a_syntax_error(cli, tmp_path):
    code, _, err = cli("plan", write(tmp_path, "def broken(:\n"))
    assert code == 2 and "is not valid Python" in err and "(line 3)" in err


def test_an_empty_job(cli, tmp_path):
    code, _, err = cli("plan", write(tmp_path, "env.execute()\n"))
    assert (code, err) == (2, "rill: error: No operators defined in streaming topology. Cannot execute.\n")


def test_an_invalid_graph_names_the_operators(cli, tmp_path):
    code, _, err = cli("plan", write(tmp_path, (
        "env.from_collection([1]).map(lambda x: x).name('Parse').forward()"
        ".map(lambda x: x).name('Enrich').set_parallelism(2).print()\nenv.execute()\n"
    )))
    assert code == 2
    assert "Upstream operation: Parse-2 parallelism: 1, downstream operation: Enrich-4 parallelism: 2" in err
    code, _, err = cli("plan", write(tmp_path, (
        "env.from_collection([1]).map(lambda x: x).name('Wide').set_parallelism(8).set_max_parallelism(2).print()\n"
        "env.execute()\n"
    )))
    assert code == 2 and "Vertex 'Wide''s parallelism (8) is higher than the max parallelism (2)" in err


def test_a_missing_job_file(cli, tmp_path):
    code, _, err = cli("plan", str(tmp_path / "nope.py"))
    assert code == 2 and "does not exist" in err


def test_last_means_the_last_executed_run_not_a_planned_one(cli, tmp_path):
    cli("plan", WORDCOUNT)
    code, _, err = cli("metrics", "last")
    assert (code, err) == (2, "rill: error: no executed run (only runs planned by `rill plan`) (recent runs: "
                              f"{json.loads(cli('runs', '--format', 'json')[1])[0]['run_id']}; `rill runs` lists them)\n")
    code, _, err = cli("run", "--quiet", "--clock", "simulated", WORDCOUNT)
    assert code == 0, err
    cli("plan", WORDCOUNT)
    runs = json.loads(cli("runs", "--format", "json")[1])
    assert [run["status"] for run in runs] == ["planned", "finished", "planned"]
    for command in (("metrics", "last"), ("replay", "last", "--at", "1")):
        code, out, err = cli(*command)
        assert code == 0, err
        assert out.startswith(f"run {runs[1]['run_id']} ")
    code, out, _ = cli("metrics", runs[0]["run_id"])  # a planned run by its id
    assert code == 0 and out.startswith(f"run {runs[0]['run_id']} (Window WordCount): planned")


def test_plan_shows_the_values_operator_of_a_keyed_union(cli, tmp_path):
    code, out, err = cli("plan", write(tmp_path, (
        "from kernel.common import Types\n"
        "env.set_parallelism(2)\n"
        "a = env.from_collection([(1, 'a'), (2, 'b')], Types.TUPLE([Types.INT(), Types.STRING()]))\n"
        "b = env.from_collection([(3, 'c')], Types.TUPLE([Types.INT(), Types.STRING()]))\n"
        "a.key_by(lambda x: x[0]).union(b).print()\n"
        "env.execute('keyed union')\n")))
    assert code == 0, err
    vertex_lines = [line for line in out.splitlines()[1:] if not line.startswith(" ")]
    assert [line.split("  ")[1:3] for line in vertex_lines] == [
        ["Source: Collection Source", "p=1 ssg=default SourceStreamTask"],
        ["Source: Collection Source", "p=1 ssg=default SourceStreamTask"],
        ["_keyed_stream_values_operator", "p=2 ssg=default OneInputStreamTask"],
        ["Sink: Print to Std. Out", "p=2 ssg=default OneInputStreamTask"],
    ]
    assert "    -> _keyed_stream_values_operator [HASH ALL_TO_ALL PIPELINED_BOUNDED]" in out.splitlines()

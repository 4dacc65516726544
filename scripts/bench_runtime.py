"""Benchmark of the local runtime: a keyed running word count over generated records.

    python scripts/bench_runtime.py [--records 1000000]

rill (parallelism 1, simulated clock) reads 1M generated words (1,000 distinct, Zipf
distributed), maps each to (word, 1), keys by word and keeps a running count with reduce;
the sink keeps the latest count per word. The same computation runs as a plain Python loop in
the same process. Prints both rates and the ratio, with the event log on (default level) and
off.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time

from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.eventbus import drain_buses
from kernel.execution import SessionExecutor
from kernel.program import use_executor
from kernel.session import Session


def zipf_words(n: int, distinct: int = 1000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [f"w{i:04d}" for i in range(distinct)]
    weights = [1.0 / (rank + 1) for rank in range(distinct)]
    return rng.choices(vocabulary, weights, k=n)


def plain_loop(words: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    counts: dict[str, tuple[str, int]] = {}
    latest: dict[str, int] = {}
    for i in range(len(words)):
        word = words[i]
        pair = (word, 1)
        previous = counts.get(word)
        if previous is not None:
            pair = (word, previous[1] + pair[1])
        counts[word] = pair
        latest[pair[0]] = pair[1]
    return time.perf_counter() - start, latest


def rill(words: list[str], eventlog: bool, directory: str) -> tuple[float, dict]:
    sets = ["rill.clock=simulated", f"eventlog.path={directory}/bench.duckdb"]
    if not eventlog:
        sets.append("plugins.disabled=eventlog.duckdb")
    session = Session.open(sets=sets, environ={})
    latest: dict[str, int] = {}

    def sink(pair: tuple[str, int]) -> None:
        latest[pair[0]] = pair[1]

    with use_executor(SessionExecutor(session, quiet=True)):
        env = StreamExecutionEnvironment.get_execution_environment()
        start = time.perf_counter()
        source = env.from_source(DataGeneratorSource(words.__getitem__, count=len(words)),
                                 WatermarkStrategy.no_watermarks(), "Words")
        (source.map(lambda w: (w, 1), Types.TUPLE([Types.STRING(), Types.INT()]))
               .key_by(lambda pair: pair[0], Types.STRING())
               .reduce(lambda a, b: (a[0], a[1] + b[1]))
               .add_sink(sink))
        env.execute("running word count")
        elapsed = time.perf_counter() - start
    drain_buses()  # the log's last flush finishes off the runtime's path; not part of the next timing
    return elapsed, latest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    words = zipf_words(args.records)
    with tempfile.TemporaryDirectory() as directory:
        rill(words[:10_000], True, directory)  # warm up imports
        base, expected = plain_loop(words)
        on, with_log = rill(words, True, directory)
        off, without_log = rill(words, False, directory)
    assert with_log == expected == without_log, "rill computed a different word count"
    n = args.records
    print(f"plain loop        {n / base:12,.0f} records/s  {base:7.3f} s")
    print(f"rill, log on      {n / on:12,.0f} records/s  {on:7.3f} s  {on / base:5.2f}x the loop's time")
    print(f"rill, log off     {n / off:12,.0f} records/s  {off:7.3f} s  {off / base:5.2f}x the loop's time")
    print(f"event log cost    {(on / off - 1) * 100:+.1f} %")
    print(f"({os.cpu_count()} cores; parallelism 1; 1,000 distinct Zipf words)")


if __name__ == "__main__":
    main()

"""Benchmark (b): a rolling keyed reduce, records crossing the network between two tasks.

    python scripts/bench_runtime.py [--records 1000000] [--rounds 5]

1M Zipf words (1,000 distinct) from ``from_collection``, mapped to (word, 1), keyed by word
(a network edge, p=1) and reduced to a running count per word; the sink keeps each word's
latest count. The plain loop calls the same map, key selector, reduce and sink functions.
"""

from __future__ import annotations

from typing import Any, Callable

from benchkit import Workload, main, zipf_words


def to_pair(word):
    return word, 1


def first(pair):
    return pair[0]


def add(a, b):
    return a[0], a[1] + b[1]


def latest_sink() -> tuple[Callable[[Any], None], Callable[[], Any]]:
    latest: dict = {}

    def keep(pair):
        latest[pair[0]] = pair[1]

    return keep, lambda: latest


def loop(records, sink):
    state: dict = {}
    get = state.get
    for word in records:
        pair = to_pair(word)
        key = first(pair)
        previous = get(key)
        if previous is not None:
            pair = add(previous, pair)
        state[key] = pair
        sink(pair)


def job(env, records, sink):
    from kernel.common import Types

    (env.from_collection(records, Types.STRING())
        .map(to_pair, Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(first, Types.STRING())
        .reduce(add)
        .add_sink(sink))


WORKLOAD = Workload("reduce", __doc__.splitlines()[0].split(": ", 1)[1], zipf_words, loop, job, latest_sink)

if __name__ == "__main__":
    main(WORKLOAD)

"""Benchmark (a): a chain of map -> filter -> flat_map, rill's per-record machinery.

    python scripts/bench_chain.py [--records 1000000] [--rounds 5]

1M Zipf words (1,000 distinct) from ``from_collection``: map each to (word, length), keep
those not ending in 7, flat_map the kept ones into their two halves, a sink counts the halves. The
whole job is one chain (p=1). The plain loop calls the same three functions per record.
"""

from __future__ import annotations

from benchkit import Workload, counting_sink, main, zipf_words


def tag(word):
    return word, len(word)


def keep(pair):
    return pair[0][-1] != "7"


def halves(pair):
    word = pair[0]
    yield word[:3]
    yield word[3:]


def loop(records, sink):
    for word in records:
        pair = tag(word)
        if keep(pair):
            for part in halves(pair):
                sink(part)


def job(env, records, sink):
    from kernel.common import Types

    (env.from_collection(records, Types.STRING())
        .map(tag, Types.TUPLE([Types.STRING(), Types.INT()]))
        .filter(keep)
        .flat_map(halves, Types.STRING())
        .add_sink(sink))


WORKLOAD = Workload("chain", __doc__.splitlines()[0].split(": ", 1)[1], zipf_words, loop, job, counting_sink)

if __name__ == "__main__":
    main(WORKLOAD)

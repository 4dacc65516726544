"""While jobs run, the young generation is collected less often; afterwards as before."""

from __future__ import annotations

import gc

from kernel.lifecycle.collector import YOUNG_THRESHOLD, collecting_for_batches
from kernel.common import Types
from tests.runtime import run_job


def test_the_young_threshold_is_raised_while_the_last_job_runs():
    before = gc.get_threshold()
    with collecting_for_batches():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        with collecting_for_batches():  # a second job at the same time (execute_async)
            assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])  # the first still runs
    assert gc.get_threshold() == before
    assert gc.isenabled()


def test_a_job_runs_with_the_raised_threshold():
    before = gc.get_threshold()
    seen: list = []

    def job(env):
        env.from_collection([1, 2], Types.INT()).map(lambda x: gc.get_threshold()[0]).add_sink(seen.append)
        env.execute("thresholds")

    run_job(job)
    assert seen == [YOUNG_THRESHOLD, YOUNG_THRESHOLD]
    assert gc.get_threshold() == before

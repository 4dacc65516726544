"""A child process for event-log tests: one realtime run emitting events steadily.

    python child_emitter.py LOG_PATH JOB_NAME COUNT FLUSH_INTERVAL [LOCK_TIMEOUT [KEY=VALUE]...]

COUNT < 0 emits until killed. Prints "started" once the run's first batch is stored, then,
for every batch, "taking FIRST LAST" before the event log's writer gets it and "flushed LAST"
once the writer is done with it (seq numbers).
"""

import sys
import time

from kernel.events import MessageDelayed
from kernel.lifecycle.session import Session


class FlushReport:
    """An observer printing the batches it sees (on the flusher thread)."""

    def __init__(self, word: str, last_only: bool) -> None:
        self.word = word
        self.last_only = last_only

    def events_emitted(self, batch) -> None:
        last = batch.first_seq + len(batch.events) - 1
        print(f"{self.word} {last}" if self.last_only else f"{self.word} {batch.first_seq} {last}", flush=True)

    def close(self, status: str) -> None:
        pass


path, name, count, flush = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sets = [f"eventlog.path={path}", f"rill.events.flush-interval={flush}"]
if len(sys.argv) > 5:
    sets.append(f"eventlog.lock-timeout={sys.argv[5]}")
sets.extend(sys.argv[6:])
session = Session.open(sets=sets, environ={})
run = session.new_run(name)
run.start()
run.bus.observers.insert(0, FlushReport("taking", last_only=False))
run.bus.observers.append(FlushReport("flushed", last_only=True))
run.bus.flush()
print("started", flush=True)
emit, now = run.bus.emit, run.clock.now
i = 0
while count < 0 or i < count:
    emit(MessageDelayed(time=now(), sender=name, receiver="b", message=str(i)))
    i += 1
    if i % 100 == 0:
        time.sleep(0.002)
run.finish("finished")

"""A child process for event-log tests: one realtime run emitting events steadily.

    python child_emitter.py LOG_PATH JOB_NAME COUNT FLUSH_INTERVAL

COUNT < 0 emits until killed. Prints "started" once the run is registered.
"""

import sys
import time

from kernel.events import MessageDelayed
from kernel.session import Session

path, name, count, flush = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
session = Session.open(sets=[f"eventlog.path={path}", f"rill.events.flush-interval={flush}"], environ={})
run = session.new_run(name)
run.start()
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
session.close()

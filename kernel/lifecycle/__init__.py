"""A job's life cycle, from the script that defines it to the outcome of its run.

:mod:`.jobfile` runs a job script with an executor in place (:mod:`.executors`); its
``env.execute()`` hands a :class:`~.program.Program` to the executor, which opens the session's
view of the job (:mod:`.session`: plugins loaded, config validated), compiles it through the
graph hooks (:mod:`.compiler`) and runs it (:mod:`.execution`: the run of :mod:`.run` with its
clock, loop and event bus, on the execution backend; the job's Python dependencies,
:mod:`.pythonenv`), or in the background for ``execute_async`` (:mod:`.async_execution`); the
run ends with its :mod:`.summary`. Around it: the garbage collector while jobs run
(:mod:`.collector`), tracebacks as users see them (:mod:`.tracebacks`), a worker's process
(:mod:`.worker_process`) and how a rill process ends (:mod:`.process_exit`)."""

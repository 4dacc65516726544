"""rill's microkernel. Imports nothing from ``plugins`` or ``replay``.

The core is the modules at this level, with :mod:`kernel.contracts` and :mod:`kernel.cli`
(5.0k lines): hook specs (:mod:`.hookspecs`), the plugin manager (:mod:`.pluginmanager`,
:mod:`.concerns`, :mod:`.entrypoints`), config (:mod:`.config`, :mod:`.configtypes`,
:mod:`.options`, :mod:`.faults`, :mod:`.sqlbounds`), clock and loop (:mod:`.clock`, :mod:`.loop`,
:mod:`.rng`), messaging (:mod:`.messaging`), events (:mod:`.events`, :mod:`.eventbus`, :mod:`.eventtables`,
:mod:`.views`, :mod:`.testing`), errors (:mod:`.errors`), the typed contract of each concern
(:mod:`kernel.contracts`) and the ``rill`` command (:mod:`kernel.cli`).

Around it, one sub-package each:

- :mod:`kernel.lifecycle` (1.7k lines): a job's life cycle, from the script to its run's
  outcome: program, executors, compiler, session, run, execution, jobfile, the job's Python
  dependencies, a worker's process;
- :mod:`kernel.runtime` (10.7k): the runtime every execution backend shares: the graphs a
  program compiles to, operators, chains, state, timers, checkpoint snapshots, the events of
  Flink's runtime model;
- :mod:`kernel.remoting` (0.9k): the messaging layer across processes (TCP frames, the
  transport, the proof that a peer belongs to the run);
- :mod:`kernel.datastream`, :mod:`kernel.common`, :mod:`kernel.metrics` (7.4k): PyFlink's API at
  PyFlink's module paths (a job imports ``kernel.X`` for ``pyflink.X``);
- :mod:`kernel.jvm` (1.8k): what PyFlink's Java side does to values, emulated without a JVM;
- :mod:`kernel.pyflink` (0.3k): what the API packages are built with (names loaded when first
  used, PyFlink's names rill refuses).

Line counts as ``find kernel/X -name '*.py' | xargs cat | wc -l`` gives them.
"""

import pluggy

PROJECT = "rill"
__version__ = "0.1.0"

#: Marker for hook implementations in rill plugins.
hookimpl = pluggy.HookimplMarker(PROJECT)

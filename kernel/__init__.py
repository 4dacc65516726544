"""rill's microkernel: program model, hook specs, plugin manager, config, clock and loop,
messaging, event schema and event bus. Imports nothing from ``plugins`` or ``replay``."""

import pluggy

PROJECT = "rill"
__version__ = "0.1.0"

#: Marker for hook implementations in rill plugins.
hookimpl = pluggy.HookimplMarker(PROJECT)

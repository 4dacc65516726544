"""What the PyFlink API packages (``kernel.datastream``, ``kernel.common``) are built with:
names imported from their modules when first used (:mod:`.lazynames`) and PyFlink's names rill
does not support, importable and refused when used (:mod:`.unsupported`,
:mod:`.unsupported_names`)."""

"""Stream operators: the base classes (:mod:`.base`), one module per family of operators, and
:mod:`.factory`, which creates the operator of a StreamNode by its kind."""

"""What PyFlink's Java side does to values, emulated without a JVM: what crosses the
Python-Java bridge (:mod:`.bridge`), what PyFlink's coders make of a value of a declared type
(:mod:`.coders`, with :mod:`.unchanged` for the values a conversion leaves as they are), Java's
``hashCode`` and ``toString`` of values (:mod:`.javavalues`), the hash a key is routed by
(:mod:`.keyhash`), which keys are one key (:mod:`.keyidentity`) and the bytes keys are sorted by
in BATCH execution (:mod:`.keybytes`)."""

"""What PyFlink's Java side does to values, emulated without a JVM."""

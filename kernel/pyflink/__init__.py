"""What the PyFlink API packages are built with."""

"""Reading recorded runs back: runs catalogue, SQL, timeline reconstruction, re-execution."""

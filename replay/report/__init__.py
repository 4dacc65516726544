"""``rill report``: a recorded run as one self-contained HTML page."""

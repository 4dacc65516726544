"""The kernel's seeded randomness.

Every consumer asks for a named stream; a stream's sequence depends only on the run's seed
and the name, never on which other streams exist or in which order they were created.
"""

from __future__ import annotations

import hashlib
import random


class SeededRandom:
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def stream(self, name: str) -> random.Random:
        """An independent ``random.Random`` for one consumer (e.g. ``"shuffle/Map/0"``)."""
        digest = hashlib.blake2b(f"{self.seed}\x00{name}".encode(), digest_size=8).digest()
        return random.Random(int.from_bytes(digest, "big"))

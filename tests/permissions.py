"""Making a file or directory unwritable to a child process, also when the tests run as root."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest


def _without_dac_override() -> None:
    """In the child, before exec: root without CAP_DAC_OVERRIDE obeys file permissions."""
    if ctypes.CDLL(None, use_errno=True).prctl(24, 1, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_DAC_OVERRIDE
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def obeying_permissions(probe: str) -> Callable[[], None] | None:
    """What makes a child obey file permissions (root ignores them unless it gives up
    CAP_DAC_OVERRIDE), checked with ``probe``, Python code that must fail with PermissionError
    in such a child; skips the test when this root cannot give it up."""
    if os.geteuid() != 0:
        return None
    done = subprocess.run([sys.executable, "-c", probe], preexec_fn=_without_dac_override, capture_output=True,
                          text=True)
    if "PermissionError" not in done.stderr:
        pytest.skip("running as root, and this root cannot give up CAP_DAC_OVERRIDE (no CAP_SETPCAP?), so "
                    f"no file is unwritable to it: {done.stderr.strip()[-200:]}")
    return _without_dac_override


def unwritable_directory(tmp_path: Path) -> tuple[Path, Callable[[], None] | None]:
    """A directory the child cannot write, and what makes it so for the child."""
    directory = tmp_path / "readonly"
    directory.mkdir()
    directory.chmod(0o555)
    return directory, obeying_permissions(f"open({str(directory / 'probe')!r}, 'w')")

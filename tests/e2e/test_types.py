"""The code type-checks: mypy, configured in pyproject.toml, finds no error."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.common import ROOT

# Kept between runs: a warm cache makes the check take a second or two instead of ~15.
CACHE = Path(tempfile.gettempdir()) / "ajedrez-mypy-cache"


def test_mypy_finds_no_error() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(CACHE),
            "ajedrez",
            "admin",
            "migrations",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr

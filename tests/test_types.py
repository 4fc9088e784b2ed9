"""The type check of src/jaxderiv: `python -m mypy` with the `[tool.mypy]` configuration of
pyproject.toml (files, settings, per-module overrides) reports no error.

mypy is pinned in the `test` extra, so every environment checks with the same version. Its cache
is the default `.mypy_cache` at the repository root (ignored by git): a cold run takes under a
minute on a slow machine (15 s on a free core), a warm one about a second.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_error():
    # No file argument: `files` in pyproject.toml says what is checked.
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, f"mypy exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"

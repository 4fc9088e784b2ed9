"""The source is linted and formatted as pyproject.toml's [tool.ruff] says (`ruff format` fixes layout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["src", "tests", "examples", "benchmarks", "docs", "noxfile.py"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    run = subprocess.run([sys.executable, "-m", "ruff", *command, *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, (
        f"ruff {' '.join(command)} (run `ruff format` / `ruff check --fix`):\n{run.stdout}{run.stderr}"
    )

"""Shared test setup: float64 for the whole session, and writers of temporary spec files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)

FORMULAS = Path(__file__).resolve().parents[1] / "formulas"
V1_7 = FORMULAS / "derivatives_v1_7.yaml"
V1_10_FLAT = FORMULAS / "derivatives_v1_10_flat.yaml"


@pytest.fixture
def write_spec(tmp_path):
    """`write_spec(text, name="spec.yaml") -> Path`: a spec file in a fresh temporary folder.

    The text is dedented and stripped of a leading newline, so that tests can write it as an
    indented triple-quoted block and still count lines from the first `- name:`.
    """
    counter = {"n": 0}

    def write(text: str, name: str | None = None) -> Path:
        counter["n"] += 1
        path = tmp_path / (name or f"spec_{counter['n']}.yaml")
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write


@pytest.fixture
def spec_from_text(write_spec):
    """`spec_from_text(text) -> Spec`: write a temporary spec file and load it."""
    from jaxderiv import load_spec

    def make(text: str, name: str | None = None):
        return load_spec(write_spec(text, name))

    return make


@pytest.fixture
def registry_from_text(spec_from_text):
    """`registry_from_text(text) -> Registry` over a temporary spec file."""
    from jaxderiv import Registry

    def make(text: str, name: str | None = None):
        return Registry(spec_from_text(text, name))

    return make


@pytest.fixture
def entry_text():
    """`entry_text(path, name) -> str`: the lines of one entry of a shipped, canonical spec file,
    from its `- name:` up to the next entry (for copying an entry into a temporary spec)."""

    def get(path: Path, name_prefix: str) -> str:
        lines = Path(path).read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(f"- name: {name_prefix}"))
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("- name:")), len(lines))
        return "\n".join(line for line in lines[start:end] if line.strip()) + "\n"

    return get

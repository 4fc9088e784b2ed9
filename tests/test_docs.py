"""The docs: the API reference is current, every public name is documented, links resolve."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))


@pytest.mark.skipif(importlib.util.find_spec("flax") is None, reason="jaxderiv.nn needs the flax extra")
def test_api_reference_is_current():
    import make_api

    assert (ROOT / "docs" / "api.md").read_text() == make_api.render(), "run `python docs/make_api.py`"


@pytest.mark.skipif(importlib.util.find_spec("flax") is None, reason="jaxderiv.nn needs the flax extra")
def test_every_public_name_has_a_docstring():
    import make_api

    assert "(no docstring)" not in make_api.render()


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))])
def test_relative_links_resolve(page):
    text = (ROOT / page).read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (ROOT / page).parent.joinpath(target).exists(), f"{page} links to missing {target}"

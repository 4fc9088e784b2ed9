"""`python -m jaxderiv diff` and the HTML check report, the latter opened in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from jaxderiv import check_all, load_spec
from jaxderiv.check.html import entries_of, to_html
from jaxderiv.cli import main
from jaxderiv.spectools.diff import diff_specs

ROOT = Path(__file__).resolve().parents[2]
FORMULAS = ROOT / "formulas"

OLD = """\
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj()

- name: cos(Tensor self) -> Tensor
  self: grad * -self.sin().conj()

- name: tan(Tensor self) -> Tensor
  self: grad * (1 + result.pow(2)).conj()
"""

# cos unchanged, sin's formula made wrong (a factor of 3), tan removed, exp added.
NEW = """\
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj() * 3

- name: cos(Tensor self) -> Tensor
  self:   grad * -self.sin().conj()

- name: exp(Tensor self) -> Tensor
  self: grad * result.conj()
  result: auto_element_wise
"""


@pytest.fixture()
def specs(tmp_path):
    (tmp_path / "old.yaml").write_text(OLD)
    (tmp_path / "new.yaml").write_text(NEW)
    return tmp_path / "old.yaml", tmp_path / "new.yaml"


def test_diff_finds_added_removed_and_changed(specs):
    d = diff_specs(*specs)
    assert [e.name for e in d.added] == ["exp"]
    assert [e.name for e in d.removed] == ["tan"]
    assert [c.name for c in d.changed] == ["sin"]  # cos differs in whitespace only
    assert d.changed[0].keys == {"self": ("grad * self.cos().conj()", "grad * self.cos().conj() * 3")}
    assert d.unchanged == 1


def test_diff_cli_checks_the_changed_entries(specs, tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["diff", str(specs[0]), str(specs[1]), "--modes", "vjp", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 added, 1 removed, 1 changed, 1 unchanged" in text
    assert "~ sin" in text and "vjp failed" in text  # the wrong factor is caught in the new file
    data = json.loads(out.read_text())
    assert data["changed"][0]["status"] == {"vjp": "failed"}


def test_diff_of_the_shipped_seeds_without_checks(capsys):
    old, new = FORMULAS / "derivatives_v1_7.yaml", FORMULAS / "derivatives_v1_10_flat.yaml"
    assert main(["diff", str(old), str(new), "--no-check", "--no-numeric"]) == 0
    text = capsys.readouterr().out
    d = diff_specs(old, new)
    assert len(d.added) + len(d.changed) + d.unchanged == len(load_spec(new))
    assert len(d.removed) + len(d.changed) + d.unchanged == len(load_spec(old))
    changed = {c.name: c for c in d.changed}
    # abs gained a forward-mode formula in the newer file
    assert "result" in changed["abs"].keys and changed["abs"].keys["result"][0] is None
    assert "~ abs" in text


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    """An HTML report of a passing op and a deliberately wrong formula."""
    d = tmp_path_factory.mktemp("html")
    (d / "new.yaml").write_text(NEW)
    spec = load_spec(d / "new.yaml")
    report = check_all(spec, ops=["sin", "cos"], modes=("vjp",))
    page = d / "report.html"
    page.write_text(to_html(report, title="my check", entries=entries_of([spec]), elapsed=1.0), encoding="utf-8")
    return report, page


def test_html_report_has_summary_families_failures_and_provenance(report_page):
    report, page = report_page
    html = page.read_text()
    assert [r.status for r in report] == ["failed", "passed"]
    assert '<section id="summary">' in html and "1 checks failed or errored" in html
    assert '<section id="families">' in html and "<td>unary</td>" in html
    assert '<section id="failures">' in html and "new.yaml:1" in html  # sin's entry, file:line
    assert "self.cos().conj() * 3" in html  # the formula the mode used
    assert "<script" not in html and "http" not in html.split("<body>")[1]  # self-contained


def test_cli_check_writes_html(tmp_path):
    page = tmp_path / "r.html"
    assert main(["check", "--ops", "cos", "--modes", "vjp", "--quiet", "--html", str(page)]) == 0
    html = page.read_text()
    assert "all checks passed" in html and "derivatives_v1_" in html


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_html_report_renders_in_headless_chromium(report_page, tmp_path):
    """Chromium parses the page and its rendered DOM holds the summary and the failing row."""
    _, page = report_page
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert '<section id="summary">' in dom and "1 checks failed or errored" in dom
    assert "<title>my check</title>" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.stat().st_size > 10_000  # something was drawn

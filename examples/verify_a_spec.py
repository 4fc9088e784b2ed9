"""Verifying a spec: edit a derivatives.yaml, run check_all on it, read the report.

The example copies three entries of the shipped PyTorch 1.10 file into a spec of your own,
edits one formula the way a hand edit goes wrong (a dropped factor in `mul.Tensor`'s gradient
for `other`), and checks the file: the untouched entries pass, the edited one fails, and the
report says which formula, where and by how much. It writes the report as HTML too.

Run: python examples/verify_a_spec.py [--quick] [--out report.html]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import jaxderiv
from jaxderiv.check.html import entries_of, to_html

SOURCE = Path(__file__).resolve().parents[1] / "formulas" / "derivatives_v1_10_flat.yaml"
ENTRIES = ("acos", "exp", "mul.Tensor")


def my_spec(edit: bool) -> str:
    """The three entries as a canonical YAML file (from the shipped spec), optionally with the bad edit."""
    spec = jaxderiv.load_spec(SOURCE)
    lines = []
    for name in ENTRIES:
        entry = spec[name]
        lines.append(f"- name: {entry.schema}")
        for f in entry.backward + entry.forward:
            text = f.text
            if edit and name == "mul.Tensor" and f.key == "other":
                text = text.replace("mul_tensor_backward(grad,", "mul_tensor_backward(grad * 0.5,")  # the mistake
            lines.append(f"  {f.key}: {json.dumps(text)}")  # a JSON string is a YAML double-quoted scalar
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first-order modes only")
    parser.add_argument("--out", default="spec_report.html", help="where to write the HTML report")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    modes = ("vjp", "jvp") if args.quick else ("vjp", "jvp", "vjp_vjp")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "my_derivatives.yaml"
        path.write_text(my_spec(edit=True))
        print(f"my spec ({path.name}):\n{path.read_text()}")
        spec = jaxderiv.load_spec(path)
        report = jaxderiv.check_all(spec, modes=modes)
        print(report.summary())
        Path(args.out).write_text(
            to_html(report, title="my_derivatives.yaml", entries=entries_of([spec])), encoding="utf-8"
        )
    seconds = time.perf_counter() - start
    print(f"\nHTML report: {args.out}; {seconds:.1f} s")
    return {"report": report, "seconds": seconds}


if __name__ == "__main__":
    main()

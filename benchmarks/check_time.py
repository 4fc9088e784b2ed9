"""Where the check's time goes, per forward family: XLA compiles against everything else.

    python benchmarks/check_time.py [--spec FILE] [--ops a,b] [--out FILE.md]

Runs `check_all` in this one process (no worker pool, no compilation cache, so that every
program is compiled and each second is counted once) and attributes each XLA compile to the
entry being checked. "other" is tracing, lowering, running and comparing. The full default
check takes about twice its cold wall time here (one process instead of one per core).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from jax._src import compiler  # noqa: E402

import jaxderiv  # noqa: E402
from jaxderiv.check import checker  # noqa: E402
from jaxderiv.forward import implementation  # noqa: E402

_current = ["(outside an entry)"]
_compile: dict[str, float] = defaultdict(float)
_total: dict[str, float] = defaultdict(float)


def _instrument() -> None:
    compile_program, check_named = compiler.backend_compile_and_load, checker._check_named

    def timed_compile(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return compile_program(*args, **kwargs)
        finally:
            _compile[_current[0]] += time.perf_counter() - t0

    def timed_entry(registry, name, *args, **kwargs):
        _current[0], t0 = name, time.perf_counter()
        try:
            return check_named(registry, name, *args, **kwargs)
        finally:
            _total[name] += time.perf_counter() - t0

    compiler.backend_compile_and_load, checker._check_named = timed_compile, timed_entry


def family(name: str) -> str:
    impl = implementation(name)
    return impl.__module__.rsplit(".", 1)[-1] if impl is not None else "(no forward)"


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", help="a derivatives.yaml (default: the shipped seed files, as `check`)")
    p.add_argument("--ops", help="comma-separated entries (default: all)")
    p.add_argument("--out", help="write the Markdown table here")
    a = p.parse_args(argv)
    _instrument()
    t0 = time.perf_counter()
    report = jaxderiv.check_all(a.spec, ops=a.ops.split(",") if a.ops else None, jobs=1)
    wall = time.perf_counter() - t0
    rows: dict[str, list] = defaultdict(lambda: [0, 0.0, 0.0])
    for name, seconds in _total.items():
        r = rows[family(name)]
        r[0], r[1], r[2] = r[0] + 1, r[1] + seconds, r[2] + _compile[name]
    lines = [
        f"{len(report)} checks of {len(_total)} entries in {wall:.0f} s, one process, no cache; "
        f"XLA compiles {sum(_compile.values()):.0f} s ({100 * sum(_compile.values()) / wall:.0f} %)",
        "",
        "| family | entries | seconds | compile (s) | compile share | other (s) |",
        "|---|---|---|---|---|---|",
    ]
    for fam, (n, total, comp) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {fam} | {n} | {total:.1f} | {comp:.1f} | {100 * comp / total:.0f} % | {total - comp:.1f} |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return text


if __name__ == "__main__":
    main()

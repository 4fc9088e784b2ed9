"""`python -m jaxderiv check | coverage`: verify rules, or report how much of a spec builds."""

from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["main"]


def _spec_arg(value):
    from .spec import load_spec

    return load_spec(value) if value else None


def _check(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .check import check_all, plan

    spec = _spec_arg(args.spec)
    ops = [n.strip() for n in args.ops.split(",") if n.strip()] if args.ops else None
    names = plan(spec, ops)
    modes = tuple(m.strip() for m in args.modes.split(","))
    start = time.perf_counter()
    columns = (TextColumn("[bold]checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, disable=args.quiet or not sys.stderr.isatty(), transient=True) as bar:
        task = bar.add_task("", total=len(names))
        report = check_all(spec, ops=ops, modes=modes, progress=lambda n: bar.update(task, advance=1, description=n))
    elapsed = time.perf_counter() - start
    print(report.summary())
    print(f"{len(names)} entries, {len(report)} checks in {elapsed:.1f} s: {'OK' if report else f'{len(report.failures)} FAILED'}")
    if args.json:
        report.write_json(args.json)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report.to_markdown())
    return 0 if report else 1


def _coverage(args) -> int:
    from .coverage import coverage

    result = coverage(args.spec)
    print(result.table())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result.to_json(), f, indent=1)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxderiv", description="PyTorch's derivatives.yaml as JAX rules.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="verify every rule against JAX autodiff and finite differences")
    p.add_argument("--spec", help="a derivatives.yaml (default: the shipped files)")
    p.add_argument("--ops", help="comma-separated op names, e.g. add.Tensor,abs")
    p.add_argument("--modes", default="vjp,jvp,vjp_vjp", help="comma-separated: vjp, jvp, vjp_vjp")
    p.add_argument("--json", help="write the rows as JSON to this file")
    p.add_argument("--markdown", help="write the rows as a Markdown table to this file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_check)
    p = sub.add_parser("coverage", help="per spec file: entries parsed, translated, implemented, verified")
    p.add_argument("--spec", help="a derivatives.yaml (default: each shipped file)")
    p.add_argument("--json", help="write the figures as JSON to this file")
    p.set_defaults(run=_coverage)
    args = parser.parse_args(argv)
    from .errors import JaxderivError

    try:
        return args.run(args)
    except JaxderivError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

"""`python -m jaxderiv check | op | coverage | parity | diff`: verify rules, show what is known about an op,
report how much of a spec builds, compare with torch, compare two spec files."""

from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["main"]


def _spec_path(value):
    """`--spec torch` names the installed torch's derivatives.yaml; anything else is a path."""
    from .spec import torch_spec_file

    return str(torch_spec_file()) if value == "torch" else value


def _spec_arg(value, torch_version=None):
    """The Spec of `--spec` (None: the default), of release `--torch-version` if given."""
    from .errors import SpecError
    from .spec import load_spec

    if not value:
        if torch_version:
            raise SpecError("--torch-version needs --spec: the default spec's files each have their own release")
        return None
    return load_spec(_spec_path(value), torch_version=torch_version)


_VERSION_HELP = (
    "the PyTorch release of the --spec file, e.g. 1.7 or 2.14.1 (default: detected from the file's content; "
    "the newest meanings are assumed when it cannot be)"
)


def _transforms(value: str) -> tuple[str, ...]:
    """`--transforms jit,vmap` as a tuple; an unknown name is a usage error, not a traceback."""
    from .check.transforms import TRANSFORMS

    names = tuple(t.strip() for t in value.split(",") if t.strip())
    unknown = [t for t in names if t not in TRANSFORMS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown transform(s) {', '.join(unknown)}; choose from {', '.join(TRANSFORMS)}"
        )
    return names


def _check(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .check import MODES, check_all, plan

    from .check.pool import default_cache_dir, default_jobs

    spec = _spec_arg(args.spec, args.torch_version)
    ops = [n.strip() for n in args.ops.split(",") if n.strip()] if args.ops else None
    if args.changed:
        ops = _changed_entries(args.changed, spec, ops)
    names = plan(spec, ops)
    # Spawning workers costs a few seconds each: worth it from a few dozen entries on.
    jobs = args.jobs if args.jobs is not None else (default_jobs() if len(names) >= 24 else 1)
    cache = None if args.no_cache else (args.cache_dir or default_cache_dir())
    modes = MODES if args.modes is None else tuple(m.strip() for m in args.modes.split(","))
    start = time.perf_counter()
    columns = (
        TextColumn("[bold]checking"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, disable=args.quiet or not sys.stderr.isatty(), transient=True) as bar:
        task = bar.add_task("", total=len(names))
        report = check_all(
            spec,
            ops=ops,
            modes=modes,
            seed=args.seed,
            sample=args.sample,
            per_element=args.per_element,
            thorough=args.thorough,
            transforms=args.transforms,
            jobs=jobs,
            compilation_cache=cache,
            progress=lambda n: bar.update(task, advance=1, description=n),
        )
    elapsed = time.perf_counter() - start
    print(report.summary())
    print(
        f"{len(names)} entries, {len(report)} checks in {elapsed:.1f} s: {'OK' if report else f'{len(report.failures)} FAILED'}"
    )
    if args.json:
        report.write_json(args.json)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report.to_markdown())
    if args.html:
        _write_html(report, spec, args, elapsed)
    return 0 if report else 1


def _changed_entries(old_file: str, spec, ops):
    """`check --changed OLD`: the entries of --spec that OLD lacks or states other formulas for."""
    from .errors import SpecError
    from .spec import load_spec
    from .spectools.diff import diff_specs

    if spec is None:
        raise SpecError("--changed OLD needs --spec NEW: the entries of NEW that differ from OLD are checked")
    d = diff_specs(load_spec(_spec_path(old_file)), spec)
    names = [e.name for e in d.added] + [c.name for c in d.changed]
    return [n for n in names if ops is None or n in ops]


def _write_html(report, spec, args, elapsed) -> None:
    from .check.html import entries_of, to_html
    from .spec import load_spec, shipped_spec_files

    specs = [spec] if spec is not None else [load_spec(p) for p in shipped_spec_files()]
    title = (
        f"jaxderiv check: {args.spec or 'shipped spec files'}"  # each file's release is in the report (Report.versions)
    )
    with open(args.html, "w", encoding="utf-8") as f:
        f.write(to_html(report, title=title, entries=entries_of(specs), elapsed=elapsed))


def _coverage(args) -> int:
    from .spectools.coverage import coverage

    if args.torch_version and not args.spec:
        from .errors import SpecError

        raise SpecError("--torch-version needs --spec: the default spec's files each have their own release")
    if not args.run_formulas:
        result = coverage(_spec_path(args.spec), torch_version=args.torch_version)
    else:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from .check.pool import default_cache_dir

        columns = (
            TextColumn("[bold]running formulas"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
        )
        with Progress(*columns, disable=not sys.stderr.isatty(), transient=True) as bar:
            task = bar.add_task("", total=None)
            result = coverage(
                _spec_path(args.spec),
                torch_version=args.torch_version,
                run=True,
                progress=lambda n: bar.update(task, description=n),
                compilation_cache=default_cache_dir(),
            )
    return _report(result.table(), result.to_json(), args.json)


def _report(text: str, data, path: str | None) -> int:
    """Print a command's report and, where --json names a file, write its data there too."""
    print(text)
    if path:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
    return 0


def _parity(args) -> int:
    """Needs torch: compares every implemented op (or --ops) with torch.ops.aten and autograd."""
    from importlib.metadata import version

    from .check.parity import judged_by_content, parity, to_markdown, unexplained, write_json
    from .registry import Registry, default_registry, seed_registry

    if args.opinfo:
        return _opinfo(args)
    spec = _spec_arg(args.spec, args.torch_version)
    if spec is not None:
        registry = Registry(spec)
    else:
        registry = seed_registry() if args.seeds else default_registry()
    ops = [n.strip() for n in args.ops.split(",") if n.strip()] if args.ops else None
    rows = parity(
        registry, ops, max_samples=args.samples, jobs=args.jobs, progress=args.jobs > 1 and sys.stderr.isatty()
    )
    torch_version = version("torch")
    # the known differences of the op records, per entry: those of the judged file (the seeds',
    # torch's own, torch 2.14.1's) whose entry is written the same, whatever the file's name
    torch_spec = judged_by_content(registry.spec)
    named = args.spec or (
        "the seed files (PyTorch 1.7's and 1.10's)"
        if args.seeds
        else "default (torch 2.14.1's file, with the seed files' entries for the ops it lacks)"
    )
    title = f"# Parity with PyTorch {torch_version}\n\nSpec: {named}" + (
        f", {spec.version}." if spec is not None else "."
    )
    text = to_markdown(rows, title, torch_spec)
    print(text)
    if args.json:
        write_json(rows, args.json, torch_version)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    # Exit 1 only for differences not listed with their reason (listed ones are measured facts).
    return 1 if unexplained(rows, torch_spec) else 0


def _opinfo(args) -> int:
    """`parity --opinfo`: PyTorch's OpInfo samples replayed (jaxderiv.check.opinfo), all of op_db
    unless --ops / --samples / --time-limit narrow it."""
    if args.seeds or (args.spec and args.spec != "torch") or args.json:
        raise SystemExit(
            "parity --opinfo replays against the default registry or torch's own file (--spec torch); "
            "--seeds, another --spec and --json are not taken"
        )
    from .check.opinfo import main

    argv = ["--registry", "torch" if args.spec == "torch" else "default", "--jobs", str(args.jobs)]
    for flag, value in [
        ("--ops", args.ops),
        ("--samples", args.samples),
        ("--time-limit", args.time_limit),
        ("--markdown", args.markdown),
    ]:
        if value is not None:
            argv += [flag, str(value)]
    return main(argv)


def _diff(args) -> int:
    """Entries added, removed and changed from spec A to spec B; the changed ones checked in B and,
    with --numeric, both files' ops evaluated on the same inputs: whether the gradient changes."""
    from .check import MODES, check_all
    from .spec import load_spec
    from .spectools.diff import diff_specs

    new_spec = load_spec(_spec_path(args.new), torch_version=args.new_torch_version)
    result = diff_specs(load_spec(_spec_path(args.old), torch_version=args.old_torch_version), new_spec)
    result.old_file, result.new_file = args.old, args.new
    if args.check and result.changed:
        modes = MODES if args.modes is None else tuple(m.strip() for m in args.modes.split(","))
        report = check_all(new_spec, ops=[c.name for c in result.changed], modes=modes)
        for row in report:
            for c in result.changed:
                if c.name == row.op:
                    c.status[row.mode] = row.status
    if args.numeric and (result.changed or result.added or result.removed):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (
            TextColumn("[bold]comparing"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
        )
        with Progress(
            *columns, disable=args.quiet or len(result.changed) < 10 or not sys.stderr.isatty(), transient=True
        ) as bar:
            task = bar.add_task("", total=len(result.changed))
            result.numeric(progress=lambda n: bar.update(task, advance=1, description=n), seed=args.seed)
    return _report(result.to_text(), result.to_json(), args.json)


def _op(args) -> int:
    from .check.describe import describe

    spec = _spec_arg(args.spec, args.torch_version)
    print("\n\n".join(describe(name.strip(), spec) for name in args.names))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxderiv", description="PyTorch's derivatives.yaml as JAX rules.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="verify every rule against JAX autodiff and finite differences")
    p.add_argument("--spec", help="a derivatives.yaml, or 'torch' for the installed torch's (default: the seed files)")
    p.add_argument("--ops", help="comma-separated op names, e.g. add.Tensor,abs")
    p.add_argument(
        "--modes",
        help="comma-separated, all by default: vjp, jvp, vjp_vjp (second-order gradient), jvp_vjp (forward-over-reverse), vjp_jvp (reverse-over-forward: the gradient of the result: formula), vjp_vjp_vjp (third order, where a backward formula calls another entry's op), float32, bfloat16 (elementwise and reduction rules against the float64 rule)",
    )
    p.add_argument("--json", help="write the rows as JSON to this file")
    p.add_argument("--markdown", help="write the rows as a Markdown table to this file")
    p.add_argument("--html", help="write a self-contained HTML report to this file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="check only the sample of this index (the random directions of the full run)",
    )
    p.add_argument("--per-element", action="store_true", help="also compare full Jacobians element by element (slow)")
    p.add_argument(
        "--thorough",
        action="store_true",
        help="compare the derivatives with an output's cotangent (vjp) or an input's tangent (jvp) undefined with JAX autodiff and finite differences too (by default: with the rule's own, zero-filled)",
    )
    p.add_argument(
        "--transforms",
        type=_transforms,
        default="jit",
        help="comma-separated: jit (always; batched over 2 cotangents/tangents), nojit, vmap (batched over 2 stacked inputs too)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the samples and random directions")
    p.add_argument("--torch-version", help=_VERSION_HELP)
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        help="worker processes (default: one per core from 24 entries on, else 1)",
    )
    p.add_argument("--cache-dir", help="JAX's persistent compilation cache (default: $XDG_CACHE_HOME/jaxderiv/xla)")
    p.add_argument("--no-cache", action="store_true", help="compile everything afresh, keeping nothing")
    p.add_argument(
        "--changed", metavar="OLD", help="check only the entries of --spec that differ from (or are not in) this file"
    )
    p.set_defaults(run=_check)
    p = sub.add_parser("op", help="what jaxderiv knows about an op: its spec entries, forward and op record")
    p.add_argument("names", nargs="+", help="entry names, e.g. clamp.Tensor abs")
    p.add_argument(
        "--spec", help="a derivatives.yaml, or 'torch' for the installed torch's (default: every shipped file)"
    )
    p.add_argument("--torch-version", help=_VERSION_HELP)
    p.set_defaults(run=_op)
    p = sub.add_parser("coverage", help="per spec file: entries parsed, translated, implemented, verified")
    p.add_argument(
        "--spec", help="a derivatives.yaml, or 'torch' for the installed torch's (default: each shipped file)"
    )
    p.add_argument("--json", help="write the figures as JSON to this file")
    p.add_argument("--torch-version", help=_VERSION_HELP)
    p.add_argument(
        "--run",
        action="store_true",
        dest="run_formulas",
        help="also run each implemented entry's vjp and jvp on its first checker sample, and count as "
        "translated only the entries whose formulas run (minutes)",
    )
    p.set_defaults(run=_coverage)
    p = sub.add_parser("parity", help="compare values, vjp, jvp, kinks and complex with the installed torch")
    p.add_argument(
        "--spec",
        help="a derivatives.yaml, or 'torch' for the installed torch's (default: the default registry's spec, "
        "torch 2.14.1's file with the seeds' entries for the ops it lacks)",
    )
    p.add_argument(
        "--seeds", action="store_true", help="the seed files' union (PyTorch 1.7's and 1.10's) instead of the default"
    )
    p.add_argument("--ops", help="comma-separated op names (default: every implemented entry)")
    p.add_argument(
        "--samples", type=int, default=None, help="compare on the first N checker samples of each op (default: all)"
    )
    p.add_argument("--json", help="write the rows as JSON to this file")
    p.add_argument("--markdown", help="write the table as Markdown to this file")
    p.add_argument("--torch-version", help=_VERSION_HELP)
    p.add_argument(
        "--opinfo",
        action="store_true",
        help="replay PyTorch's OpInfo samples instead (needs expecttest; --ops names OpInfos, "
        "--samples caps samples per OpInfo and dtype): docs/opinfo.md",
    )
    p.add_argument(
        "--jobs", type=int, default=1, help="processes the ops (with --opinfo: the OpInfos) are compared in (default 1)"
    )
    p.add_argument("--time-limit", type=float, help="with --opinfo: stop starting samples after this many seconds")
    p.set_defaults(run=_parity)
    p = sub.add_parser("diff", help="entries added, removed and changed between two spec files")
    p.add_argument("old", help="a derivatives.yaml, or 'torch' for the installed torch's")
    p.add_argument("new", help="a derivatives.yaml, or 'torch' for the installed torch's")
    p.add_argument("--no-check", dest="check", action="store_false", help="do not check the changed entries")
    p.add_argument("--modes", help="modes to check the changed entries in (default: all)")
    p.add_argument(
        "--numeric",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="evaluate both files' vjp and jvp of each changed entry on the checker's samples and kink inputs: "
        "same gradient, gradient changes, schema changed or not comparable (default: on; --no-numeric: text only)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the numeric comparison's samples, cotangents and tangents"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", help="write the diff as JSON to this file")
    p.add_argument(
        "--old-torch-version", help="the PyTorch release of the old file (default: detected from its content)"
    )
    p.add_argument(
        "--new-torch-version", help="the PyTorch release of the new file (default: detected from its content)"
    )
    p.set_defaults(run=_diff)
    args = parser.parse_args(argv)
    from .errors import JaxderivError

    try:
        return args.run(args)
    except JaxderivError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

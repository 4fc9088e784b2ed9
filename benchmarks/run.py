"""jaxderiv against JAX's own differentiation: ops, models, compile time, memory, start-up, scale-out.

    python benchmarks/run.py [--quick] [--out DIR] [--ops sin,mm] [--sections ops,models,...] [--checker]

Every figure is a ratio of programs measured in the same run, in turns (A, B, A, B, ...),
the median of repeated samples. Results go to DIR/benchmarks.md and DIR/benchmarks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import models as models_mod  # noqa: E402
import ops as ops_mod  # noqa: E402
import report  # noqa: E402
import scaleout  # noqa: E402
import startup  # noqa: E402
from timing import interleaved, interleaved_once, machine  # noqa: E402

SECTIONS = ("ops", "models", "compile", "memory", "startup", "scaleout", "checker")


def _cost(compiled) -> dict:
    ca = compiled.cost_analysis()
    ca = ca[0] if isinstance(ca, list) else (ca or {})
    return {"flops": ca.get("flops", 0.0), "bytes": ca.get("bytes accessed", 0.0)}


def bench_ops(names, quick: bool, log, sizes=ops_mod.SIZES, repeats=None) -> list[dict]:
    repeats, target = (repeats or (15 if quick else 31)), (0.002 if quick else 0.005)
    rows = []
    for case in ops_mod.CASES:
        if names and case.name not in names:
            continue
        for size in sizes:
            fns, args = ops_mod.programs(case, size)
            compiled = [f.lower(*args).compile() for f in fns]
            difference = ops_mod.agreement(compiled, args)
            samples = interleaved(compiled, [args] * 3, repeats, target, stat=None)
            t, best = [_median(x) for x in samples], [min(x) for x in samples]
            cost = [_cost(c) for c in compiled[:2]]
            row = {
                "op": case.name,
                "family": case.family,
                "size": size,
                "ours_s": t[0],
                "native_s": t[1],
                "impl_autodiff_s": t[2],
                "ratio": t[0] / t[1],
                "ratio_vs_impl_autodiff": t[0] / t[2],
                "ratio_of_minima": best[0] / best[1],
                "max_difference": difference,
                "same_hlo": ops_mod.hlo_ops(compiled[0]) == ops_mod.hlo_ops(compiled[1]),
                "same_hlo_as_impl_autodiff": ops_mod.hlo_ops(compiled[0]) == ops_mod.hlo_ops(compiled[2]),
                "flops_ratio": _ratio(cost[0]["flops"], cost[1]["flops"]),
                "bytes_ratio": _ratio(cost[0]["bytes"], cost[1]["bytes"]),
            }
            rows.append(row)
            log(
                f"  {case.name:26s} {size:5s} {row['ratio']:.2f} (vs impl autodiff {row['ratio_vs_impl_autodiff']:.2f}; max difference {difference:.1e})"
            )
    return rows


def _ratio(a, b):
    return a / b if b else float("nan")


def _steps(model, quick):
    params, batch = models_mod.jax_inputs(model, quick)
    arrays, _ = models_mod.split_static(batch)
    return params, batch, arrays


def bench_models(quick: bool, with_torch: bool, log, names=(), repeats=None) -> list[dict]:
    repeats, target = (repeats or (9 if quick else 21)), (0.01 if quick else 0.03)
    rows = []
    for model in models_mod.MODELS:
        if names and model.name not in names:
            continue
        params, batch, arrays = _steps(model, quick)
        fns = [
            models_mod.jitted_step(model.ours, batch).lower(params, arrays).compile(),
            models_mod.jitted_step(model.native, batch).lower(params, arrays).compile(),
        ]
        args = [(params, arrays)] * 2
        losses = [float(fns[0](*args[0])[1]), float(fns[1](*args[1])[1])]
        samples = interleaved(fns, args, repeats, target, stat=None)
        t, best = [_median(x) for x in samples], [min(x) for x in samples]
        row = {
            "model": model.name,
            "ours_s": t[0],
            "native_s": t[1],
            "ratio": t[0] / t[1],
            "ratio_of_minima": best[0] / best[1],
            "losses": losses,
        }
        cost = [_cost(f) for f in fns]
        row.update(
            flops_ratio=_ratio(cost[0]["flops"], cost[1]["flops"]),
            bytes_ratio=_ratio(cost[0]["bytes"], cost[1]["bytes"]),
        )
        if with_torch:
            # A pair of its own: torch's OpenMP workers and XLA's pool slow whichever runs next.
            step = models_mod.torch_step(model, quick)
            losses.append(step())
            ours, torch_s = interleaved([fns[0], step], [args[0], ()], repeats, target, settle_s=0.05)
            row.update(torch_s=torch_s, ratio_vs_torch=ours / torch_s)
        rows.append(row)
        log(
            f"  {model.name:18s} {row['ratio']:.2f}"
            + (f"  vs torch eager {row['ratio_vs_torch']:.2f}" if with_torch else "")
        )
    return rows


def bench_compile(quick: bool, log, names=(), repeats=None) -> tuple[list[dict], list[dict]]:
    """(lower + compile seconds, temp bytes) of each model's train step, jaxderiv vs native."""
    repeats = repeats or (3 if quick else 7)
    times, memory = [], []
    for model in models_mod.MODELS:
        if names and model.name not in names:
            continue
        params, batch, arrays = _steps(model, quick)
        # One step first: builds the ops used (parse + translate), a once-per-process cost.
        models_mod.jitted_step(model.ours, batch).lower(params, arrays)
        result = {}

        def thunk(loss, key):
            def run():
                start = time.perf_counter()
                lowered = models_mod.jitted_step(loss, batch).lower(params, arrays)
                mid = time.perf_counter()
                compiled = lowered.compile()
                result.setdefault(key, []).append((mid - start, time.perf_counter() - mid, compiled))

            return run

        interleaved_once([thunk(model.ours, "ours"), thunk(model.native, "native")], repeats)
        med = {k: (_median([a for a, _, _ in v]), _median([b for _, b, _ in v])) for k, v in result.items()}
        row = {
            "model": model.name,
            "ours_lower_s": med["ours"][0],
            "ours_compile_s": med["ours"][1],
            "native_lower_s": med["native"][0],
            "native_compile_s": med["native"][1],
        }
        row["ratio"] = (row["ours_lower_s"] + row["ours_compile_s"]) / (row["native_lower_s"] + row["native_compile_s"])
        row["lower_ratio"] = row["ours_lower_s"] / row["native_lower_s"]
        times.append(row)
        mem = [result[k][0][2].memory_analysis() for k in ("ours", "native")]
        m = {
            "model": model.name,
            "ours_temp_bytes": mem[0].temp_size_in_bytes,
            "native_temp_bytes": mem[1].temp_size_in_bytes,
        }
        m["ratio"] = _ratio(m["ours_temp_bytes"], m["native_temp_bytes"])
        memory.append(m)
        log(
            f"  {model.name:18s} compile {row['ratio']:.2f} (trace+lower {row['lower_ratio']:.2f})  temp memory {m['ratio']:.2f}"
        )
    return times, memory


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def bench_checker(log) -> dict:
    """Wall time of the full `python -m jaxderiv check` (minutes: only on request)."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "jaxderiv", "check"], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    log(f"  full check: {seconds:.0f} s (exit {run.returncode})")
    return {"seconds": seconds, "returncode": run.returncode, "tail": run.stdout[-400:]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller models, fewer repeats (about 5 minutes on 2 cores)")
    p.add_argument("--out", default=str(HERE / "results"), help="folder for benchmarks.md and benchmarks.json")
    p.add_argument("--ops", default="", help="comma-separated op names: only these in the op suite")
    p.add_argument(
        "--sections",
        default=",".join(s for s in SECTIONS if s != "checker"),
        help=f"comma-separated, from {','.join(SECTIONS)}",
    )
    p.add_argument("--models", default="", help="comma-separated model names: only these (mlp, cnn, transformer_block)")
    p.add_argument("--sizes", default=",".join(ops_mod.SIZES), help="op suite sizes: small,large")
    p.add_argument("--repeats", type=int, default=None, help="samples per figure (default: 7 quick, 21 full for ops)")
    p.add_argument(
        "--checker", action="store_true", help="also time the full `python -m jaxderiv check` (about 25 minutes)"
    )
    p.add_argument("--no-torch", action="store_true", help="leave torch eager out of the model table")
    args = p.parse_args(argv)
    sections = {s for s in args.sections.split(",") if s}
    if args.checker:
        sections.add("checker")
    unknown = sections - set(SECTIONS)
    if unknown:
        p.error(f"unknown sections {sorted(unknown)}")
    with_torch = not args.no_torch and _torch_available()
    log = lambda s: print(s, flush=True)  # noqa: E731
    models = tuple(n for n in args.models.split(",") if n)

    results = {
        "machine": machine(),
        "mode": "quick" if args.quick else "full",
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if with_torch:
        import torch

        torch.set_num_threads(results["machine"]["cores_usable"])
        results["machine"]["torch"] = torch.__version__
        results["machine"]["torch_threads"] = torch.get_num_threads()
    log("machine: " + ", ".join(f"{k}={v}" for k, v in results["machine"].items()))
    begin = time.perf_counter()
    if "ops" in sections:
        log("op suite (jitted value_and_grad; ratio = jaxderiv / native JAX)")
        results["ops"] = bench_ops(
            {n for n in args.ops.split(",") if n}, args.quick, log, tuple(args.sizes.split(",")), args.repeats
        )
    if "models" in sections:
        log("train steps")
        results["models"] = bench_models(args.quick, with_torch, log, models, args.repeats)
    if "compile" in sections or "memory" in sections:
        log("compile time and temp memory")
        results["compile"], results["memory"] = bench_compile(args.quick, log, models, args.repeats)
    if "startup" in sections:
        log("start-up")
        results["startup"] = startup.measure(3 if args.quick else 7)
        log("  " + ", ".join(f"{k} {v:.3f}" for k, v in results["startup"].items()))
    if "scaleout" in sections:
        log("scale-out (mlp, data parallel over host devices)")
        results["scaleout"] = scaleout.measure("mlp", args.quick, 7 if args.quick else 15)
        log("  " + json.dumps(results["scaleout"]))
    if "checker" in sections:
        log("checker")
        results["checker"] = bench_checker(log)
    results["seconds"] = time.perf_counter() - begin
    results["summary"] = report.summary(results)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmarks.json").write_text(json.dumps(results, indent=1, default=float))
    markdown = report.markdown(results)
    (out / "benchmarks.md").write_text(markdown)
    print()
    print(markdown)
    print(f"written: {out / 'benchmarks.md'}, {out / 'benchmarks.json'} ({results['seconds']:.0f} s)")
    return 0


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())

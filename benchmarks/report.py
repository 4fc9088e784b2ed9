"""The benchmark's goals, its summary and its Markdown table."""

from __future__ import annotations

import math

# (figure, goal): every ratio is jaxderiv / native JAX unless said otherwise.
GOALS = {
    "ops_geomean": 1.00,
    "ops_max": 1.10,
    "train_step_max": 1.02,
    "train_step_vs_torch_max": 1.00,
    "compile_max": 1.5,
    "temp_memory_max": 1.0,
    "startup_s": 0.5,
    "checker_s": 600.0,
}


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(r: dict) -> dict:
    """Each measured headline figure beside its goal."""
    figures = {}
    if r.get("ops"):
        ratios = [row["ratio"] for row in r["ops"]]
        figures["ops_geomean"] = geomean(ratios)
        figures["ops_max"] = max(ratios)
        for size in ("small", "large"):
            figures[f"ops_geomean_{size}"] = geomean([row["ratio"] for row in r["ops"] if row["size"] == size])
        figures["ops_geomean_vs_impl_autodiff"] = geomean([row["ratio_vs_impl_autodiff"] for row in r["ops"]])
        figures["ops_over_1.10"] = sum(x > 1.10 for x in ratios)
        figures["ops_geomean_of_minima"] = geomean([row["ratio_of_minima"] for row in r["ops"]])
        figures["ops_same_hlo_as_native"] = sum(row["same_hlo"] for row in r["ops"])
    if r.get("models"):
        figures["train_step_max"] = max(row["ratio"] for row in r["models"])
        figures["train_step_max_of_minima"] = max(row["ratio_of_minima"] for row in r["models"])
        if "ratio_vs_torch" in r["models"][0]:
            figures["train_step_vs_torch_max"] = max(row["ratio_vs_torch"] for row in r["models"])
    if r.get("compile"):
        figures["compile_max"] = max(row["ratio"] for row in r["compile"])
    if r.get("memory"):
        figures["temp_memory_max"] = max(row["ratio"] for row in r["memory"])
    if r.get("startup"):
        figures["startup_s"] = r["startup"]["ready_beyond_jax"]
    if r.get("checker"):
        figures["checker_s"] = r["checker"]["seconds"]
    return {
        k: {"value": v, "goal": GOALS.get(k), "met": (v <= GOALS[k]) if k in GOALS else None}
        for k, v in figures.items()
    }


def _f(x, digits=2):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _yes(b):
    return "yes" if b else "no"


def _us(s):
    return f"{s * 1e6:.1f}" if s < 1e-3 else f"{s * 1e6:.0f}"


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [
        f"Measured {r['started']} ({r['mode']} run, {r.get('seconds', 0):.0f} s) on {m['cpu']}, "
        f"{m['cores_usable']} usable cores, Python {m['python']}, jax {m['jax']}"
        + (f", jaxlib {m['jaxlib']}" if "jaxlib" in m else "")
        + (f", torch {m['torch']} ({m['torch_threads']} threads)" if "torch" in m else "")
        + (f"; load average {m['load']}" if "load" in m else "")
        + ".",
        "",
        "## Goals",
        "",
        "| figure | measured | goal | met |",
        "|---|---|---|---|",
    ]
    for k, v in r.get("summary", {}).items():
        goal = v["goal"]
        lines.append(
            f"| {k} | {_f(v['value']) if isinstance(v['value'], float) else v['value']} | {'≤ ' + _f(goal) if goal is not None else ''} | {'' if v['met'] is None else ('yes' if v['met'] else '**no**')} |"
        )
    if r.get("ops"):
        lines += [
            "",
            "## Op suite: jitted value_and_grad of a random-weighted sum",
            "",
            "ratio = jaxderiv / the same forward in jax.numpy/lax differentiated by JAX; "
            "vs impl = jaxderiv / jaxderiv's own forward implementation differentiated by JAX (the rules' cost alone); "
            "flops, bytes: XLA's cost analysis of the two compiled programs (noise-free); "
            "same HLO: the optimized programs have the same instructions (then any ratio away from 1.00 is timing noise).",
            "",
            "| op | family | size | jaxderiv µs | native µs | ratio | ratio of minima | vs impl | flops | bytes | same HLO as native / impl |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in r["ops"]:
            lines.append(
                f"| {row['op']} | {row['family']} | {row['size']} | {_us(row['ours_s'])} | {_us(row['native_s'])} | "
                f"{_f(row['ratio'])} | {_f(row['ratio_of_minima'])} | {_f(row['ratio_vs_impl_autodiff'])} | {_f(row['flops_ratio'])} | {_f(row['bytes_ratio'])} | "
                f"{_yes(row['same_hlo'])} / {_yes(row['same_hlo_as_impl_autodiff'])} |"
            )
    if r.get("models"):
        torch = "torch_s" in r["models"][0]
        lines += [
            "",
            "## Train steps (forward, backward, SGD update)",
            "",
            "| model | jaxderiv ms | native ms | ratio | ratio of minima | flops | bytes |"
            + (" torch eager ms | jaxderiv / torch |" if torch else ""),
            "|---|---|---|---|---|---|---|" + ("---|---|" if torch else ""),
        ]
        for row in r["models"]:
            lines.append(
                f"| {row['model']} | {row['ours_s'] * 1e3:.2f} | {row['native_s'] * 1e3:.2f} | {_f(row['ratio'])} | {_f(row['ratio_of_minima'])} | {_f(row['flops_ratio'])} | {_f(row['bytes_ratio'])} |"
                + (f" {row['torch_s'] * 1e3:.2f} | {_f(row['ratio_vs_torch'])} |" if torch else "")
            )
    if r.get("compile"):
        lines += [
            "",
            "## Compile time of the train steps (trace + lower, then XLA compile)",
            "",
            "| model | jaxderiv lower s | jaxderiv compile s | native lower s | native compile s | ratio (total) | ratio (lower) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in r["compile"]:
            lines.append(
                f"| {row['model']} | {row['ours_lower_s']:.3f} | {row['ours_compile_s']:.3f} | {row['native_lower_s']:.3f} | "
                f"{row['native_compile_s']:.3f} | {_f(row['ratio'])} | {_f(row['lower_ratio'])} |"
            )
    if r.get("memory"):
        lines += [
            "",
            "## Temp memory of the train steps (XLA memory analysis)",
            "",
            "| model | jaxderiv bytes | native bytes | ratio |",
            "|---|---|---|---|",
        ]
        for row in r["memory"]:
            lines.append(
                f"| {row['model']} | {row['ours_temp_bytes']} | {row['native_temp_bytes']} | {_f(row['ratio'])} |"
            )
    if r.get("startup"):
        s = r["startup"]
        lines += ["", "## Start-up (fresh interpreters, median)", "", "| stage | seconds |", "|---|---|"]
        for k in (
            "import_jax",
            "import_jaxderiv",
            "load_default_spec",
            "first_op",
            "ready_beyond_jax",
            "build_every_op",
        ):
            lines.append(
                f"| {k}{' (' + str(s['ops_built']) + ' of ' + str(s['entries']) + ' entries)' if k == 'build_every_op' else ''} | {s[k]:.3f} |"
            )
    if r.get("scaleout"):
        so = r["scaleout"]
        one, four = so.get("1") or so.get(1), so.get("4") or so.get(4)
        lines += [
            "",
            "## Scale-out: mlp train step, batch sharded over host devices (NamedSharding)",
            "",
            "| devices | jaxderiv ms | native ms | ratio |",
            "|---|---|---|---|",
        ]
        for d in (one, four):
            lines.append(
                f"| {d['devices']} | {d['ours'] * 1e3:.2f} | {d['native'] * 1e3:.2f} | {_f(d['ours'] / d['native'])} |"
            )
        lines.append(
            f"\n4 vs 1 device step time, jaxderiv: {_f(four['ours'] / one['ours'])}; native: {_f(four['native'] / one['native'])}."
        )
    if r.get("checker"):
        lines += [
            "",
            f"## Checker\n\nfull `python -m jaxderiv check`: {r['checker']['seconds']:.0f} s (exit {r['checker']['returncode']}).",
        ]
    else:
        lines += ["", "## Checker", "", "not run (`--checker` times the full `python -m jaxderiv check`)."]
    return "\n".join(lines) + "\n"

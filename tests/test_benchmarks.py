"""The benchmark runs end to end in a tiny mode, and both sides of each figure compute the same thing."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_benchmark_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "JAX_PLATFORMS": "cpu"}
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "run.py"),
        "--quick",
        "--sizes",
        "small",
        "--ops",
        "sin,addmm,_log_softmax,max_pool2d_with_indices",
        "--models",
        "mlp",
        "--sections",
        "ops,models,compile",
        "--repeats",
        "2",
        "--no-torch",
        "--out",
        str(tmp_path),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((tmp_path / "benchmarks.json").read_text())
    assert {r["op"] for r in result["ops"]} == {"sin", "addmm", "_log_softmax", "max_pool2d_with_indices"}
    for row in result["ops"]:
        # jaxderiv's value and gradients are the native program's: the times compare like with like
        assert row["max_difference"] < 1e-5, row
        assert row["ours_s"] > 0 and row["native_s"] > 0 and math.isfinite(row["ratio"])
    assert next(r for r in result["ops"] if r["op"] == "sin")["same_hlo"]  # PyTorch's and JAX's sin rules compile alike
    (mlp,) = result["models"]
    ours, native = mlp["losses"]
    assert abs(ours - native) < 1e-5 * max(1.0, abs(native))
    (memory,) = result["memory"]
    assert memory["ours_temp_bytes"] > 0 and memory["native_temp_bytes"] > 0
    assert set(result["summary"]) >= {"ops_geomean", "ops_max", "train_step_max", "compile_max", "temp_memory_max"}
    markdown = (tmp_path / "benchmarks.md").read_text()
    assert "| sin | unary | small |" in markdown and "| mlp |" in markdown and result["machine"]["jax"] in markdown

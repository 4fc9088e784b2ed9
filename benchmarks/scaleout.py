"""A data-parallel train step on 1 and on 4 simulated CPU devices (a fresh interpreter per count)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import json, sys, time
sys.path.insert(0, {bench!r})
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from models import MODELS, jax_inputs, jitted_step, split_static
from timing import interleaved
model = next(m for m in MODELS if m.name == {model!r})
params, batch = jax_inputs(model, {quick!r})
arrays, _ = split_static(batch)
n = len(jax.devices())
mesh = Mesh(np.array(jax.devices()), ("data",))
arrays = tuple(jax.device_put(a, NamedSharding(mesh, P("data"))) for a in arrays)
params = jax.device_put(params, NamedSharding(mesh, P()))
steps = [jitted_step(model.ours, batch), jitted_step(model.native, batch)]
times = interleaved(steps, [(params, arrays)] * 2, repeats={repeats})
print(json.dumps({{"devices": n, "ours": times[0], "native": times[1]}}))
"""


def measure(model: str, quick: bool, repeats: int) -> dict:
    """Step seconds of `model` (jaxderiv and native) on 1 and 4 host devices."""
    out = {}
    for n in (1, 4):
        env = {
            **os.environ,
            "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n}".strip(),
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        code = _PROBE.format(bench=str(ROOT / "benchmarks"), model=model, quick=quick, repeats=repeats)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        if run.returncode != 0:
            raise RuntimeError(run.stderr[-2000:])
        out[n] = json.loads(run.stdout.strip().splitlines()[-1])
    return out

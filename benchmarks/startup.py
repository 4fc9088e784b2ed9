"""Start-up costs beyond `import jax`, each measured in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")

_PROBE = r"""
import json, time
t0 = time.perf_counter(); import jax; t1 = time.perf_counter()
import jaxderiv; t2 = time.perf_counter()
registry = jaxderiv.default_registry(); t3 = time.perf_counter()
jaxderiv.op("sin"); t4 = time.perf_counter()
built = 0
for name in registry.names():
    try:
        registry.op(name); built += 1
    except Exception:
        pass
t5 = time.perf_counter()
print(json.dumps({"import_jax": t1 - t0, "import_jaxderiv": t2 - t1, "load_default_spec": t3 - t2,
                  "first_op": t4 - t3, "build_every_op": t5 - t4, "ops_built": built, "entries": len(registry.names())}))
"""


def measure(repeats: int) -> dict:
    """Median seconds of each start-up stage over `repeats` fresh interpreters."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-2000:])
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    result = {k: sorted(r[k] for r in runs)[len(runs) // 2] for k in runs[0]}
    result["ready_beyond_jax"] = result["import_jaxderiv"] + result["load_default_spec"] + result["first_op"]
    return result

"""Interleaved timing: every ratio compares programs measured in turns within one run."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from typing import Callable, Sequence

import jax


def block(x):
    return jax.block_until_ready(x)


def _calls_per_sample(fn: Callable, args, target_s: float) -> int:
    """How many calls make one sample last about `target_s` (from a timed warm call)."""
    start = time.perf_counter()
    block(fn(*args))
    once = max(time.perf_counter() - start, 1e-6)
    return max(1, min(10_000, int(target_s / once)))


def interleaved(
    fns: Sequence[Callable],
    args: Sequence[tuple],
    repeats: int,
    target_s: float = 0.02,
    settle_s: float = 0.0,
    stat: Callable = statistics.median,
) -> list[float]:
    """Median seconds per call of each fn, measured in turns so that load drifts cancel.

    The order rotates every round (A B C, B C A, C A B...), so no fn always follows the same
    neighbour; `settle_s` sleeps before each sample, so that another runtime's spinning
    worker threads (torch's OpenMP, XLA's pool) are idle when a sample starts.
    Each fn runs its own arguments; all are warmed (compiled) first. `stat=None` returns
    every sample.
    """
    for f, a in zip(fns, args):
        block(f(*a))
    n = min(_calls_per_sample(f, a, target_s) for f, a in zip(fns, args))
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        for j in range(len(fns)):
            k = (j + r) % len(fns)
            f, a = fns[k], args[k]
            if settle_s:
                time.sleep(settle_s)
            start = time.perf_counter()
            for _ in range(n):
                out = f(*a)
            block(out)
            samples[k].append((time.perf_counter() - start) / n)
    return samples if stat is None else [stat(s) for s in samples]


def interleaved_once(thunks: Sequence[Callable[[], object]], repeats: int) -> list[float]:
    """Median seconds of each one-shot thunk (compiles, start-ups), run in turns."""
    samples: list[list[float]] = [[] for _ in thunks]
    for _ in range(repeats):
        for k, t in enumerate(thunks):
            start = time.perf_counter()
            t()
            samples[k].append(time.perf_counter() - start)
    return [statistics.median(s) for s in samples]


def machine() -> dict:
    """The CPU, core counts and library versions the figures were measured with."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "cores_visible": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": len(jax.devices()),
    }
    try:
        import jaxlib

        info["jaxlib"] = jaxlib.__version__
    except ImportError:
        pass
    try:
        out = subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
        info["load"] = out.split("load average:")[-1].strip() if "load average" in out else out
    except (OSError, subprocess.SubprocessError):
        pass
    return info

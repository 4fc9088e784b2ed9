"""The check's entries spread over worker processes, and JAX's compilation cache shared by them.

A plain executor: it is handed the function that checks one entry (checker.py's, a module-level
function that each worker receives by name) and the Tasks (tasks.py); it imports nothing of the
checker. Each entry's check is independent of the others and most of its time is XLA compiles,
which use one core each: `jobs` processes give close to `jobs` times the speed. Workers are
spawned (forking a process that has started JAX's threads is unsafe) and build each registry
once from its Spec; the results come back in the tasks' order, whatever order they finish in.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence

import jax
from jax.experimental.compilation_cache.compilation_cache import reset_cache

from ..registry import Registry, seed_registry
from ..spec import Spec
from .opdb import record
from .tasks import Task

__all__ = [
    "default_cache_dir",
    "default_jobs",
    "compilation_cache",
    "use_compilation_cache",
    "fewer_collections",
    "check_in_workers",
]


def default_cache_dir() -> str:
    """Where the `check` command keeps compiled programs between runs: $XDG_CACHE_HOME/jaxderiv/xla."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxderiv", "xla")


def default_jobs() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_CACHE_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


def use_compilation_cache(path: str | os.PathLike) -> None:
    """Keep every compiled program in JAX's persistent cache at `path` (a setting of the whole
    process). JAX caches only programs that took a second to compile by default; a check's
    take 30-500 ms each, and there are one or two per entry, so every one is kept."""
    os.makedirs(path, exist_ok=True)
    for name, value in zip(_CACHE_SETTINGS, (os.fspath(path), 0.0, 0)):
        jax.config.update(name, value)
    reset_cache()  # JAX reads the directory once, at its first compile


@contextlib.contextmanager
def compilation_cache(path: str | os.PathLike | None):
    """`use_compilation_cache(path)` for the duration of the block, JAX's own settings restored after."""
    if path is None:
        yield
        return
    before = [getattr(jax.config, name) for name in _CACHE_SETTINGS]
    use_compilation_cache(path)
    try:
        yield
    finally:
        for name, value in zip(_CACHE_SETTINGS, before):
            jax.config.update(name, value)
        reset_cache()


# Tracing a check's programs allocates millions of short-lived objects; with Python's default
# thresholds (700, 10, 10) the cyclic collector runs every 700 allocations and walks a heap that
# holds jax, numpy and sympy. Collecting a hundred times less often took 8 % off a 36-entry slice
# (one process, no cache: 58.2 -> 53.5 s, mean of two runs each) at the same peak memory (1.09 GB).
_CHECK_THRESHOLDS = (100_000, 50, 100)


@contextlib.contextmanager
def fewer_collections():
    """Python's cyclic garbage collector at the check's thresholds for the block, restored after."""
    before = gc.get_threshold()
    gc.set_threshold(*_CHECK_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


# -- in a worker -------------------------------------------------------------------------------------

_run_task: list[Callable[[Registry, Task], list]] = []  # the function the worker runs, set by _start
_specs: list[Spec | None] = []  # the Spec of each registry the tasks name (None: the seed registry)
_registries: dict[int, Registry] = {}


def _start(run: Callable[[Registry, Task], list], specs: list[Spec | None], cache_dir: str | None) -> None:
    _run_task[:] = [run]
    _specs[:] = specs
    gc.set_threshold(*_CHECK_THRESHOLDS)  # the worker's whole life is the check
    if cache_dir:
        use_compilation_cache(cache_dir)


def _run(task: Task) -> list:
    registry = _registries.get(task.registry)
    if registry is None:
        spec = _specs[task.registry]
        registry = _registries[task.registry] = seed_registry() if spec is None else Registry(spec)
    return _run_task[0](registry, task)


# -- in the parent -----------------------------------------------------------------------------------


def check_in_workers(
    run: Callable[[Registry, Task], list],
    registries: Sequence[Registry],
    tasks: Sequence[Task],
    jobs: int,
    cache_dir: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[list]:
    """`run(registries[task.registry], task)` of each task, in `jobs` spawned processes; the
    results in the order of `tasks`. `run` must be picklable (a module-level function): each
    worker receives it once. A registry is sent as its Spec: one that is not a plain Registry
    (a subclass, or one with ops added by hand) cannot be rebuilt in a worker and is refused.
    The tasks a worker that died left unfinished (killed, out of memory) are run here."""
    for registry in registries:
        if type(registry) is not Registry:
            raise ValueError(
                f"jobs > 1 needs plain Registry objects, rebuilt from their Spec in each worker; got {type(registry).__name__}"
            )
    specs = [None if r is seed_registry() else r.spec for r in registries]
    results: list = [None] * len(tasks)
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_start, initargs=(run, specs, cache_dir)
        ) as pool:
            # The longest entries first (those whose record says they compile apart, tens of
            # seconds each), so that none is left running alone at the end.
            order = sorted(range(len(tasks)), key=lambda i: record(tasks[i].name).compiled_apart is None)
            futures = {pool.submit(_run, tasks[i]): i for i in order}
            try:
                for future in as_completed(futures):
                    i = futures[future]
                    results[i] = future.result()
                    if progress is not None:
                        progress(tasks[i].name)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    except BrokenProcessPool:
        pass  # a worker died (killed, out of memory): what it left is run here, below
    for i, task in enumerate(tasks):
        if results[i] is None:
            results[i] = run(registries[task.registry], task)
            if progress is not None:
                progress(task.name)
    return results

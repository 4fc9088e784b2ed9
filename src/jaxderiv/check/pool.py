"""The check's entries spread over worker processes, and JAX's compilation cache shared by them.

Each entry's check is independent of the others and most of its time is XLA compiles, which
use one core each: `jobs` processes give close to `jobs` times the speed. Workers are spawned
(forking a process that has started JAX's threads is unsafe) and build each registry once
from its Spec; the rows come back in the plan's order, whatever order the entries finish in.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence

import jax
from jax.experimental.compilation_cache.compilation_cache import reset_cache

from ..registry import Registry, seed_registry
from .opdb import record

__all__ = ["default_cache_dir", "default_jobs", "compilation_cache", "use_compilation_cache", "check_in_workers"]


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


# -- in a worker -------------------------------------------------------------------------------------

_specs: list = []  # the Spec of each registry the tasks name (None: the seed registry)
_registries: dict[int, Registry] = {}


def _start(specs: list, cache_dir: str | None) -> None:
    _specs[:] = specs
    if cache_dir:
        use_compilation_cache(cache_dir)


def _run(task: tuple) -> list:
    from .checker import _check_named

    which, name, modes, seed, complex_, default_spec, options = task
    registry = _registries.get(which)
    if registry is None:
        spec = _specs[which]
        registry = _registries[which] = seed_registry() if spec is None else Registry(spec)
    with jax.enable_x64(True):
        return _check_named(registry, name, modes, seed, complex_, default_spec, options)


# -- in the parent -----------------------------------------------------------------------------------


def check_in_workers(
    tasks: Sequence[tuple[Registry, str, bool, bool]],
    modes: Sequence[str],
    seed: int,
    options: dict,
    jobs: int,
    cache_dir: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[list]:
    """The rows of each (registry, name, complex checked, default spec) task, checked by `jobs`
    spawned processes. A registry is sent as its Spec: one that is not a plain Registry (a
    subclass, or one with ops added by hand) cannot be rebuilt in a worker and is refused."""
    registries: list[Registry] = []
    for registry, *_ in tasks:
        if not any(registry is r for r in registries):
            if type(registry) is not Registry:
                raise ValueError(
                    f"jobs > 1 needs plain Registry objects, rebuilt from their Spec in each worker; got {type(registry).__name__}"
                )
            registries.append(registry)
    which = [next(i for i, r in enumerate(registries) if r is registry) for registry, *_ in tasks]
    specs = [None if r is seed_registry() else r.spec for r in registries]
    results: list = [None] * len(tasks)
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_start, initargs=(specs, cache_dir)
        ) as pool:
            # The longest entries first (those whose record says they compile apart, tens of
            # seconds each), so that none is left running alone at the end.
            order = sorted(range(len(tasks)), key=lambda i: record(tasks[i][1]).compiled_apart is None)
            futures = {
                pool.submit(_run, (which[i], tasks[i][1], tuple(modes), seed, tasks[i][2], tasks[i][3], options)): i
                for i in order
            }
            try:
                for future in as_completed(futures):
                    i = futures[future]
                    results[i] = future.result()
                    if progress is not None:
                        progress(tasks[i][1])
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    except BrokenProcessPool:
        pass  # a worker died (killed, out of memory): what it left is checked here, below
    from .checker import _check_named

    with jax.enable_x64(True):
        for i, (registry, name, complex_, default_spec) in enumerate(tasks):
            if results[i] is None:
                results[i] = _check_named(registry, name, modes, seed, complex_, default_spec, options)
                if progress is not None:
                    progress(name)
    return results

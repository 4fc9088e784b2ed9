"""What the checker hands to whoever runs its entries: one entry's check as a `Task`, the options
of the run as `CheckOptions`.

A leaf of `jaxderiv.check`: it imports neither the checker (checker.py builds Tasks and runs
them) nor the executor (pool.py runs them in worker processes, given the function to run), so
that neither of those two imports the other. Both types are frozen and picklable: a Task
travels to a worker process as it is.
"""

from __future__ import annotations

import dataclasses

__all__ = ["CheckOptions", "Task"]


@dataclasses.dataclass(frozen=True)
class CheckOptions:
    """The options of a check run that every entry's check reads (`check_all` documents them).

    sample: check only the sample of this index (None: every sample).
    per_element: also compare full Jacobians element by element.
    thorough: the derivatives with parts undefined also against JAX autodiff and finite differences.
    transforms: any of the checker's TRANSFORMS ("jit" always runs).
    """

    sample: int | None = None
    per_element: bool = False
    thorough: bool = False
    transforms: tuple[str, ...] = ("jit",)


@dataclasses.dataclass(frozen=True)
class Task:
    """One entry's check: its rows in every mode of `modes`.

    registry: the position of the entry's registry in the run's list of registries (a worker
    process rebuilds each one from its Spec, once, and looks it up by this position).
    complex_: whether the entry's complex samples are checked too.
    default_spec: whether the registry is the shipped spec's (the repro command then names no
    --spec file).
    """

    registry: int
    name: str
    modes: tuple[str, ...]
    seed: int = 0
    complex_: bool = True
    default_spec: bool = False
    options: CheckOptions = CheckOptions()

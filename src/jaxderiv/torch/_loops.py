"""Unrolled loops of an exported graph run again as loops: one `jax.lax.scan` over the repeated block.

torch.export unrolls Python loops: an LSTM over 32 time steps is 32 copies of its cell, and XLA
compiles each copy (compile time grows with the sequence length). A block of steps that repeats
with the same ops and constants, each copy reading only its own steps, the copy before it, and
values from outside, is found here and run as a scan whose body is the block's own steps. The
same ATen ops run, with the same formulas; only the plumbing differs: the values each copy reads
from outside are stacked, the values the copies hand on are the scan's carry, and the values
read after the loop are its stacked outputs, split again.

A block is rolled only where that saves many steps (`MIN_SAVED`), and never with a random step
in it (each draws from the key folded with its own position). Where its values do not fit a
scan (shapes that differ between copies, a carry whose type changes), it runs unrolled.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from typing import Any, Sequence

import jax
import jax.numpy as jnp

from .resolve import NodeKind
from ._steps import Ref, Step, is_leaf, step_note

__all__ = ["Loop", "Slot", "find_loops", "run_loop", "NOT_A_SCAN", "MIN_SAVED", "MIN_COUNT"]

MIN_COUNT = 3  # copies of the block
MIN_SAVED = 48  # steps a rolled loop must save: shorter ones compile quickly enough unrolled
_CANDIDATES = 32  # periods tried at each position: the distances to the next steps of its kind
# What `run_loop` raises where a loop's values do not fit a scan, and its steps run unrolled instead:
# copies whose outside values differ in shape (jnp.stack: ValueError), a carry whose type changes
# (jax.lax.scan: TypeError), a step whose shapes depend on values the body traces
# (ConcretizationTypeError and its kin are TypeErrors, NonConcreteBooleanIndexError an IndexError).
NOT_A_SCAN: tuple[type[Exception], ...] = (TypeError, ValueError, IndexError)


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where one Ref argument of a body step gets its value in every copy.

    kind: "local" (body step `j` of the same copy), "outer" (the value `names[0]`, the same in
    every copy), "xs" (`names[k]` in copy k), "carry" (body step `j` of the copy before, and
    `names[0]` in the first copy)."""

    kind: str
    j: int | None = None
    names: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Loop:
    """Steps `start` to `stop` of a program: `count` copies of a `period`-step block."""

    start: int
    period: int
    count: int
    slots: tuple[tuple[Slot, ...], ...]  # per body step, per Ref among its arguments (in flatten order)
    exported: tuple[int, ...]  # the body steps whose values are read after the loop

    @property
    def stop(self) -> int:
        return self.start + self.period * self.count


def _leaves(step: Step):
    return jax.tree.flatten((step.args, step.kwargs), is_leaf=is_leaf)


def _constant_key(x) -> Any:
    try:
        hash(x)
        return (type(x), x)
    except TypeError:  # an array constant: equal only to itself
        return ("object", id(x))


def _signature(step: Step) -> tuple:
    leaves, tree = _leaves(step)
    return (step.op, step.kind, tree, tuple("ref" if isinstance(x, Ref) else _constant_key(x) for x in leaves))


def find_loops(steps: Sequence[Step], outputs: Sequence[Any] = ()) -> tuple[Loop, ...]:
    """The repeated blocks of `steps` worth rolling, in order and disjoint. `outputs`: the
    program's results (Refs among them are read after every step)."""
    ids: dict[tuple, int] = {}
    sig = [ids.setdefault(_signature(s), len(ids)) for s in steps]
    later: dict[int, list[int]] = defaultdict(list)
    for i, v in enumerate(sig):
        later[v].append(i)
    index = {s.name: i for i, s in enumerate(steps)}
    read_at: dict[str, list[int]] = defaultdict(list)  # step name -> positions of the steps reading it
    for i, s in enumerate(steps):
        for x in _leaves(s)[0]:
            if isinstance(x, Ref):
                read_at[x.name].append(i)
    for x in jax.tree.leaves(list(outputs), is_leaf=is_leaf):
        if isinstance(x, Ref):
            read_at[x.name].append(len(steps))
    loops, start, n = [], 0, len(steps)
    while start < n:
        best = None
        occurrences = later[sig[start]]
        at = bisect.bisect_right(occurrences, start)
        for other in occurrences[at : at + _CANDIDATES]:
            period = other - start
            if start + MIN_COUNT * period > n or (MIN_COUNT - 1) * period < 2:
                continue
            block, count = sig[start:other], 1
            while sig[start + count * period : start + (count + 1) * period] == block:
                count += 1
            if count < MIN_COUNT or (count - 1) * period < MIN_SAVED:
                continue
            if best is not None and (count - 1) * period <= (best.count - 1) * best.period:
                continue
            loop = _as_loop(steps, start, period, count, index, read_at)
            if loop is not None:
                best = loop
        if best is None:
            start += 1
        else:
            loops.append(best)
            start = best.stop
    return tuple(loops)


def _as_loop(steps, start, period, count, index, read_at) -> Loop | None:
    """The Loop of `count` copies from `start`, or None where a copy reads anything but its own
    steps, the copy before it and outside values in the same way in every copy."""
    stop = start + period * count
    if any(s.kind is NodeKind.RANDOM for s in steps[start:stop]):
        return None
    slots = []
    for j in range(period):
        per_copy: list[list[tuple[str, Any]]] = []  # [copy][ref] -> (kind, j or name)
        for k in range(count):
            seen: list[tuple[str, Any]] = []
            for x in _leaves(steps[start + k * period + j])[0]:
                if not isinstance(x, Ref):
                    continue
                i = index.get(x.name)
                if i is None or not start <= i < stop:
                    seen.append(("outer", x.name))
                    continue
                kk, jj = divmod(i - start, period)
                if kk == k:
                    seen.append(("local", jj))
                elif kk == k - 1:
                    seen.append(("carry", jj))
                else:
                    return None
            per_copy.append(seen)
        body = []
        for r in range(len(per_copy[0])):
            got = [c[r] for c in per_copy]
            kinds = {g[0] for g in got}
            if kinds == {"local"} and len({g[1] for g in got}) == 1:
                body.append(Slot("local", got[0][1]))
            elif kinds == {"outer"}:
                names = tuple(g[1] for g in got)
                body.append(Slot("outer", names=names[:1]) if len(set(names)) == 1 else Slot("xs", names=names))
            elif got[0][0] == "outer" and {g[0] for g in got[1:]} == {"carry"} and len({g[1] for g in got[1:]}) == 1:
                body.append(Slot("carry", got[1][1], (got[0][1],)))
            else:
                return None
        slots.append(tuple(body))
    exported = sorted(
        {(i - start) % period for i in range(start, stop) if any(r >= stop for r in read_at[steps[i].name])}
    )
    return Loop(start, period, count, tuple(slots), tuple(exported))


def run_loop(loop: Loop, steps: Sequence[Step], env: dict, remat: Any = None) -> None:
    """Run `loop`'s steps as one scan, adding every value read after it to `env` under its step's
    name. Raises one of NOT_A_SCAN where the values do not fit a scan (the caller runs the steps
    unrolled); another error of a step is raised with the step's node noted.
    remat: None, or activation checkpointing of each copy (`jax.checkpoint`): True saves nothing
    but the carry, a `jax.checkpoint_policies` member chooses what else is saved."""
    body = steps[loop.start : loop.start + loop.period]
    trees = [_leaves(s) for s in body]
    xs = {
        (j, r): jnp.stack([jnp.asarray(env[n]) for n in slot.names])
        for j, slots in enumerate(loop.slots)
        for r, slot in enumerate(slots)
        if slot.kind == "xs"
    }
    init = {
        (j, r): env[slot.names[0]]
        for j, slots in enumerate(loop.slots)
        for r, slot in enumerate(slots)
        if slot.kind == "carry"
    }

    def copy(carry, x):
        local: list = [None] * loop.period
        for j, (step, (leaves, tree)) in enumerate(zip(body, trees)):
            slots, values = iter(enumerate(loop.slots[j])), []
            for leaf in leaves:
                if not isinstance(leaf, Ref):
                    values.append(leaf)
                    continue
                r, slot = next(slots)
                if slot.kind == "local":
                    values.append(local[slot.j])
                elif slot.kind == "outer":
                    values.append(env[slot.names[0]])
                elif slot.kind == "xs":
                    values.append(x[(j, r)])
                else:
                    values.append(carry[(j, r)])
            args, kwargs = jax.tree.unflatten(tree, values)
            try:
                local[j] = step.fn(*args, **kwargs)
            except Exception as e:  # re-raised, with the node (of the first copy) noted
                e.add_note(f"{step_note(step)}, as the body of a jax.lax.scan over {loop.count} copies of its block")
                raise
        handed_on = {(j, r): local[loop.slots[j][r].j] for j, r in carry}
        return handed_on, {j: local[j] for j in loop.exported}

    if remat is not None and remat is not False:
        copy = jax.checkpoint(copy, policy=None if remat is True else remat, prevent_cse=False)
    _, ys = jax.lax.scan(copy, init, xs, length=loop.count)
    for k in range(loop.count):
        for j in loop.exported:
            env[steps[loop.start + k * loop.period + j].name] = jax.tree.map(lambda y: y[k], ys[j])

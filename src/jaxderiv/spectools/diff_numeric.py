"""Whether a changed entry's gradient changed, or only its spelling: both files' ops evaluated.

For an entry two spec files both have, with different formula text, both files' ops (built by
each file's Registry, so formulas that call other entries run that file's entries) are
differentiated on the same inputs, cotangents and tangents: the checker's samples
(`samples_for`) and the op's kink inputs (`kinks` of its op record, `jaxderiv.check.opdb`), in
vjp (jax.vjp over the op: the translated backward formulas) and jvp (the result formulas), in
float64. Both ops share one forward implementation, so any difference is the formulas'.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable

import jax
import numpy as np

from ..errors import JaxderivError, NotImplementedDerivative
from ..registry import Registry

# What building or running one file's formulas on a sample may raise: jaxderiv's own errors (a
# helper that release lacks, a derivative it does not implement) and those of the JAX code a
# formula becomes (shapes, dtypes or values it refuses; a failed compile). Each is that side's
# result, reported in the verdict; anything else (an assertion, a bug here) propagates.
SIDE_FAILURES = (JaxderivError, TypeError, ValueError, LookupError, NotImplementedError, RuntimeError, ArithmeticError)

__all__ = ["RTOL", "ATOL", "CLASSES", "Verdict", "compare_entry", "numeric_verdicts", "counts"]

RTOL, ATOL = 1e-10, 1e-12
SAME, CHANGES, SCHEMA, NOT_COMPARABLE, ONLY_A, ONLY_B = (
    "same gradient",
    "gradient changes",
    "schema changed",
    "not comparable",
    "only in A",
    "only in B",
)
CLASSES = (SAME, CHANGES, SCHEMA, NOT_COMPARABLE, ONLY_A, ONLY_B)


@dataclasses.dataclass
class Verdict:
    """The numeric verdict of one entry: its class and, where it has them, why or where."""

    name: str
    kind: str  # one of CLASSES
    detail: str = ""  # the reason (not comparable, schema changed) or where the gradients differ most
    max_diff: float | None = None  # largest |A - B| over every comparison (inf: NaN on one side only)
    compared: int = 0  # values compared (vjp gradients and jvp tangents, each sample)
    samples: int = 0  # samples (and kink inputs) both ops ran on
    seconds: float = 0.0  # how long the comparison took

    def __str__(self) -> str:
        tally = f"  ({self.compared} comparisons on {self.samples} inputs)" if self.kind == SAME else ""
        return self.kind + (f": {self.detail}" if self.detail else "") + tally

    def to_json(self) -> dict:
        out = {
            "class": self.kind,
            "detail": self.detail,
            "compared": self.compared,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
        }
        if self.max_diff is not None:
            out["max_diff"] = self.max_diff if math.isfinite(self.max_diff) else str(self.max_diff)
        return out


def counts(verdicts) -> dict[str, int]:
    """How many verdicts of each class, in CLASSES order (classes with none left out)."""
    tally = {k: 0 for k in CLASSES}
    for v in verdicts:
        tally[v.kind] += 1
    return {k: n for k, n in tally.items() if n}


def _call_shape(schema) -> tuple:
    """What a call of the op looks like: argument names, kinds and positions, and how many outputs."""
    return tuple((a.name, a.type.base, a.type.is_list, a.kwarg_only) for a in schema.arguments), len(schema.returns)


def _schema_change(a, b) -> str:
    """What makes the same call impossible: the arguments (names, kinds, keyword-only) or the number of outputs."""

    def args(s):
        return (
            "("
            + ", ".join(
                ("*" if x.kwarg_only else "") + f"{x.type.base}{'[]' if x.type.is_list else ''} {x.name}"
                for x in s.arguments
            )
            + ")"
        )

    parts = [f"arguments {args(a)} -> {args(b)}"] if args(a) != args(b) else []
    if len(a.returns) != len(b.returns):
        parts.append(f"outputs {len(a.returns)} -> {len(b.returns)}")
    return "; ".join(parts)


def _short(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    if isinstance(e, NotImplementedDerivative):  # the spec's own words, without its location
        return "not implemented: " + text.rsplit(": ", 1)[-1][:160]
    return f"{type(e).__name__}: {text[:160]}"


def _fmt(v) -> str:
    v = complex(v) if np.iscomplexobj(v) else float(v)
    return f"{v:.6g}"


def _inexact(v) -> bool:
    return isinstance(v, (np.ndarray, jax.Array)) and np.issubdtype(np.dtype(v.dtype), np.inexact)


class _Side:
    """One file's op on one sample: a function of the sample's differentiable arrays."""

    def __init__(self, op, sample):
        self.op = op
        bound = op.bind(tuple(sample.args), dict(sample.kwargs))
        self.arguments = op.schema.arguments
        self.values = [
            np.asarray(v) if a.is_tensor and isinstance(v, np.generic) else v
            for a, v in zip(self.arguments, bound.values())
        ]
        self.flags = op.output_differentiable(*self._split(self.values)[0], **self._split(self.values)[1])

    def _split(self, values):
        return [v for a, v in zip(self.arguments, values) if not a.kwarg_only], {
            a.name: v for a, v in zip(self.arguments, values) if a.kwarg_only
        }

    def call(self, paths, xs, outs, gauge):
        values = [list(v) if isinstance(v, (list, tuple)) and not isinstance(v, str) else v for v in self.values]
        for (i, j), x in zip(paths, xs):
            if j is None:
                values[i] = x
            else:
                values[i][j] = x
        args, kwargs = self._split(values)
        ys = self.op(*args, **kwargs)
        ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
        ys = [ys[k] for k in outs]
        return list(gauge(ys)) if gauge is not None else ys


def _paths(sides, values) -> tuple[list, list[str]]:
    """(argument, element) of every inexact Tensor input either file differentiates, and their names."""
    names = {n for s in sides for n in s.op.differentiable_inputs}
    paths: list[tuple[int, int | None]] = []
    labels: list[str] = []
    for i, (a, v) in enumerate(zip(sides[0].arguments, values)):
        if a.name not in names:
            continue
        if a.is_tensor and _inexact(v):
            paths.append((i, None))
            labels.append(a.name)
        elif a.is_tensor_list and isinstance(v, (list, tuple)):
            paths += [(i, j) for j, e in enumerate(v) if _inexact(e)]
            labels += [f"{a.name}[{j}]" for j, e in enumerate(v) if _inexact(e)]
    return paths, labels


def _run(f, *args):
    """f(*args) compiled as one program (the checker's compiler settings: one compile instead of
    one per primitive), else op by op where it cannot be traced (value-dependent shapes)."""
    from ..check.compare import UNTRACEABLE, check_jit

    try:
        return check_jit(f)(*args)
    except NotImplementedDerivative:  # the spec's `not_implemented`: raised the same either way
        raise
    except UNTRACEABLE:  # evaluated eagerly, which raises what it raises (a helper that needs values)
        return f(*args)


def _evaluate(fn, xs, cts, ts, project, labels, split: bool) -> dict[str, np.ndarray | Exception]:
    """label -> array (or the exception raised) of the vjp gradients and jvp tangents of `fn`.

    split: each input on its own (what a `not_implemented` input on one side needs), else together."""
    out: dict[str, np.ndarray | Exception] = {}
    groups = [[k] for k in range(len(xs))] if split else [list(range(len(xs)))]
    for ks in groups:

        def sub(*chosen, ks=ks):
            full = list(xs)
            for k, c in zip(ks, chosen):
                full[k] = c
            return fn(*full)

        chosen = [xs[k] for k in ks]
        try:
            grads = [np.asarray(g) for g in _run(lambda ch, c: jax.vjp(sub, *ch)[1](c), chosen, cts)]
            grads = grads if split else [np.asarray(g) for g in project(grads)]
            out.update((f"vjp of {labels[k]}", g) for k, g in zip(ks, grads))
        except SIDE_FAILURES as e:  # a formula that raises is that side's result, compared below
            out.update((f"vjp of {labels[k]}", e) for k in ks)
        suffix = f" (tangent of {labels[ks[0]]} only)" if split else ""
        try:
            tangents = _run(lambda ch, t: jax.jvp(sub, tuple(ch), tuple(t))[1], chosen, [ts[k] for k in ks])
            out.update((f"jvp output {j}{suffix}", np.asarray(t)) for j, t in enumerate(tangents))
        except SIDE_FAILURES as e:
            out[f"jvp{suffix}"] = e
    return out


def _difference(a: np.ndarray, b: np.ndarray) -> tuple[float, tuple] | None:
    """The largest |a - b| where they are not close (inf: NaN or inf on one side only), and its index; None if all close."""
    if a.shape != b.shape:
        return math.inf, ()
    bad = ~np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
    if not bad.any():
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.where(bad, np.abs(a - b), -1.0)
    d = np.where(bad & ~np.isfinite(d), math.inf, d)
    idx = np.unravel_index(int(np.argmax(d)), d.shape) if d.ndim else ()
    return float(d[idx]), idx


def _where(label: str, sample_label: str, idx, a, b, xs, labels) -> str:
    if a.shape != b.shape:
        return f"{label} on {sample_label}: shape {a.shape} -> {b.shape}"
    at = ""
    same = [(n, x) for n, x in zip(labels, xs) if np.shape(x) == a.shape]
    if same and a.shape:  # the input at that element, for elementwise ops: "at self=0"
        at = " at " + ", ".join(f"{n}={_fmt(np.asarray(x)[idx])}" for n, x in same[:2])
    element = f"[{', '.join(map(str, idx))}]" if idx else ""
    return f"{label}{element} on {sample_label}{at}: {_fmt(a[idx])} -> {_fmt(b[idx])}"


def _samples(op, name: str, rng):
    from ..check.opdb import record
    from ..records import Sample
    from ..check.samples import samples_for

    made = list(samples_for(op, rng))
    return made + [Sample(tuple(k), {}, f"kink input {i}") for i, k in enumerate(record(name).kinks)]


def compare_entry(name: str, old: Registry, new: Registry, seed: int = 0) -> Verdict:
    """The numeric verdict of entry `name`, present in both registries' specs (A = old, B = new)."""
    from ..check.compare import random_like
    from ..check.opdb import record
    from ..forward import implementation

    if implementation(name) is None:
        return Verdict(name, NOT_COMPARABLE, "no forward implementation")
    reason = record(name).not_applicable
    if reason is not None:
        return Verdict(name, NOT_COMPARABLE, f"not applicable in JAX: {reason}")
    ops = []
    for side, registry in (("A", old), ("B", new)):
        try:
            ops.append(registry.op(name))
        except SIDE_FAILURES as e:  # an entry that does not build is a verdict, not a crash
            return Verdict(name, NOT_COMPARABLE, f"{side}'s formulas do not build: {_short(e)}")
    op_a, op_b = ops
    if _call_shape(op_a.schema) != _call_shape(op_b.schema):
        return Verdict(name, SCHEMA, _schema_change(op_a.schema, op_b.schema))
    with jax.enable_x64(True):
        rng = np.random.default_rng(seed)
        try:
            samples = _samples(op_b, name, rng)
        except SIDE_FAILURES as e:
            return Verdict(name, NOT_COMPARABLE, f"no samples: {_short(e)}")
        worst, errors, agreed, compared, ran, skipped, modes, empty, both = None, [], 0, 0, 0, [], set(), set(), []
        for sample in samples:
            label = sample.label or "sample"
            try:
                sides = [_Side(op_a, sample), _Side(op_b, sample)]
            except SIDE_FAILURES as e:  # a sample this schema does not take: the next
                skipped.append(f"{label}: {_short(e)}")
                continue
            gauge = sample.outputs
            flags = sides[1].flags if gauge is not None else [a or b for a, b in zip(*(s.flags for s in sides))]
            outs = [k for k, f in enumerate(flags) if f]
            paths, labels = _paths(sides, sides[1].values)
            if not paths or not outs:
                empty.add("no differentiable input" if not paths else "no differentiable floating-point output")
                continue
            xs = [jax.numpy.asarray(sides[1].values[i] if j is None else sides[1].values[i][j]) for i, j in paths]
            project = (lambda g: list(sample.tangents(list(g)))) if sample.tangents else (lambda g: g)
            fns = [lambda *a, s=s: s.call(paths, a, outs, gauge) for s in sides]
            try:
                try:
                    ys = jax.eval_shape(fns[1], *xs)
                except jax.errors.ConcretizationTypeError:  # value-dependent output shapes: evaluated
                    ys = fns[1](*xs)
            except SIDE_FAILURES as e:  # the forward refuses this sample
                skipped.append(f"{label}: forward {_short(e)}")
                continue
            ran += 1
            cts = [random_like(rng, y) for y in ys]
            ts = project([random_like(rng, x) for x in xs])
            results = [_evaluate(f, xs, cts, ts, project, labels, split=False) for f in fns]
            if any(isinstance(v, NotImplementedDerivative) for r in results for v in r.values()) and len(xs) > 1:
                results = [_evaluate(f, xs, cts, ts, project, labels, split=True) for f in fns]
            for key in list(dict.fromkeys(list(results[0]) + list(results[1]))):
                a, b = results[0].get(key), results[1].get(key)
                if isinstance(a, Exception) or isinstance(b, Exception):
                    if isinstance(a, Exception) and isinstance(b, Exception) and _short(a) == _short(b):
                        both.append(f"{key} raises in both: {_short(a)}")
                        continue  # no change (a `not_implemented` both keep)
                    sides_said = (
                        _short(v) if isinstance(v, Exception) else "values" if v is not None else "absent"
                        for v in (a, b)
                    )
                    errors.append(f"{key} on {label}: " + " -> ".join(sides_said))
                    continue
                if a is None or b is None:
                    errors.append(
                        f"{key} on {label}: {'absent' if a is None else 'values'} -> {'absent' if b is None else 'values'}"
                    )
                    continue
                compared += 1
                found = _difference(a, b)
                if found is None:
                    agreed += 1
                    continue
                modes.add(key.split()[0])
                if worst is None or found[0] > worst[0]:
                    worst = (found[0], _where(key, label, found[1], a, b, xs, labels))
    if worst is not None:
        where = f"differs in {' and '.join(sorted(modes))} ({compared - agreed} of {compared} comparisons); largest: {worst[1]}"
        return Verdict(name, CHANGES, where, worst[0], compared, ran)
    if errors:
        return Verdict(
            name,
            NOT_COMPARABLE,
            errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
            None,
            compared,
            ran,
        )
    if agreed:
        return Verdict(name, SAME, "", 0.0, compared, ran)
    why = (
        both[0]
        if both
        else "; ".join(sorted(empty)) + " on its samples"
        if empty
        else f"no sample runs: {skipped[0]}"
        if skipped
        else "no samples"
    )
    return Verdict(name, NOT_COMPARABLE, why, None, compared, ran)


def numeric_verdicts(
    diff, old: Registry, new: Registry, progress: Callable[[str], None] | None = None, seed: int = 0
) -> list[Verdict]:
    """A verdict for every entry of `diff` (a SpecDiff) that is not unchanged; sets each Change's `numeric`."""
    out = [Verdict(e.name, ONLY_A) for e in diff.removed] + [Verdict(e.name, ONLY_B) for e in diff.added]
    for c in diff.changed:
        start = time.perf_counter()
        c.numeric = compare_entry(c.name, old, new, seed)
        c.numeric.seconds = time.perf_counter() - start
        out.append(c.numeric)
        if progress is not None:
            progress(c.name)
    return out

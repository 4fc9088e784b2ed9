"""jaxderiv against PyTorch itself: forward values, vjp, jvp, kinks and complex inputs, per op.

The checker judges rules by JAX's autodiff and finite differences, which cannot judge kinks;
this module asks the installed torch (torch.ops.aten, torch.autograd.grad, torch.func.jvp) on
the same inputs and cotangents. Complex: jax_vjp(ct) == conj(torch_grad(conj(ct))).
Needs torch; jaxderiv itself never does.
"""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import NotImplementedDerivative
from .checker import _random_like
from .samples import Sample, checks_complex, samples_for
from ..forward import implementation
from ..op import Op
from ..registry import Registry
from ..spec import Spec

__all__ = ["RTOL", "ATOL", "KINKS", "ParityRow", "compare", "compare_op", "parity", "to_markdown", "write_json"]

# Tolerances for every comparison, float64 and complex128 alike.
RTOL, ATOL = 1e-6, 1e-9
COLUMNS = ("forward", "vjp", "jvp", "kinks", "complex")


def _a(*values):
    return np.asarray(values, np.float64)


# Hand-picked inputs where finite differences cannot judge: kinks, ties, zeros.
KINKS: dict[str, list[tuple]] = {
    "abs": [(_a(0.0, -0.0, 1.5, -2.0),)],
    "sgn": [(_a(0.0, -0.0, 1.5, -2.0),)],
    "sign": [(_a(0.0, 1.5, -2.0),)],
    "relu": [(_a(0.0, -0.0, 1.5, -2.0),)],
    "threshold": [(_a(0.5, 0.4, 0.6, -1.0), 0.5, -3.0)],
    "hardtanh": [(_a(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0)],
    "clamp": [(_a(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0), (_a(-0.5, 0.3), -0.5, None)],
    "clamp_min": [(_a(0.5, 0.4, 0.6), 0.5)],
    "clamp_max": [(_a(0.5, 0.4, 0.6), 0.5)],
    "clamp.Tensor": [(_a(-1.0, 1.0, 0.0), _a(-1.0, -1.0, -1.0), _a(1.0, 1.0, 1.0))],
    "clamp_min.Tensor": [(_a(0.5, 0.4, 0.6), _a(0.5, 0.5, 0.5))],
    "clamp_max.Tensor": [(_a(0.5, 0.4, 0.6), _a(0.5, 0.5, 0.5))],
    "sqrt": [(_a(0.0, 1.0, 4.0),)],
    "rsqrt": [(_a(0.0, 1.0, 4.0),)],
    "maximum": [(_a(1.0, 2.0, -1.0), _a(1.0, 3.0, -1.0))],
    "minimum": [(_a(1.0, 2.0, -1.0), _a(1.0, 3.0, -1.0))],
    "fmax": [(_a(1.0, 2.0, np.nan), _a(1.0, np.nan, 3.0))],
    "fmin": [(_a(1.0, 2.0, np.nan), _a(1.0, np.nan, 3.0))],
    "hardshrink": [(_a(0.5, -0.5, 0.0, 1.0), 0.5)],
    "softshrink": [(_a(0.5, -0.5, 0.0, 1.0), 0.5)],
    "leaky_relu": [(_a(0.0, 1.0, -1.0), 0.01)],
    "pow.Tensor_Scalar": [(_a(0.0, 1.0, -2.0), 0), (_a(0.0, 1.0, 2.0), 0.5)],
    "pow.Tensor_Tensor": [(_a(0.0, 0.0, 0.0, 2.0), _a(0.0, 1.0, 2.0, 0.0))],
    "hypot": [(_a(0.0, 3.0), _a(0.0, 4.0))],
    "copysign.Tensor": [(_a(0.0, -0.0, 1.5), _a(-1.0, 1.0, -0.0))],
}


@dataclasses.dataclass
class ParityRow:
    """One op against torch: per column True (agrees), False (differs), None (not applicable)."""

    op: str
    spec: str
    forward: bool | None = None
    vjp: bool | None = None
    jvp: bool | None = None
    kinks: bool | None = None
    complex: bool | None = None
    max_err: float = 0.0
    note: str = ""  # the first difference or error, for the reader

    @property
    def ok(self) -> bool:
        return all(getattr(self, c) is not False for c in COLUMNS)


class _Tally:
    """Worst error and first difference over the comparisons of one column."""

    def __init__(self, row: ParityRow):
        self.row = row

    def close(self, what: str, ours, theirs) -> bool:
        a, b = (np.asarray(v) for v in (ours, theirs))
        if a.dtype == bool or b.dtype == bool:
            a, b = a.astype(np.float64), b.astype(np.float64)
        if a.shape != b.shape:
            return self._differs(f"{what}: shape {a.shape} vs torch {b.shape}")
        finite = np.isfinite(a) & np.isfinite(b)
        if finite.any():
            self.row.max_err = max(self.row.max_err, float(np.max(np.abs(a[finite] - b[finite]))))
        if not np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
            i = np.unravel_index(int(np.argmax(~np.isclose(a, b, RTOL, ATOL, equal_nan=True))), a.shape) if a.ndim else ()
            return self._differs(f"{what}: {a[i]!r} vs torch {b[i]!r} at {tuple(map(int, i))}")
        return True

    def _differs(self, message: str) -> bool:
        self.row.note = self.row.note or message
        return False


def _torch():
    try:
        import torch
    except ImportError:
        raise RuntimeError("parity compares with PyTorch: install torch to run it") from None
    return torch


def _torch_op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(_torch().ops.aten, base), overload or "default")


def _to_torch(v):
    torch = _torch()
    if isinstance(v, (np.ndarray, jax.Array)):
        return torch.from_numpy(np.array(v))
    if isinstance(v, np.dtype):
        return getattr(torch, v.name)
    if isinstance(v, list):
        return [_to_torch(e) for e in v]
    return v


def _np(t):
    return t.numpy(force=True) if hasattr(t, "numpy") else np.asarray(t)  # force: conj, neg and zero views


def _outs(value) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


class _Call:
    """One sample bound to an op's schema, callable on both sides with some inputs replaced."""

    def __init__(self, op: Op, args: tuple, kwargs: dict):
        self.op = op
        bound = op.bind(tuple(args), dict(kwargs))
        self.arguments = op.schema.arguments
        # A 0-d NumPy scalar given for a Tensor argument is a 0-d tensor on both sides.
        self.values = [np.asarray(v) if a.is_tensor and isinstance(v, np.generic) else v for a, v in zip(op.schema.arguments, bound.values())]
        self.diff = [
            i for i, (a, v) in enumerate(zip(self.arguments, self.values))
            if a.is_tensor and a.name in op.differentiable_inputs and isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.inexact)
        ]
        self.inplace = op.schema.name.endswith("_") and not op.schema.name.endswith("__")

    def _split(self, values):
        args = [v for a, v in zip(self.arguments, values) if not a.kwarg_only]
        return args, {a.name: v for a, v in zip(self.arguments, values) if a.kwarg_only}

    def _with(self, xs, convert):
        values = [convert(v) for v in self.values]
        for i, x in zip(self.diff, xs):
            values[i] = x
        return values

    def jax(self, *xs):
        args, kwargs = self._split(self._with(xs, lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v))
        return _outs(self.op(*args, **kwargs))

    def torch(self, *xs):
        values = self._with(xs, _to_torch)
        if self.inplace:  # in place on a copy, so that a leaf stays a leaf
            values[0] = values[0].clone()
        args, kwargs = self._split(values)
        return _outs(_torch_op(self.op.name)(*args, **kwargs))

    def xs(self):
        return [self.values[i] for i in self.diff]


def _inexact_outputs(outs) -> list[int]:
    return [k for k, y in enumerate(outs) if jnp.issubdtype(jnp.result_type(y), jnp.inexact)]


def _compare_sample(call: _Call, rng, tally: _Tally, with_jvp: bool) -> dict[str, bool]:
    """forward, vjp and jvp verdicts of one sample (None: nothing to differentiate)."""
    xs = call.xs()
    ours, theirs = call.jax(*[jnp.asarray(x) for x in xs]), call.torch(*[_to_torch(x) for x in xs])
    fwd = len(ours) == len(theirs)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        fwd &= tally.close(f"forward output {k}", o, _np(t))
        if np.dtype(jnp.result_type(o)).name != str(t.dtype).removeprefix("torch."):
            fwd = tally._differs(f"forward output {k}: dtype {jnp.result_type(o)} vs torch {t.dtype}")
    verdict = {"forward": fwd, "vjp": None, "jvp": None}
    outs = [k for k in _inexact_outputs(ours) if call.op.output_differentiable(*call._split(call.values)[0], **call._split(call.values)[1])[k]]
    if not xs or not outs:
        return verdict
    try:
        verdict["vjp"] = _compare_vjp(call, xs, outs, ours, rng, tally)
    except NotImplementedDerivative as e:  # the spec says not_implemented: nothing to compare
        tally.row.note = tally.row.note or f"vjp: {str(e).rsplit(': ', 1)[-1]}"
    if with_jvp:
        try:
            verdict["jvp"] = _compare_jvp(call, xs, outs, rng, tally)
        except NotImplementedDerivative as e:
            tally.row.note = tally.row.note or f"jvp: {str(e).rsplit(': ', 1)[-1]}"
    return verdict


def _compare_vjp(call: _Call, xs, outs, ours, rng, tally: _Tally) -> bool:
    torch = _torch()
    cts = [_random_like(rng, ours[k]) for k in outs]
    _, pullback = jax.vjp(lambda *a: [call.jax(*a)[k] for k in outs], *[jnp.asarray(x) for x in xs])
    our_grads = pullback(cts)
    leaves = [_to_torch(x).requires_grad_() for x in xs]
    t_outs = call.torch(*leaves)
    t_grads = torch.autograd.grad([t_outs[k] for k in outs], leaves, [_to_torch(np.asarray(np.conj(c))) for c in cts], allow_unused=True)
    return all(
        [tally.close(f"vjp input {j}", g, np.conj(_np(t)) if t is not None else np.zeros_like(x)) for j, (g, t, x) in enumerate(zip(our_grads, t_grads, xs))]
    )


def _compare_jvp(call: _Call, xs, outs, rng, tally: _Tally) -> bool:
    ts = [_random_like(rng, x) for x in xs]
    _, our_t = jax.jvp(lambda *a: [call.jax(*a)[k] for k in outs], tuple(jnp.asarray(x) for x in xs), tuple(ts))
    _, their_t = _torch().func.jvp(lambda *a: tuple(call.torch(*a)[k] for k in outs), tuple(_to_torch(x) for x in xs), tuple(_to_torch(t) for t in ts))
    return all([tally.close(f"jvp output {k}", o, _np(t)) for k, (o, t) in enumerate(zip(our_t, their_t))])


def _merge(old, new):
    return new if old is None else old if new is None else old and new


def compare_op(op: Op, samples: list[Sample], kinks: list[tuple], complex_samples: list[Sample], seed: int = 0) -> ParityRow:
    """Compare one op with torch on its samples (forward, vjp, jvp), kink inputs and complex ones."""
    row = ParityRow(op.name, os.path.basename(op.entry.location.file or ""))
    tally, rng = _Tally(row), np.random.default_rng(seed)
    with_jvp = bool(op.entry.forward)
    groups = (("plain", [(s.args, s.kwargs) for s in samples]), ("kinks", [(k, {}) for k in kinks]), ("complex", [(s.args, s.kwargs) for s in complex_samples]))
    for group, cases in groups:
        if not cases:
            continue
        for args, kwargs in cases:
            try:
                verdict = _compare_sample(_Call(op, args, kwargs), rng, tally, with_jvp)
            except Exception as e:  # noqa: BLE001 - a crash on either side is a difference, reported
                verdict = {"forward": tally._differs(f"{group}: {type(e).__name__}: {str(e)[:200]}")}
            if group == "plain":
                for column in ("forward", "vjp", "jvp"):
                    setattr(row, column, _merge(getattr(row, column), verdict.get(column)))
            else:
                agreed = all(v is not False for v in verdict.values())
                setattr(row, group, _merge(getattr(row, group), agreed))
    return row


def _float64(fn):
    def run(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run


def implemented(spec: Spec) -> list[str]:
    """The entries of `spec` that have a forward implementation and a torch.ops.aten op."""
    names = []
    for entry in spec:
        if implementation(entry.name) is None:
            continue
        try:
            _torch_op(entry.name)
        except (AttributeError, RuntimeError):
            continue
        names.append(entry.name)
    return names


@_float64
def compare(registry: Registry, name: str, seed: int = 0, max_samples: int | None = None) -> ParityRow:
    """The parity row of one op of `registry`, on its checker samples (the first `max_samples`)."""
    try:
        op = registry.op(name)
        rng = np.random.default_rng(seed)
        samples = samples_for(op, rng)[:max_samples]
        complex_samples = samples_for(op, rng, complex_=True)[:max_samples] if checks_complex(name) else []
        kinks = KINKS.get(name, [])
    except Exception as e:  # noqa: BLE001 - an op that does not build is a row, not a crash
        return ParityRow(name, "", forward=False, note=f"{type(e).__name__}: {str(e)[:200]}")
    return compare_op(op, samples, kinks, complex_samples, seed)


def parity(registry: Registry, ops: list[str] | None = None, seed: int = 0, max_samples: int | None = None) -> list[ParityRow]:
    """Parity rows of the named ops, or of every implemented entry of the registry's spec."""
    return [compare(registry, n, seed, max_samples) for n in (ops if ops is not None else implemented(registry.spec))]


def _mark(v: bool | None) -> str:
    return "n/a" if v is None else "ok" if v else "DIFFERS"


def to_markdown(rows: list[ParityRow], title: str) -> str:
    lines = [title, "", "| op | spec | " + " | ".join(COLUMNS) + " | max error | note |", "|---" * (len(COLUMNS) + 4) + "|"]
    for r in rows:
        note = r.note.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.op} | {r.spec} | " + " | ".join(_mark(getattr(r, c)) for c in COLUMNS) + f" | {r.max_err:.1e} | {note} |")
    counts = ", ".join(f"{c} {sum(getattr(r, c) is True for r in rows)}/{sum(getattr(r, c) is not None for r in rows)}" for c in COLUMNS)
    lines += ["", f"{len(rows)} ops compared; agreeing per column (of applicable): {counts}."]
    return "\n".join(lines) + "\n"


def write_json(rows: list[ParityRow], path: str, torch_version: str) -> None:
    with open(path, "w") as f:
        json.dump({"torch": torch_version, "rtol": RTOL, "atol": ATOL, "rows": [dataclasses.asdict(r) for r in rows]}, f, indent=1)

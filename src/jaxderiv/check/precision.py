"""The rules in float32 and bfloat16, judged against the same rule in float64.

A formula can be right in float64 and still lose precision in a lower one: a subtraction
that cancels (`1 - x*x` for `(1 - x) * (1 + x)`), a constant that rounds, a cast that drops
bits. Each elementwise and reduction entry's vjp and jvp are evaluated at its float64
samples rounded to the low dtype, and compared with the float64 rule at those rounded
values. The tolerance is dtype-aware and relative to what the low dtype can do: the error
may be a few units of the dtype's epsilon times the derivative's size, or a few times
the error of JAX's own autodiff of the forward in the same dtype, whichever is larger
(both are measured against the same float64 rule). Gradients must also keep the dtype of
their input and tangents that of their output.
"""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import NotImplementedDerivative
from .compare import AUTODIFF, Mismatch, input_label

__all__ = ["LOW_PRECISION", "Precision"]

# mode -> (real dtype, complex dtype or None where the dtype has no complex counterpart)
LOW_PRECISION = {"float32": (np.float32, np.complex64), "bfloat16": (jnp.bfloat16, None)}


class Precision:
    """How far a low-precision derivative may be from the float64 rule at the same values.

    Normwise: max |low - float64| <= max(eps_units * eps * max |float64|, autodiff_slack *
    max |JAX autodiff in the low dtype - float64|), over the elements where the float64 rule
    is finite.
    """

    eps_units = 64.0
    autodiff_slack = 4.0


def _low(mode: str, dtype):
    real, cplx = LOW_PRECISION[mode]
    if np.issubdtype(dtype, np.complexfloating):
        return cplx
    return real if np.issubdtype(dtype, np.floating) else None


def _cast(mode: str, v, back: bool = False):
    """v's floating arrays in the mode's dtype (back: and then in float64/complex128 again)."""
    if isinstance(v, (list, tuple)):
        return type(v)(_cast(mode, e, back) for e in v)
    if not hasattr(v, "dtype"):
        return v
    low = _low(mode, np.dtype(v.dtype))
    if low is None:
        return v
    a = np.asarray(v).astype(low)
    if back:
        a = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    return jax.device_put(a)


def applicable(mode: str, p, outputs) -> bool:
    """Whether the sample's inputs and outputs have the mode's dtype (bfloat16 has no complex)."""
    return all(_low(mode, np.dtype(x.dtype)) is not None for x in list(p.xs) + list(outputs))


def _cast_like(cts, outputs):
    """The cotangents in the dtypes of the outputs they pair with (an op with a `dtype=` argument
    computes in that dtype, whatever its input's)."""
    return [jax.device_put(np.asarray(c).astype(np.dtype(y.dtype))) for c, y in zip(cts, outputs)]


def _problems(mode: str, p):
    """The sample with every floating array rounded to the mode's dtype, and the same values in float64."""
    low, high = copy.copy(p), copy.copy(p)
    low.values, high.values = _cast(mode, p.values), _cast(mode, p.values, back=True)
    low.xs, high.xs = [low._get(q) for q in p.paths], [high._get(q) for q in p.paths]
    low._shared, high._shared = {}, {}  # what p found of its float64 outputs is not theirs
    return low, high


def _low_cts(mode: str, low, d: dict):
    return _cast_like(_cast(mode, d["cts"]), jax.eval_shape(low.rule_fn, *low.xs))


def _derivatives(fn, xs, vs, cts, forward: bool) -> dict:
    out = {"vjp": list(jax.vjp(fn, *xs)[1](list(cts)))}
    if forward:
        y, t = jax.jvp(fn, tuple(xs), tuple(vs))
        out["jvp"], out["out"] = list(t), list(y)
    return out


def program(mode: str, p, d: dict):
    """(function, arguments, values): the rule and JAX autodiff in the low dtype, the rule in float64."""
    low, high = _problems(mode, p)
    args = [
        (low.xs, _cast(mode, d["vs"]), _low_cts(mode, low, d)),
        (high.xs, _cast(mode, d["vs"], True), _cast(mode, d["cts"], True)),
    ]

    def run(lo, hi):
        return {
            "ours": _derivatives(low.rule_fn, *lo, True),
            "ref": _derivatives(low.native_fn, *lo, True),
            "exact": _derivatives(high.rule_fn, *hi, True),
        }

    return run, tuple(args), lambda out: dict(out, xs=low.xs)


def evaluate_apart(mode: str, p, d: dict, compiled, or_none) -> dict:
    """The same values function by function: the reference may not be differentiable by JAX,
    and the entry may have no forward-mode rule (then only the vjp is compared)."""
    low, high = _problems(mode, p)
    lo = (low.xs, _cast(mode, d["vs"]), _low_cts(mode, low, d))
    hi = (high.xs, _cast(mode, d["vs"], True), _cast(mode, d["cts"], True))
    try:
        forward = True
        ours = compiled(lambda xs, vs, cts: _derivatives(low.rule_fn, xs, vs, cts, True))(*lo)
    except NotImplementedDerivative:
        forward = False
        ours = compiled(lambda xs, vs, cts: _derivatives(low.rule_fn, xs, vs, cts, False))(*lo)
    exact = compiled(lambda xs, vs, cts: _derivatives(high.rule_fn, xs, vs, cts, forward))(*hi)
    ref = or_none(lambda xs, vs, cts: _derivatives(low.native_fn, xs, vs, cts, forward), *lo)
    return {"ours": ours, "ref": ref, "exact": exact, "xs": low.xs}


def _normwise(a, e) -> tuple[float, float]:
    """max |a - e| and max |e| over the elements where e is finite (a non-finite a there: inf)."""
    a, e = np.asarray(a).astype(np.complex128), np.asarray(e).astype(np.complex128)
    finite = np.isfinite(e)
    if not np.any(finite):
        return 0.0, 0.0
    diff = np.abs(a - e)[finite]
    diff = np.where(np.isfinite(diff), diff, np.inf)
    return float(np.max(diff, initial=0.0)), float(np.max(np.abs(e[finite]), initial=0.0))


def compare(mode: str, p, v: dict, acc, tol=Precision):
    """Raise _Mismatch where a low-precision derivative loses more than its dtype allows, or its dtype."""
    eps = float(jnp.finfo(LOW_PRECISION[mode][0]).eps)
    ours, ref, exact = v["ours"], v["ref"], v["exact"]
    sides = [("vjp", k, input_label(p, k)) for k in range(len(ours["vjp"]))]
    sides += [("jvp", k, f"output {k}") for k in range(len(ours.get("jvp", [])))]
    for kind, k, side in sides:
        got = ours[kind][k]
        want_dtype = np.asarray(v["xs"][k]).dtype if kind == "vjp" else np.asarray(ours["out"][k]).dtype
        if np.asarray(got).dtype != want_dtype:
            raise Mismatch(
                f"{mode} {kind}, {side}: the spec's rule gives a {np.asarray(got).dtype} derivative of a {want_dtype} value "
                "(a derivative has its primal's dtype)",
                float("nan"),
                float("nan"),
            )
        err, scale = _normwise(got, exact[kind][k])
        ref_err = _normwise(ref[kind][k], exact[kind][k])[0] if ref is not None else 0.0
        allowed = max(tol.eps_units * eps * scale, tol.autodiff_slack * ref_err)
        rel = err / scale if scale else err
        acc.abs_err, acc.rel_err = max(acc.abs_err, err), max(acc.rel_err, min(rel, err))
        if not err <= allowed:
            ref_text = (
                f"{ref_err:.3e} ({ref_err / scale if scale else ref_err:.1f} relative)"
                if ref is not None
                else "not available"
            )
            raise Mismatch(
                f"{mode} {kind}, {side}: the spec's rule in {mode} differs from the same rule in float64 by {err:.3e} "
                f"({rel / eps:.1f} {mode} epsilons of max |derivative| = {scale:.3e}); allowed {allowed:.3e}: the larger of "
                f"{tol.eps_units:g} epsilons and {tol.autodiff_slack:g} x the error of {AUTODIFF} in {mode}, {ref_text}",
                err,
                rel,
            )

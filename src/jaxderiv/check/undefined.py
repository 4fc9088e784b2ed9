"""Undefined cotangents and tangents (gradcheck's `check_undefined_grad`), checked by default.

PyTorch hands a backward formula an undefined tensor for an output nobody differentiates, and
a `result:` formula an undefined tangent for an input held fixed; a formula must treat either
as zero. JAX's counterpart is the symbolic zero: the vjp of one output alone leaves the other
outputs' cotangents symbolic zeros, the jvp with one input closed over leaves its tangent one.
The rules receive those as "undefined" (rules.py). Each such derivative must equal the same
rule's derivative with that part an array of zeros, which the sample's own pullback or
linearized jvp gives at no extra trace. `thorough` compares them with JAX's autodiff of the
forward and with finite differences too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .compare import AUTODIFF, central_differences, input_label, real_pairing

ZERO_FILLED = "the same derivative with the undefined parts arrays of zeros"


def partials(mode: str, fn, xs, ds) -> list:
    """Derivatives with parts left undefined: for vjp (ds: cotangents), one per output,
    differentiating that output alone; for jvp (ds: tangents), one per input, that input held
    fixed. Empty for one output (vjp) or one input (jvp): nothing can be left undefined."""
    if len(ds) < 2:
        return []
    if mode == "vjp":
        return [jax.vjp(lambda *xs, k=k: fn(*xs)[k], *xs)[1](ds[k]) for k in range(len(ds))]
    out = []
    for i in range(len(xs)):
        others = tuple(x for j, x in enumerate(xs) if j != i)
        held = lambda *o, i=i: fn(*o[:i], xs[i], *o[i:])  # noqa: E731
        out.append(jax.jvp(held, others, tuple(v for j, v in enumerate(ds) if j != i))[1])
    return out


def zero_filled(mode: str, linear, directions: list) -> list:
    """`partials`' counterparts through the sample's own linear map (the rule's pullback, or its
    linearized jvp), with the undefined part an array of zeros instead."""
    if len(directions) < 2:
        return []
    if mode == "vjp":  # output k alone: every other cotangent zero
        return [
            linear([d if j == k else jnp.zeros_like(d) for j, d in enumerate(directions)])
            for k in range(len(directions))
        ]
    return [  # input i held fixed: its tangent zero
        linear(*[jnp.zeros_like(d) if j == i else d for j, d in enumerate(directions)]) for i in range(len(directions))
    ]


def values(mode: str, fn, xs, ds, linear) -> dict:
    """What `compare` reads: `p_ours` (the rule's derivatives with parts undefined) and `p_zero`."""
    ours = partials(mode, fn, xs, ds)
    return {"p_ours": ours, "p_zero": zero_filled(mode, linear, list(ds))} if ours else {}


def shifts(fn, xs, vs, h) -> tuple[list, list]:
    """fn at x ± h v with each input's direction in turn set to zero: finite differences of the
    jvp `partials` (thorough)."""
    if len(xs) < 2:
        return [], []
    plus, minus = [], []
    for i in range(len(xs)):
        ws = [jnp.zeros_like(v) if j == i else v for j, v in enumerate(vs)]
        plus.append(fn(*[x + h * w for x, w in zip(xs, ws)]))
        minus.append(fn(*[x - h * w for x, w in zip(xs, ws)]))
    return plus, minus


def compare(mode: str, p, v: dict, acc, tol, thorough: bool):
    """Each derivative with a part undefined against the zero-filled one; with `thorough`, also
    against JAX autodiff (`p_ref`) and finite differences."""
    if mode == "vjp":
        for k, ours in enumerate(v.get("p_ours") or []):
            check = f"vjp of output {k} alone (the other outputs' cotangents undefined)"
            ours = p.project(ours)
            for i, (o, z) in enumerate(zip(ours, p.project(v["p_zero"][k]))):
                acc.compare(check, input_label(p, i), ZERO_FILLED, o, z, tol.ref_rtol, tol.ref_atol)
            if not thorough:
                continue
            if v.get("p_ref") is not None:
                for i, (o, r) in enumerate(zip(ours, p.project(v["p_ref"][k]))):
                    acc.compare(check, input_label(p, i), AUTODIFF, o, r, tol.ref_rtol, tol.ref_atol)
            fd = central_differences(v["plus"], v["minus"], tol.fd_step)
            lhs, rhs = real_pairing(ours, v["vs"]), real_pairing([v["cts"][k]], [fd[k]])
            acc.compare(
                check,
                "<vjp(ct), v> summed over every input",
                f"<ct, finite-difference jvp(v)> of output {k}",
                np.array(lhs),
                np.array(rhs),
                tol.fd_rtol,
                tol.fd_atol * max(1.0, abs(rhs)),
            )
    elif mode == "jvp":
        for i, ours in enumerate(v.get("p_ours") or []):
            check = f"jvp with {input_label(p, i)} held fixed (its tangent undefined, the others' random)"
            for k, (o, z) in enumerate(zip(ours, v["p_zero"][i])):
                acc.compare(check, f"output {k}", ZERO_FILLED, o, z, tol.ref_rtol, tol.ref_atol)
            if not thorough:
                continue
            if v.get("p_ref") is not None:
                for k, (o, r) in enumerate(zip(ours, v["p_ref"][i])):
                    acc.compare(check, f"output {k}", AUTODIFF, o, r, tol.ref_rtol, tol.ref_atol)
            for k, (o, f) in enumerate(zip(ours, central_differences(v["p_plus"][i], v["p_minus"][i], tol.fd_step))):
                acc.compare(
                    check,
                    f"output {k}",
                    f"central finite differences, step {tol.fd_step:g}",
                    o,
                    f,
                    tol.fd_rtol,
                    tol.fd_atol,
                )

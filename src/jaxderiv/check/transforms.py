"""The vjp/jvp comparison under other transforms, because a rule can be right under jit and
wrong unbatched or batched, e.g. a helper whose result depends on how it is traced.

By default the rule's pullback and linearized jvp run under jax.vmap over 2 cotangents or
tangents (gradcheck's check_batched_grad). Opt-in (`transforms`): evaluated op by op without
jax.jit ("nojit"), and under jax.vmap over 2 stacked inputs as well ("vmap": functorch's
vmap-of-vjp, which traces the forward once more).
"""

from __future__ import annotations

import jax
import numpy as np

from .compare import Compiled, input_label, check_jit, random_like, stack_pair

# "jit": the comparison every run makes (with its batched part), in one jitted program per sample;
# "nojit": the rule's vjp/jvp evaluated op by op; "vmap": also batched over 2 stacked inputs.
TRANSFORMS = ("jit", "nojit", "vmap")


# The second slice of the batched check: the first direction times this. The linear map's
# value there is SCALE times the unbatched derivative, so the check needs no second unbatched
# evaluation (a trace of the formula); a batch whose slices are mixed or broadcast differs.
SCALE = -1.5


def batched_values(mode: str, linear, ds) -> dict:
    """gradcheck's `check_batched_grad`, on by default: the sample's own linear map (the rule's
    pullback for vjp, its linearized jvp) under jax.vmap over 2 cotangents or tangents, `ds`
    and SCALE * `ds`. Batching the linear map batches the backward (or `result:`) formula
    and its helpers, where a rule would go wrong, at no second trace of the forward."""
    stacked = stack_pair(ds, [SCALE * d for d in ds])
    if mode == "vjp":
        return {"batched": jax.vmap(lambda c: linear(c))(stacked)}
    return {"batched": jax.vmap(lambda t: linear(*t))(stacked)}


def _side(mode: str, p, k: int) -> str:
    return input_label(p, k) if mode == "vjp" else f"output {k}"


def compare_batched(mode: str, p, v: dict, acc, tol):
    """Each slice of the batched derivative against the same derivative computed alone (the
    second slice: SCALE times it, by linearity)."""
    what = "2 cotangents" if mode == "vjp" else "2 tangents"
    for s, scale in enumerate((1.0, SCALE)):
        for k, (b, e) in enumerate(zip(v["batched"], v["ours"])):
            acc.compare(
                f"{mode} under jax.vmap over {what}, slice {s}",
                _side(mode, p, k),
                "the same derivative computed alone" + (f", times {scale:g}" if s else ""),
                np.asarray(b)[s],
                scale * np.asarray(e),
                tol.ref_rtol,
                tol.ref_atol,
            )


def _derivative(mode: str, p):
    """The rule's vjp (xs, cts) or jvp (xs, vs) as one function of its arrays."""
    if mode == "vjp":
        return lambda xs, cts: list(jax.vjp(p.rule_fn, *xs)[1](list(cts)))
    return lambda xs, vs: list(jax.jvp(p.rule_fn, tuple(xs), tuple(vs))[1])


def unjitted(mode: str, p, v: dict) -> list:
    """The rule's derivative evaluated op by op, with no jax.jit around it."""
    return _derivative(mode, p)(list(p.xs), list(v["cts"] if mode == "vjp" else v["vs"]))


def compare_stacked_inputs(mode: str, p, v: dict, acc, tol, rng):
    """Under jax.vmap over 2 stacked inputs and 2 cotangents (vjp) or tangents (jvp), functorch's
    vmap-of-vjp: each slice must equal the derivative computed alone. A forward whose output
    shape depends on its values cannot be batched over inputs: reported as that error."""
    f = _derivative(mode, p)
    xs = list(p.xs)
    d = list(v["cts"] if mode == "vjp" else v["vs"])
    d2 = [random_like(rng, a) for a in d] if mode == "vjp" else p.project([random_like(rng, a) for a in d])
    xs2 = [x + 0.01 * t for x, t in zip(xs, p.project([random_like(rng, x) for x in xs]))]
    what = "2 cotangents" if mode == "vjp" else "2 tangents"

    def over_inputs(xs, xs2, d, d2):
        return jax.vmap(f)(stack_pair(xs, xs2), stack_pair(d, d2)), f(xs2, d2)

    batched, alone = (check_jit if v["jitted"] else Compiled)(over_inputs)(xs, xs2, d, d2)
    for s, expected in enumerate((v["ours"], alone)):
        for k, (b, e) in enumerate(zip(batched, expected)):
            acc.compare(
                f"{mode} under jax.vmap over {what} and 2 stacked inputs, slice {s}",
                _side(mode, p, k),
                "the same derivative computed alone",
                np.asarray(b)[s],
                e,
                tol.ref_rtol,
                tol.ref_atol,
            )

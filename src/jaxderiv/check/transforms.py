"""The vjp/jvp comparison under other transforms: evaluated op by op without jax.jit, and under jax.vmap.

Opt-in (`transforms`), because a rule can be right under jit and wrong unbatched or batched,
e.g. a helper whose result depends on how it is traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .compare import _Compiled, _input, _jit, _random_like

# "jit": the comparison every run makes, in one jitted program per sample; "nojit": the rule's
# vjp/jvp evaluated op by op; "vmap": under jax.vmap over 2 cotangents/tangents and stacked inputs.
TRANSFORMS = ("jit", "nojit", "vmap")


def _derivative(mode: str, p):
    """The rule's vjp (xs, cts) or jvp (xs, vs) as one function of its arrays."""
    if mode == "vjp":
        return lambda xs, cts: list(jax.vjp(p.rule_fn, *xs)[1](list(cts)))
    return lambda xs, vs: list(jax.jvp(p.rule_fn, tuple(xs), tuple(vs))[1])


def _unjitted(mode: str, p, v: dict) -> list:
    """The rule's derivative evaluated op by op, with no jax.jit around it."""
    return _derivative(mode, p)(list(p.xs), list(v["cts"] if mode == "vjp" else v["vs"]))


def _compare_batched(mode: str, p, v: dict, acc, tol, rng):
    """Under jax.vmap over 2 cotangents (vjp) or tangents (jvp), then over 2 stacked inputs too:
    each slice must equal the derivative computed alone."""
    f = _derivative(mode, p)
    xs = list(p.xs)
    d = list(v["cts"] if mode == "vjp" else v["vs"])
    d2 = [_random_like(rng, a) for a in d] if mode == "vjp" else p.project([_random_like(rng, a) for a in d])
    xs2 = [x + 0.01 * t for x, t in zip(xs, p.project([_random_like(rng, x) for x in xs]))]
    stack = lambda a, b: [jnp.stack([x, y]) for x, y in zip(a, b)]  # noqa: E731
    what = "2 cotangents" if mode == "vjp" else "2 tangents"
    side = _input if mode == "vjp" else (lambda p, k: f"output {k}")
    reference = "the same derivative computed alone"

    def over_directions(xs, d, d2):
        return jax.vmap(lambda t: f(xs, t))(stack(d, d2)), f(xs, d2)

    def over_inputs(xs, xs2, d, d2):
        return jax.vmap(f)(stack(xs, xs2), stack(d, d2)), f(xs2, d2)

    run = _Compiled if not v["jitted"] else _jit
    batched, alone = run(over_directions)(xs, d, d2)
    for s, expected in enumerate((v["ours"], alone)):
        for k, (b, e) in enumerate(zip(batched, expected)):
            acc.compare(
                f"{mode} under jax.vmap over {what}, slice {s}",
                side(p, k),
                reference,
                b[s],
                e,
                tol.ref_rtol,
                tol.ref_atol,
            )
    try:
        batched, alone = run(over_inputs)(xs, xs2, d, d2)
    except Exception:  # noqa: BLE001 - a forward with value-dependent shapes: no batch of inputs
        if v["jitted"]:
            raise
        return
    for s, expected in enumerate((v["ours"], alone)):
        for k, (b, e) in enumerate(zip(batched, expected)):
            acc.compare(
                f"{mode} under jax.vmap over {what} and 2 stacked inputs, slice {s}",
                side(p, k),
                reference,
                b[s],
                e,
                tol.ref_rtol,
                tol.ref_atol,
            )

"""Checker samples of the random ops: each call gets a fixed `jax.random` key.

With its key fixed a sampler is a deterministic function of its float arguments, so its
rule can be compared with JAX's autodiff and finite differences of that function. The
in-place samplers do not read self's values (derivative zero, as their formulas state);
bernoulli's and poisson's samples are piecewise constant in their parameters.

Two estimators are not the derivative of a fixed-key sampler, so their samples name the
function they are the derivative of (`Sample.reference`), built from the estimator's
definition: normal's mean/std overloads hold the drawn sample constant (the spec's, and
torch's, zero gradient: a sample is data, not a function of its parameters), and
`_standard_gamma`'s implicit reparameterisation holds the sample's quantile u = P(alpha, x)
constant, x(alpha) solving P(alpha, x) = u by Newton's method (JAX's rejection sampler
follows another path, so finite differences of the forward cannot judge the formula).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammainc, gammaln

from ...forward import implementation
from ..opdb import domain, parity_differs, samples, without_meaning
from ..samples import Sample


def _key(rng):
    return jax.random.key(int(rng.integers(1 << 30)))


def _keyed(make_args):
    """Samples `make_args(rng) -> [(args, label)]`, each called with generator=<a fixed key>."""

    def fn(op, rng, dtype=np.float64):
        return [Sample(tuple(args), {"generator": _key(rng)}, label) for args, label in make_args(rng)]

    return fn


def _x(rng, shape=(2, 3)):
    return rng.normal(size=shape)


samples("uniform_")(_keyed(lambda rng: [((_x(rng), -1.0, 2.0), "2x3 [-1, 2)")]))
samples("normal_")(_keyed(lambda rng: [((_x(rng), 0.5, 2.0), "2x3 N(0.5, 2)")]))
samples("log_normal_")(_keyed(lambda rng: [((_x(rng), 0.0, 0.5), "2x3 mean 0 std 0.5")]))
samples("cauchy_")(_keyed(lambda rng: [((_x(rng), 0.0, 1.0), "2x3")]))
samples("exponential_")(_keyed(lambda rng: [((_x(rng), 2.0), "2x3 lambd=2")]))
samples("geometric_")(_keyed(lambda rng: [((_x(rng), 0.3), "2x3 p=0.3")]))
samples("random_")(_keyed(lambda rng: [((_x(rng),), "2x3")]))
samples("random_.to")(_keyed(lambda rng: [((_x(rng), 7), "2x3 to=7")]))
samples("random_.from")(_keyed(lambda rng: [((_x(rng), -3, 4), "2x3 [-3, 4)"), ((_x(rng), 2, None), "2x3 [2, 2**53]")]))
samples("bernoulli")(_keyed(lambda rng: [((rng.uniform(0.1, 0.9, size=(2, 3)),), "2x3 p in (0.1, 0.9)")]))
samples("bernoulli_.Tensor")(_keyed(lambda rng: [((_x(rng), rng.uniform(0.1, 0.9, size=(3,))), "2x3, p 3 broadcast")]))
samples("bernoulli_.float")(_keyed(lambda rng: [((_x(rng), 0.4), "2x3 p=0.4")]))
samples("poisson")(_keyed(lambda rng: [((rng.uniform(0.5, 5.0, size=(2, 3)),), "2x3 rate in (0.5, 5)")]))
samples("multinomial")(_keyed(lambda rng: [((rng.uniform(0.1, 1.0, size=(2, 4)), 3), "2x4 3 draws")]))


def _held_constant(name, make_args):
    """Samples whose reference is the drawn sample itself, constant in mean and std."""

    def fn(op, rng, dtype=np.float64):
        out = []
        for args, label in make_args(rng):
            key = _key(rng)
            drawn = np.asarray(implementation(name)(*args, generator=key))
            reference = lambda *values, _d=drawn: jnp.asarray(_d)
            out.append(Sample(tuple(args), {"generator": key}, label + ", sample held constant", reference=reference))
        return out

    return fn


samples("normal.Tensor_float")(_held_constant("normal.Tensor_float", lambda rng: [((_x(rng), 0.5), "2x3 std=0.5")]))
samples("normal.float_Tensor")(
    _held_constant("normal.float_Tensor", lambda rng: [((0.5, rng.uniform(0.5, 2.0, size=(2, 3))), "mean=0.5, 2x3")])
)
samples("normal.Tensor_Tensor")(
    _held_constant(
        "normal.Tensor_Tensor", lambda rng: [((_x(rng), rng.uniform(0.5, 2.0, size=(3,))), "2x3, std 3 broadcast")]
    )
)


def _gamma_quantile(alpha, u, start, steps=12):
    """x with P(alpha, x) = u (P the regularized lower incomplete gamma), by Newton's method
    from `start`, a point already near the root."""
    x = start
    for _ in range(steps):
        log_pdf = (alpha - 1) * jnp.log(x) - x - gammaln(alpha)
        x = x - (gammainc(alpha, x) - u) * jnp.exp(-log_pdf)
    return x


@samples("_standard_gamma")
def _standard_gamma(op, rng, dtype=np.float64):
    alpha = rng.uniform(0.5, 5.0, size=(2, 3))
    key = _key(rng)
    drawn = np.asarray(implementation("_standard_gamma")(alpha, generator=key))
    u = np.asarray(gammainc(alpha, drawn))

    def reference(alpha, generator=None):
        return _gamma_quantile(alpha, u, jnp.asarray(drawn))

    return [Sample((alpha,), {"generator": key}, "2x3 alpha in (0.5, 5), quantile held constant", reference=reference)]


domain(0.5, 5.0, "_standard_gamma_grad")


# -- parity with torch ------------------------------------------------------------------------

parity_differs(
    ("forward",),
    "torch evaluates d sample / d alpha by series and rational fits (relative error ~1e-4); "
    "jaxderiv by the exact implicit derivative of the regularized incomplete gamma function",
    "_standard_gamma_grad",
    torch_spec=True,
)

# The proofs have nothing to compare these with: a draw is a sample, not a function of its inputs.
without_meaning(
    "random: a sample, not a function of its inputs",
    "bernoulli", "bernoulli_.Tensor", "bernoulli_.float", "cauchy_", "exponential_", "geometric_", "log_normal_",
    "normal_", "normal.Tensor_float", "normal.float_Tensor", "normal.Tensor_Tensor", "poisson", "random_.from",
    "random_.to", "random_", "uniform_", "_standard_gamma", "_standard_gamma_grad",
)  # fmt: skip

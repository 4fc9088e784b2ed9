"""Checker samples of the random ops: each call gets a fixed `jax.random` key.

With its key fixed a sampler is a deterministic function of its float arguments, so its
rule can be compared with JAX's autodiff and finite differences of that function. The
in-place samplers do not read self's values (derivative zero, as their formulas state);
bernoulli's and poisson's samples are piecewise constant in their parameters.
"""

from __future__ import annotations

import jax
import numpy as np

from ..samples import Sample, domain, known_failure, samples


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
samples("normal.Tensor_float")(_keyed(lambda rng: [((_x(rng), 0.5), "2x3 std=0.5")]))
samples("normal.float_Tensor")(_keyed(lambda rng: [((0.5, rng.uniform(0.5, 2.0, size=(2, 3))), "mean=0.5, 2x3")]))
samples("normal.Tensor_Tensor")(_keyed(lambda rng: [((_x(rng), rng.uniform(0.5, 2.0, size=(3,))), "2x3, std 3 broadcast")]))
samples("_standard_gamma")(_keyed(lambda rng: [((rng.uniform(0.5, 5.0, size=(2, 3)),), "2x3 alpha in (0.5, 5)")]))
domain(0.5, 5.0, "_standard_gamma_grad")

known_failure(
    "the spec states a zero gradient for normal's mean and std (a sample is not differentiated), "
    "while with a fixed key the sample mean + std * eps depends on both",
    "normal.Tensor_float", "normal.float_Tensor", "normal.Tensor_Tensor")
known_failure(
    "the formula is the implicit-reparameterisation gradient -(dCDF/dalpha) / pdf; finite "
    "differences of a fixed-key rejection sampler follow its own, different, reparameterisation",
    "_standard_gamma")

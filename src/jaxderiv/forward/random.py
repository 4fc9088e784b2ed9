"""Forward implementations of ATen's random sampling ops (bernoulli, normal, uniform_, gamma...).

ATen's `Generator? generator` argument is an explicit `jax.random` key here: the same key
draws the same sample, and an op called without one raises. In-place samplers (`uniform_`,
`normal_`...) return a new array shaped and typed like `self`; its values are not read, so
their derivative is zero, as the formulas state. Samples are drawn in `self`'s dtype (float32
unless x64 floats are given); integer and bool tensors take integer-valued draws.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammainc, gammaln

from ..records import Sample, domain, parity_differs, samples, without_meaning
from . import OpKind, impl, implementation, variant


def _key(generator, name):
    if generator is None:
        raise ValueError(f"{name} needs an explicit jax.random key as its generator argument")
    return generator


def _float_dtype(x):
    """The dtype draws are made in: x's if floating, else the default float."""
    dtype = jnp.result_type(x)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.result_type(float)


def _like(x, values):
    """`values` in x's shape and dtype (bool and integer tensors keep the integer part)."""
    return jnp.broadcast_to(values, jnp.shape(x)).astype(jnp.result_type(x))


def _require_floating(name, x):
    if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
        raise TypeError(f"{name} is only implemented for floating-point tensors, got {jnp.result_type(x)}")


# -- bernoulli ----------------------------------------------------------------------------------


@impl("bernoulli")
def bernoulli(self, generator=None):
    """1 with probability self (elementwise), else 0, in self's dtype."""
    key = _key(generator, "bernoulli")
    p = jnp.asarray(self)
    return jax.random.bernoulli(key, p.astype(_float_dtype(p)), p.shape).astype(p.dtype)


@impl("bernoulli_.Tensor")
def bernoulli__Tensor(self, p, generator=None):
    """Draws in self's shape with probabilities p broadcast to it."""
    key = _key(generator, "bernoulli_")
    probs = jnp.broadcast_to(jnp.asarray(p).astype(_float_dtype(self)), jnp.shape(self))
    return _like(self, jax.random.bernoulli(key, probs, jnp.shape(self)))


@impl("bernoulli_.float")
def bernoulli__float(self, p=0.5, generator=None):
    key = _key(generator, "bernoulli_")
    return _like(self, jax.random.bernoulli(key, p, jnp.shape(self)))


@variant("bernoulli.p", entry="bernoulli_.float", gradient="the entry's formulas: none", random=True)
def bernoulli_p_variant(registry, op, self, p=0.5, *, generator=None, key=None):
    """`bernoulli.p`: ATen's kernel fills a tensor like `self` in place (`bernoulli_.float`),
    whose entry states the gradient (none for `self`); the draws come from the node's key."""
    if generator is None and key is None:
        raise ValueError("bernoulli draws random values: pass key=jax.random.key(...) to apply()")
    return op(self, p, generator=key if generator is None else generator)


# -- continuous distributions filled into self ----------------------------------------------------


def _as_real_pairs(x):
    """ATen's view_as_real of a complex x: (shape (..., 2) to draw in, its real dtype); None for real x."""
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return x.shape + (2,), jnp.real(x).dtype
    return None


def _from_pairs(pairs, dtype):
    return (pairs[..., 0] + 1j * pairs[..., 1]).astype(dtype)


def _filled(name, self, generator, draw):
    """`draw(key, shape, dtype, pairs)` filled into self: a floating self's shape and dtype, or
    for a complex self (`pairs` True) the real and imaginary parts of view_as_real(self), which
    ATen fills."""
    x = jnp.asarray(self)
    pairs = _as_real_pairs(x)
    if pairs is None:
        _require_floating(name, self)
    key = _key(generator, name)
    if pairs is not None:
        return _from_pairs(draw(key, *pairs, True), x.dtype)
    return draw(key, x.shape, x.dtype, False)


@impl("uniform_")
def uniform_(self, from_=0, to=1, generator=None):
    """from + (to - from) * U[0, 1); complex: real and imaginary parts each so (ATen fills
    view_as_real(self))."""

    def draw(key, shape, dtype, pairs):
        return from_ + (to - from_) * jax.random.uniform(key, shape, dtype)

    return _filled("uniform_", self, generator, draw)


@impl("normal_")
def normal_(self, mean=0, std=1, generator=None):
    """mean + std * N(0, 1); complex: ATen fills view_as_real(self) with N(mean, std / sqrt 2),
    so that each part has mean `mean` and variance std^2 / 2 (E|z - mean(1 + i)|^2 = std^2)."""

    def draw(key, shape, dtype, pairs):
        return mean + (std / 2**0.5 if pairs else std) * jax.random.normal(key, shape, dtype)

    return _filled("normal_", self, generator, draw)


@impl("log_normal_")
def log_normal_(self, mean=1, std=2, generator=None):
    """exp(mean + std * N(0, 1))."""
    _require_floating("log_normal_", self)
    key = _key(generator, "log_normal_")
    x = jnp.asarray(self)
    return jnp.exp(mean + std * jax.random.normal(key, x.shape, x.dtype))


@impl("cauchy_")
def cauchy_(self, median=0, sigma=1, generator=None):
    _require_floating("cauchy_", self)
    key = _key(generator, "cauchy_")
    x = jnp.asarray(self)
    return median + sigma * jax.random.cauchy(key, x.shape, x.dtype)


@impl("exponential_")
def exponential_(self, lambd=1, generator=None):
    """Exp(lambd): mean 1 / lambd."""
    _require_floating("exponential_", self)
    key = _key(generator, "exponential_")
    x = jnp.asarray(self)
    return jax.random.exponential(key, x.shape, x.dtype) / lambd


@impl("geometric_")
def geometric_(self, p, generator=None):
    """The number of Bernoulli(p) trials up to the first success: 1, 2, ..."""
    key = _key(generator, "geometric_")
    return _like(self, jax.random.geometric(key, p, jnp.shape(self)))


# -- random_: integers ----------------------------------------------------------------------------


def _default_upper(dtype):
    """random_'s inclusive upper bound when none is given: 2**digits for floats, the max for ints."""
    if dtype == jnp.bool_:
        return 1
    if jnp.issubdtype(dtype, jnp.floating):
        return 2 ** (jnp.finfo(dtype).nmant + 1)
    return int(jnp.iinfo(dtype).max)


def _integers(self, low, high, generator, name):
    """Integers in [low, high) in self's shape and dtype; `high` may be one past the dtype's max."""
    key = _key(generator, name)
    if high <= low:
        raise ValueError(f"{name} expects 'from' to be less than 'to', but got from={low} >= to={high}")
    wide = high - low > 2**31 - 1 or low < -(2**31)
    idtype = jnp.int64 if wide and jax.config.jax_enable_x64 else jnp.int32
    values = jax.random.randint(key, jnp.shape(self), low, min(high, int(jnp.iinfo(idtype).max) + 1), idtype)
    return _like(self, values)


@impl("random_")
def random_(self, generator=None):
    """Integers in [0, 2**digits] for floats (every one exactly representable), [0, max] for ints."""
    return _integers(self, 0, _default_upper(jnp.result_type(self)) + 1, generator, "random_")


@impl("random_.to")
def random__to(self, to, generator=None):
    return _integers(self, 0, to, generator, "random_")


@impl("random_.from")
def random__from(self, from_, to, generator=None):
    high = _default_upper(jnp.result_type(self)) + 1 if to is None else to
    return _integers(self, from_, high, generator, "random_")


# -- samplers with distribution parameters --------------------------------------------------------


@impl("normal.Tensor_float")
def normal_Tensor_float(mean, std=1, generator=None):
    key = _key(generator, "normal")
    m = jnp.asarray(mean)
    return m + std * jax.random.normal(key, m.shape, _float_dtype(m))


@impl("normal.float_Tensor")
def normal_float_Tensor(mean, std, generator=None):
    key = _key(generator, "normal")
    s = jnp.asarray(std)
    return mean + s * jax.random.normal(key, s.shape, _float_dtype(s))


@impl("normal.Tensor_Tensor")
def normal_Tensor_Tensor(mean, std, generator=None):
    """mean + std * N(0, 1), in the broadcast shape of mean and std."""
    key = _key(generator, "normal")
    shape = jnp.broadcast_shapes(jnp.shape(mean), jnp.shape(std))
    return mean + std * jax.random.normal(key, shape, jnp.result_type(mean, std))


@impl("poisson")
def poisson(self, generator=None):
    """Poisson(rate = self) counts, in self's dtype."""
    key = _key(generator, "poisson")
    rate = jnp.asarray(self)
    return jax.random.poisson(key, rate, rate.shape).astype(rate.dtype)


@impl("_standard_gamma")
def _standard_gamma(self, generator=None):
    """Gamma(concentration = self, rate = 1) samples."""
    _require_floating("_standard_gamma", self)
    key = _key(generator, "_standard_gamma")
    alpha = jnp.asarray(self)
    return jax.random.gamma(key, alpha, alpha.shape, alpha.dtype)


@impl("multinomial")
def multinomial(self, num_samples, replacement=False, generator=None):
    """Category indices drawn from the rows of self (unnormalized weights), int64 like ATen.

    Without replacement, the Gumbel top-k trick: the k largest of log(w) + Gumbel noise are
    distributed as k successive draws without replacement.
    """
    key = _key(generator, "multinomial")
    w = jnp.asarray(self)
    if w.ndim not in (1, 2):
        raise ValueError(f"prob_dist must be 1 or 2 dim, got {w.ndim}")
    if not replacement and num_samples > w.shape[-1]:
        raise ValueError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    logits = jnp.log(w.astype(_float_dtype(w)))
    if replacement:
        out = jax.random.categorical(key, logits, axis=-1, shape=(num_samples,) + w.shape[:-1])
        out = jnp.moveaxis(out, 0, -1)
    else:
        noisy = logits + jax.random.gumbel(key, w.shape, logits.dtype)
        out = jax.lax.top_k(noisy, num_samples)[1]
    return out.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


# -- implicit reparameterisation: d(sample) / d(concentration) ---------------------------------


@impl("_standard_gamma_grad")
def _standard_gamma_grad(self, output):
    """d x / d alpha of a Gamma(alpha, 1) sample x, holding its CDF fixed (implicit
    reparameterisation): -(dP(alpha, x)/dalpha) / pdf(x; alpha), P the regularized lower
    incomplete gamma function. ATen approximates the same quantity by series and rational fits.
    """
    alpha, x = jnp.broadcast_arrays(jnp.asarray(self), jnp.asarray(output))
    log_pdf = (alpha - 1) * jnp.log(x) - x - jax.lax.lgamma(alpha)
    return -jax.lax.igamma_grad_a(alpha, x) * jnp.exp(-log_pdf)


# -- random constructors (no derivatives.yaml entry: their values carry no gradient) -------------


def drawing(*names):
    """Register a sampler that derivatives.yaml does not list (`randn`, `randint_like`...): its
    outputs carry no gradient, and its values come from `generator`, a jax.random key (an
    exported graph's node gets one from apply's `key=`)."""
    return impl(*names, kind=OpKind.RANDOM)


def _constructed(size, dtype, name):
    """(shape, dtype) of a random constructor: ATen's default float unless `dtype` is given."""
    shape = tuple(size)
    if any(n < 0 for n in shape):
        raise ValueError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return shape, jnp.dtype(dtype) if dtype is not None else jnp.dtype(jnp.float32)


def _standard(kind, key, shape, dtype, name):
    """N(0, 1) or U[0, 1) draws in `dtype`; complex: ATen draws view_as_real(result), each part
    with variance 1/2 for normal (E|z|^2 = 1) and uniform on [0, 1) for uniform."""
    if jnp.issubdtype(dtype, jnp.complexfloating):
        real = jnp.real(jnp.zeros((), dtype)).dtype
        if kind == "normal":
            return _from_pairs(jax.random.normal(key, shape + (2,), real) / 2**0.5, dtype)
        return _from_pairs(jax.random.uniform(key, shape + (2,), real), dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        op = "normal" if kind == "normal" else "uniform"
        raise TypeError(f"\"{op}_kernel_cpu\" not implemented for '{_torch_name(dtype)}'")
    draw = jax.random.normal if kind == "normal" else jax.random.uniform
    return draw(key, shape, dtype)


def _torch_name(dtype) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(
        jnp.dtype(dtype).name, jnp.dtype(dtype).name
    )


@drawing("randn", "randn.generator")
def randn(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """N(0, 1) draws of shape `size` (complex: E|z|^2 = 1), float32 unless `dtype` is given."""
    shape, dtype = _constructed(size, dtype, "randn")
    return _standard("normal", _key(generator, "randn"), shape, dtype, "randn")


@drawing("rand", "rand.generator")
def rand(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """U[0, 1) draws of shape `size` (complex: each part so), float32 unless `dtype` is given."""
    shape, dtype = _constructed(size, dtype, "rand")
    return _standard("uniform", _key(generator, "rand"), shape, dtype, "rand")


@drawing("randn_like", "randn_like.generator")
def randn_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    x = jnp.asarray(self)
    return _standard("normal", _key(generator, "randn_like"), x.shape, jnp.dtype(dtype or x.dtype), "randn_like")


@drawing("rand_like", "rand_like.generator")
def rand_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    x = jnp.asarray(self)
    return _standard("uniform", _key(generator, "rand_like"), x.shape, jnp.dtype(dtype or x.dtype), "rand_like")


def _randint(key, low, high, shape, dtype, name):
    """Integers in [low, high) in `dtype` (ATen allows floating dtypes: integer-valued draws)."""
    if high <= low:
        raise ValueError(f"{name} expects 'from' to be less than 'to', but got from={low} >= to={high}")
    wide = high - low > 2**31 - 1 or low < -(2**31) or high > 2**31
    idtype = jnp.int64 if wide and jax.config.jax_enable_x64 else jnp.int32
    return jax.random.randint(key, shape, low, high, idtype).astype(dtype)


def _int64():
    return jnp.dtype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


@drawing("randint", "randint.generator")
def randint(high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """Integers in [0, high), int64 unless `dtype` is given."""
    shape, _ = _constructed(size, None, "randint")
    return _randint(_key(generator, "randint"), 0, high, shape, jnp.dtype(dtype or _int64()), "randint")


@drawing("randint.low", "randint.low_generator")
def randint_low(low, high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """Integers in [low, high), int64 unless `dtype` is given."""
    shape, _ = _constructed(size, None, "randint")
    return _randint(_key(generator, "randint"), low, high, shape, jnp.dtype(dtype or _int64()), "randint")


def _high(high):
    """randint_like's bound: an int, or (`.Tensor` overloads) a 0-d tensor holding one."""
    return int(high) if not isinstance(high, int) else high


@drawing("randint_like", "randint_like.Tensor", "randint_like.generator")
def randint_like(self, high, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """Integers in [0, high) in self's shape and dtype (or `dtype`)."""
    x = jnp.asarray(self)
    return _randint(
        _key(generator, "randint_like"), 0, _high(high), x.shape, jnp.dtype(dtype or x.dtype), "randint_like"
    )


@drawing("randint_like.low_dtype", "randint_like.low_generator_dtype")
def randint_like_low(
    self, low, high, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    """Integers in [low, high) in self's shape and dtype (or `dtype`)."""
    x = jnp.asarray(self)
    return _randint(_key(generator, "randint_like"), low, high, x.shape, jnp.dtype(dtype or x.dtype), "randint_like")


@drawing("normal.float_float")
def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """mean + std * N(0, 1) of shape `size`, float32 unless `dtype` is given."""
    shape, dtype = _constructed(size, dtype, "normal")
    if std < 0:
        raise ValueError(f"normal expects std >= 0.0, but found std {std}")
    return mean + std * _standard("normal", _key(generator, "normal"), shape, dtype, "normal")


@drawing("randperm", "randperm.generator")
def randperm(n, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """A random permutation of 0..n-1, int64 unless `dtype` is given."""
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    return jax.random.permutation(_key(generator, "randperm"), n).astype(jnp.dtype(dtype or _int64()))


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker samples of the random ops: each call gets a fixed `jax.random` key.
#
# With its key fixed a sampler is a deterministic function of its float arguments, so its
# rule can be compared with JAX's autodiff and finite differences of that function. The
# in-place samplers do not read self's values (derivative zero, as their formulas state);
# bernoulli's and poisson's samples are piecewise constant in their parameters.
#
# Two estimators are not the derivative of a fixed-key sampler, so their samples name the
# function they are the derivative of (`Sample.reference`), built from the estimator's
# definition: normal's mean/std overloads hold the drawn sample constant (the spec's, and
# torch's, zero gradient: a sample is data, not a function of its parameters), and
# `_standard_gamma`'s implicit reparameterisation holds the sample's quantile u = P(alpha, x)
# constant, x(alpha) solving P(alpha, x) = u by Newton's method (JAX's rejection sampler
# follows another path, so finite differences of the forward cannot judge the formula).
def _key_samples(rng):
    return jax.random.key(int(rng.integers(1 << 30)))


def _keyed(make_args):
    """Samples `make_args(rng) -> [(args, label)]`, each called with generator=<a fixed key>."""

    def fn(op, rng, dtype=np.float64):
        return [Sample(tuple(args), {"generator": _key_samples(rng)}, label) for args, label in make_args(rng)]

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
            key = _key_samples(rng)
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
def _standard_gamma_samples(op, rng, dtype=np.float64):
    alpha = rng.uniform(0.5, 5.0, size=(2, 3))
    key = _key_samples(rng)
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

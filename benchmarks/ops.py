"""The op suite: each case is one ATen op through jaxderiv and the same forward in jax.numpy/lax.

Both sides are jitted `value_and_grad` of a randomly weighted sum of the op's output, so the
figure is the cost of forward plus backward. A third variant, the op's own forward
implementation differentiated by JAX, separates the cost of the rules from that of the forward.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxderiv

SIZES = ("small", "large")


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the ATen op
    family: str
    make: Callable[[str, np.random.Generator], tuple[tuple, tuple]]  # size -> (differentiable arrays, other arrays)
    call: Callable  # (op, *xs, *consts) -> output: how the op is applied
    native: Callable  # (*xs, *consts) -> the same forward in jax.numpy / lax


def _f(rng, *shape, lo=-1.0, hi=1.0):
    return jnp.asarray(rng.uniform(lo, hi, size=shape).astype(np.float32))


def _vec(n_small, n_large):
    return lambda size: n_small if size == "small" else n_large


def elementwise(lo=-1.0, hi=1.0):
    n = _vec((16, 32), (512, 1024))
    return lambda size, rng: ((_f(rng, *n(size), lo=lo, hi=hi),), ())


def two(lo=-1.0, hi=1.0, broadcast=False):
    def make(size, rng):
        shape = (16, 32) if size == "small" else (512, 1024)
        other = shape[-1:] if broadcast else shape
        return (_f(rng, *shape, lo=lo, hi=hi), _f(rng, *other, lo=lo, hi=hi)), ()

    return make


def rows():
    return lambda size, rng: ((_f(rng, *((16, 32) if size == "small" else (256, 1024)), lo=-3, hi=3),), ())


def matrices(batch=False, bias=False):
    def make(size, rng):
        n = 16 if size == "small" else 256
        lead = (8,) if batch else ()
        xs = (_f(rng, *lead, n, n), _f(rng, *lead, n, n))
        return ((_f(rng, n, n),) + xs if bias else xs), ()

    return make


def images(channels_out=None):
    def make(size, rng):
        b, c, h = (2, 4, 8) if size == "small" else (16, 16, 64)
        x = _f(rng, b, c, h, h)
        if channels_out is None:
            return (x,), ()
        return (x, _f(rng, channels_out(c), c, 3, 3, lo=-0.3, hi=0.3), _f(rng, channels_out(c))), ()

    return make


def indexed(kind):
    def make(size, rng):
        n, m = (16, 32) if size == "small" else (512, 1024)
        x = _f(rng, n, m)
        if kind == "gather":
            return (x,), (jnp.asarray(rng.integers(0, m, size=(n, m // 2))),)
        if kind == "select":
            return (x,), (jnp.asarray(rng.integers(0, n, size=(n // 2,))),)
        return (x, _f(rng, n, m // 2)), (jnp.asarray(rng.integers(0, m, size=(n, m // 2))),)

    return make


def spd():
    def make(size, rng):
        n = 8 if size == "small" else 128
        a = rng.normal(size=(n, n))
        return (jnp.asarray((a @ a.T + n * np.eye(n)).astype(np.float32)),), ()

    return make


def tall():
    return lambda size, rng: ((_f(rng, *((8, 6) if size == "small" else (128, 96))),), ())


def classes():
    def make(size, rng):
        n, c = (16, 10) if size == "small" else (1024, 1000)
        return (jax.nn.log_softmax(_f(rng, n, c, lo=-3, hi=3)),), (jnp.asarray(rng.integers(0, c, size=(n,))),)

    return make


def _layer_norm(x, w, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * w + b


def _batch_norm(x, w, b, eps=1e-5):
    mean = jnp.mean(x, axis=(0, 2, 3), keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=(0, 2, 3), keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * w[:, None, None] + b[:, None, None]


def _conv(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[:, None, None]


def _pool(x, op, init):
    return lax.reduce_window(x, init, op, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _size2(x):
    return [2 * x.shape[2], 2 * x.shape[3]]


def _scatter_add(x, src, idx):
    return x.at[jnp.arange(x.shape[0])[:, None], idx].add(src)


def _ln_case():
    def make(size, rng):
        n, d = (16, 32) if size == "small" else (512, 1024)
        return (_f(rng, n, d), _f(rng, d), _f(rng, d)), ()

    return make


def _bn_case():
    def make(size, rng):
        b, c, h = (4, 4, 8) if size == "small" else (16, 32, 32)
        return (_f(rng, b, c, h, h), _f(rng, c), _f(rng, c)), ()

    return make


CASES: tuple[Case, ...] = (
    # elementwise unary
    Case("sin", "unary", elementwise(), lambda f, x: f(x), jnp.sin),
    Case("exp", "unary", elementwise(), lambda f, x: f(x), jnp.exp),
    Case("log", "unary", elementwise(0.1, 2.0), lambda f, x: f(x), jnp.log),
    Case("sqrt", "unary", elementwise(0.1, 2.0), lambda f, x: f(x), jnp.sqrt),
    Case("rsqrt", "unary", elementwise(0.1, 2.0), lambda f, x: f(x), lax.rsqrt),
    Case("tanh", "unary", elementwise(), lambda f, x: f(x), jnp.tanh),
    Case("sigmoid", "unary", elementwise(), lambda f, x: f(x), jax.nn.sigmoid),
    Case("erf", "unary", elementwise(), lambda f, x: f(x), jax.scipy.special.erf),
    Case("abs", "unary", elementwise(), lambda f, x: f(x), jnp.abs),
    Case("relu", "activation", elementwise(), lambda f, x: f(x), jax.nn.relu),
    Case("gelu", "activation", elementwise(), lambda f, x: f(x), lambda x: jax.nn.gelu(x, approximate=False)),
    Case("silu", "activation", elementwise(), lambda f, x: f(x), jax.nn.silu),
    # elementwise binary
    Case("add.Tensor", "binary", two(broadcast=True), lambda f, x, y: f(x, y), jnp.add),
    Case("mul.Tensor", "binary", two(), lambda f, x, y: f(x, y), jnp.multiply),
    Case("div.Tensor", "binary", two(0.5, 2.0), lambda f, x, y: f(x, y), jnp.divide),
    Case("pow.Tensor_Scalar", "binary", elementwise(0.1, 2.0), lambda f, x: f(x, 3.0), lambda x: x**3.0),
    Case("atan2", "binary", two(0.1, 1.0), lambda f, x, y: f(x, y), jnp.arctan2),
    Case("maximum", "binary", two(), lambda f, x, y: f(x, y), jnp.maximum),
    # reductions
    Case("sum.dim_IntList", "reduction", rows(), lambda f, x: f(x, [1]), lambda x: jnp.sum(x, axis=1)),
    Case("mean.dim", "reduction", rows(), lambda f, x: f(x, [1]), lambda x: jnp.mean(x, axis=1)),
    Case("var.dim", "reduction", rows(), lambda f, x: f(x, [1]), lambda x: jnp.var(x, axis=1, ddof=1)),
    Case("amax", "reduction", rows(), lambda f, x: f(x, [1]), lambda x: jnp.max(x, axis=1)),
    Case("logsumexp", "reduction", rows(), lambda f, x: f(x, [1]), lambda x: jax.nn.logsumexp(x, axis=1)),
    Case("cumsum", "scan", rows(), lambda f, x: f(x, 1), lambda x: jnp.cumsum(x, axis=1)),
    Case("sort", "sorting", rows(), lambda f, x: f(x, -1)[0], lambda x: jnp.sort(x, axis=-1)),
    # softmax, losses, normalization
    Case("_softmax", "softmax", rows(), lambda f, x: f(x, 1, False), lambda x: jax.nn.softmax(x, axis=1)),
    Case("_log_softmax", "softmax", rows(), lambda f, x: f(x, 1, False), lambda x: jax.nn.log_softmax(x, axis=1)),
    Case("mse_loss", "loss", two(), lambda f, x, t: f(x, t), lambda x, t: jnp.mean(jnp.square(x - t))),
    Case(
        "nll_loss_forward",
        "loss",
        classes(),
        lambda f, lp, t: f(lp, t, None, 1, -100)[0],
        lambda lp, t: -jnp.mean(jnp.take_along_axis(lp, t[:, None], axis=1)),
    ),
    Case(
        "native_layer_norm",
        "normalization",
        _ln_case(),
        lambda f, x, w, b: f(x, [x.shape[1]], w, b, 1e-5)[0],
        _layer_norm,
    ),
    Case(
        "native_batch_norm",
        "normalization",
        _bn_case(),
        lambda f, x, w, b: f(x, w, b, None, None, True, 0.1, 1e-5)[0],
        _batch_norm,
    ),
    # linear algebra
    Case("mm", "linalg", matrices(), lambda f, a, b: f(a, b), jnp.matmul),
    Case("addmm", "linalg", matrices(bias=True), lambda f, c, a, b: f(c, a, b), lambda c, a, b: c + a @ b),
    Case("bmm", "linalg", matrices(batch=True), lambda f, a, b: f(a, b), jnp.matmul),
    Case("cholesky", "linalg", spd(), lambda f, a: f(a), jnp.linalg.cholesky),
    Case("svd", "linalg", tall(), lambda f, a: f(a)[1], lambda a: jnp.linalg.svd(a, full_matrices=False)[1]),
    # convolution, pooling, upsampling
    Case(
        "mkldnn_convolution",
        "conv",
        images(lambda c: 2 * c),
        lambda f, x, w, b: f(x, w, b, [1, 1], [1, 1], [1, 1], 1),
        _conv,
    ),
    Case(
        "max_pool2d_with_indices",
        "pooling",
        images(),
        lambda f, x: f(x, [2, 2], [2, 2])[0],
        lambda x: _pool(x, lax.max, -jnp.inf),
    ),
    Case("avg_pool2d", "pooling", images(), lambda f, x: f(x, [2, 2], [2, 2]), lambda x: _pool(x, lax.add, 0.0) / 4),
    Case(
        "upsample_nearest2d",
        "upsample",
        images(),
        lambda f, x: f(x, _size2(x)),
        lambda x: jnp.repeat(jnp.repeat(x, 2, axis=2), 2, axis=3),
    ),
    Case(
        "upsample_bilinear2d",
        "upsample",
        images(),
        lambda f, x: f(x, _size2(x), False),
        lambda x: jax.image.resize(x, (*x.shape[:2], 2 * x.shape[2], 2 * x.shape[3]), "bilinear"),
    ),
    # indexing
    Case(
        "gather",
        "indexing",
        indexed("gather"),
        lambda f, x, i: f(x, 1, i),
        lambda x, i: jnp.take_along_axis(x, i, axis=1),
    ),
    Case(
        "index_select", "indexing", indexed("select"), lambda f, x, i: f(x, 0, i), lambda x, i: jnp.take(x, i, axis=0)
    ),
    Case("index.Tensor", "indexing", indexed("select"), lambda f, x, i: f(x, [i]), lambda x, i: x[i]),
    Case("scatter_add_", "indexing", indexed("scatter"), lambda f, x, s, i: f(x, 1, i, s), _scatter_add),
)


def _weighted_sum(fn, weights):
    def loss(xs, consts):
        return jnp.sum(fn(*xs, *consts) * weights)

    return loss


def _bare(op):
    """The op's forward implementation alone: what JAX's autodiff differentiates."""
    return lambda *args, **kwargs: op.impl(*op.bind(args, kwargs).values())


def programs(case: Case, size: str, seed: int = 0):
    """Jitted value_and_grad of (jaxderiv, native, forward implementation under JAX's AD), and args."""
    rng = np.random.default_rng(seed)
    xs, consts = case.make(size, rng)
    out = jax.eval_shape(case.native, *xs, *consts)
    weights = jnp.asarray(rng.normal(size=out.shape).astype(np.float32))
    op = jaxderiv.op(case.name)
    variants = (
        lambda *a: case.call(op, *a),
        case.native,
        lambda *a: case.call(_bare(op), *a),
    )
    return [jax.jit(jax.value_and_grad(_weighted_sum(v, weights))) for v in variants], (xs, consts)


def agreement(compiled, args) -> float:
    """Largest difference between jaxderiv's and the native loss and gradients, relative to their scale.

    The two sides must compute the same thing for their times to be comparable.
    """
    (v0, g0), (v1, g1) = compiled[0](*args), compiled[1](*args)
    worst = 0.0
    for a, b in zip(jax.tree.leaves((v0, g0)), jax.tree.leaves((v1, g1))):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)) / max(1.0, float(np.max(np.abs(b), initial=0.0))))
    return worst


_INSTRUCTION = re.compile(r"=\s+(\S+?\[[^\]]*\])\S*\s+([\w-]+)\(")


def hlo_ops(compiled) -> collections.Counter:
    """The optimized program's instructions as (type, opcode) counts, names left out."""
    return collections.Counter(_INSTRUCTION.findall(compiled.as_text()))

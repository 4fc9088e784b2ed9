"""torch 2.13's own nn entries (linear and linear_backward, prelu kernel, dropout backward, safe and
masked softmax, weight/batch/RMS/layer norm and native_layer_norm_backward, adaptive and max pooling
and max_pool2d_backward, the generic convolutions, nearest-exact and antialiased upsampling)
against torch 2.13.

Each op runs from torch's packaged derivatives.yaml: values, gradients of every input and,
where the entry has them, forward-mode tangents and second derivatives, on edge inputs
(kinks, ties, blank softmax rows, negative dims).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, load_spec

torch = pytest.importorskip("torch")
aten = torch.ops.aten
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def ops():
    return Registry(load_spec(from_torch=True))


def _t(x):
    return torch.from_numpy(np.asarray(x))


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _grads_match(ours, theirs, args, diff, out=0, rtol=1e-10):
    """Values, and the vjp of output `out` with a random cotangent for the `diff` positions of args."""
    y = ours(*args)
    y = y[out] if isinstance(y, tuple) else y
    targs = [_t(a).requires_grad_(i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    ty = theirs(*targs)
    ty = ty[out] if isinstance(ty, (tuple, list)) else ty
    _close(y, ty, rtol)
    ct = RNG.normal(size=np.shape(y))

    def f(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        r = ours(*full)
        return r[out] if isinstance(r, tuple) else r

    got = jax.vjp(f, *[jnp.asarray(args[i]) for i in diff])[1](jnp.asarray(ct))
    want = torch.autograd.grad(ty, [targs[i] for i in diff], _t(ct), allow_unused=True)
    for g, w, i in zip(got, want, diff):
        _close(g, torch.zeros_like(targs[i]) if w is None else w, rtol)  # None: the output does not depend on it


# -- linear -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,bias", [((2, 3), True), ((2, 2, 3), False), ((3,), True), ((0, 3), True)])
def test_linear_values_gradients_and_second_order(ops, shape, bias):
    x, w = RNG.normal(size=shape), RNG.normal(size=(4, 3))
    b = RNG.normal(size=(4,)) if bias else None
    args = (x, w, b)
    _grads_match(ops.op("linear"), aten.linear, args, (0, 1, 2) if bias else (0, 1))
    # second order: the gradient of <vjp_x(ct), v> with respect to the weight
    ct, v = RNG.normal(size=shape[:-1] + (4,)), RNG.normal(size=shape)
    lin = ops.op("linear")
    gg = jax.grad(lambda w: jnp.sum(jax.vjp(lambda x: lin(x, w, b), jnp.asarray(x))[1](jnp.asarray(ct))[0] * v))(
        jnp.asarray(w)
    )
    tx, tw = _t(x).requires_grad_(), _t(w).requires_grad_()
    (first,) = torch.autograd.grad(aten.linear(tx, tw, None if b is None else _t(b)), tx, _t(ct), create_graph=True)
    (want,) = torch.autograd.grad((first * _t(v)).sum(), tw)
    _close(gg, want)


# -- prelu kernel: the kink at 0 takes the negative side's slope -------------------------------------


def test_prelu_kernel_at_its_kink(ops):
    x = np.array([[0.0, -1.0, 2.0], [-0.0, 1.0, -3.0]])
    w = np.array([0.25, 0.5, 2.0])
    _grads_match(ops.op("_prelu_kernel"), aten._prelu_kernel, (x, w), (0, 1))
    tangents = (RNG.normal(size=x.shape), RNG.normal(size=w.shape))
    _, jt = jax.jvp(
        lambda x, w: ops.op("_prelu_kernel")(x, w), (jnp.asarray(x), jnp.asarray(w)), tuple(map(jnp.asarray, tangents))
    )
    _, tt = torch.func.jvp(aten._prelu_kernel, (_t(x), _t(w)), tuple(map(_t, tangents)))
    _close(jt, tt)


@pytest.mark.parametrize("out", [0, 1])
def test_prelu_kernel_backward_and_its_gradients(ops, out):
    g, x, w = RNG.normal(size=(2, 3)), np.array([[0.0, -1.0, 2.0], [1.5, 0.3, -0.7]]), RNG.normal(size=(3,))
    _grads_match(ops.op("_prelu_kernel_backward"), aten._prelu_kernel_backward, (g, x, w), (0, 1, 2), out=out)


# -- dropout backward, safe and masked softmax ------------------------------------------------------


def test_native_dropout_backward(ops):
    g, mask = RNG.normal(size=(3, 4)), RNG.uniform(size=(3, 4)) < 0.6
    _grads_match(
        ops.op("native_dropout_backward"), lambda g, m, s: aten.native_dropout_backward(g, m, s), (g, mask, 2.5), (0,)
    )


@pytest.mark.parametrize("dim", [1, -1, 0])
def test_safe_softmax_blank_rows_give_zeros(ops, dim):
    x = RNG.normal(size=(3, 4))
    x[1] = -np.inf  # a blank row (dim 1)
    x[:, 2] = -np.inf  # a blank column (dim 0)
    op = ops.op("_safe_softmax")
    ours = np.asarray(op(x, dim))
    _close(ours, aten._safe_softmax(_t(x), dim))
    assert np.isfinite(ours).all()
    ct = RNG.normal(size=x.shape)
    g = jax.vjp(lambda x: op(x, dim), jnp.asarray(x))[1](jnp.asarray(ct))[0]
    tx = _t(x).requires_grad_()
    (tg,) = torch.autograd.grad(aten._safe_softmax(tx, dim), tx, _t(ct))
    _close(g, tg)


def test_safe_softmax_tangent_and_integer_input(ops):
    x, t = RNG.normal(size=(2, 5)), RNG.normal(size=(2, 5))
    _, jt = jax.jvp(lambda x: ops.op("_safe_softmax")(x, -1), (jnp.asarray(x),), (jnp.asarray(t),))
    _, tt = torch.func.jvp(lambda x: aten._safe_softmax(x, -1), (_t(x),), (_t(t),))
    _close(jt, tt)
    ints = np.array([[1, 2, 3]])
    _close(ops.op("_safe_softmax")(ints, 1, np.float64), aten._safe_softmax(_t(ints), 1, torch.float64))


@pytest.mark.parametrize("dim", [None, 0, -2])
def test_masked_softmax_matches_torch(ops, dim):
    x = RNG.normal(size=(3, 4))
    mask = RNG.uniform(size=(3, 4)) < 0.4
    mask[0, :] = mask[:, 0] = False  # every row and column keeps an element
    _grads_match(
        lambda x, m: ops.op("_masked_softmax")(x, m, dim), lambda x, m: aten._masked_softmax(x, m, dim), (x, mask), (0,)
    )


def test_masked_softmax_fully_masked_row_is_nan_as_in_torch(ops):
    x, mask = RNG.normal(size=(2, 3)), np.array([[True, False, True], [True, True, True]])
    np.testing.assert_array_equal(
        np.isnan(np.asarray(ops.op("_masked_softmax")(x, mask, 1))),
        torch.isnan(aten._masked_softmax(_t(x), _t(mask), 1)).numpy(),
    )


# -- weight, batch and RMS norm -----------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
def test_weight_norm_interface(ops, dim):
    v = RNG.normal(size=(3, 4))
    g = RNG.uniform(0.5, 1.5, size=(3, 1) if dim == 0 else (1, 4))
    _grads_match(
        lambda v, g: ops.op("_weight_norm_interface")(v, g, dim),
        lambda v, g: aten._weight_norm_interface(v, g, dim),
        (v, g),
        (0, 1),
    )


@pytest.mark.parametrize("update", [True, False])
def test_batch_norm_with_and_without_update(ops, update):
    x, w, b = RNG.normal(size=(4, 3, 2)), RNG.uniform(0.5, 1.5, size=3), RNG.normal(size=3)
    rm, rv = RNG.normal(size=3), RNG.uniform(0.5, 1.5, size=3)
    name = "_batch_norm_with_update" if update else "_batch_norm_no_update"
    theirs = lambda x, w, b, rm, rv: getattr(aten, name)(x, w, b, rm.clone(), rv.clone(), 0.1, 1e-5)  # noqa: E731
    _grads_match(lambda *a: ops.op(name)(*a, 0.1, 1e-5), theirs, (x, w, b, rm, rv), (0, 1, 2))
    for k in (1, 2):  # the saved statistics: the batch's in training, empty otherwise
        _close(ops.op(name)(x, w, b, rm, rv, 0.1, 1e-5)[k], theirs(*map(_t, (x, w, b, rm, rv)))[k])


@pytest.mark.parametrize("normalized,weight,eps", [((3, 4), True, None), ((4,), False, 1e-3), ((4,), True, 0.5)])
def test_fused_rms_norm_values_gradients_and_tangents(ops, normalized, weight, eps):
    x = RNG.normal(size=(2, 3, 4))
    w = RNG.uniform(0.5, 1.5, size=normalized) if weight else None
    diff = (0, 2) if weight else (0,)
    fn = lambda x, n, w: ops.op("_fused_rms_norm")(x, n, w, eps)  # noqa: E731
    tfn = lambda x, n, w: aten._fused_rms_norm(x, list(n), w, eps)  # noqa: E731
    for out in (0, 1):  # the output and rstd, each with its own cotangent
        _grads_match(fn, tfn, (x, normalized, w), diff, out=out)
    tx = RNG.normal(size=x.shape)
    _, jt = jax.jvp(lambda x: fn(x, normalized, w), (jnp.asarray(x),), (jnp.asarray(tx),))
    _, tt = torch.func.jvp(lambda x: tfn(x, normalized, None if w is None else _t(w)), (_t(x),), (_t(tx),))
    for a, b in zip(jt, tt):
        _close(a, b)


def test_fused_rms_norm_second_order(ops):
    x, w, ct, v = (
        RNG.normal(size=(2, 5)),
        RNG.uniform(0.5, 1.5, size=5),
        RNG.normal(size=(2, 5)),
        RNG.normal(size=(2, 5)),
    )
    op = ops.op("_fused_rms_norm")
    gg = jax.grad(lambda x: jnp.sum(jax.vjp(lambda x: op(x, (5,), w, 1e-3)[0], x)[1](jnp.asarray(ct))[0] * v))(
        jnp.asarray(x)
    )
    tx = _t(x).requires_grad_()
    (first,) = torch.autograd.grad(aten._fused_rms_norm(tx, [5], _t(w), 1e-3)[0], tx, _t(ct), create_graph=True)
    (want,) = torch.autograd.grad((first * _t(v)).sum(), tx)
    _close(gg, want, rtol=1e-9)


# -- pooling ---------------------------------------------------------------------------------------------


def test_adaptive_avg_pool3d_and_its_backward(ops):
    x = RNG.normal(size=(1, 2, 4, 5, 3))
    _grads_match(
        lambda x: ops.op("_adaptive_avg_pool3d")(x, (3, 2, 2)),
        lambda x: aten._adaptive_avg_pool3d(x, [3, 2, 2]),
        (x,),
        (0,),
    )
    g = RNG.normal(size=(1, 2, 3, 2, 2))
    _grads_match(
        lambda g, x: ops.op("_adaptive_avg_pool3d_backward")(g, x), aten._adaptive_avg_pool3d_backward, (g, x), (0,)
    )


def test_max_pool2d_ties_and_padding(ops):
    """Tied maxima: torch's gradient goes to the first index of each window."""
    tied = np.kron(np.array([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None]
    _grads_match(
        lambda x: ops.op("max_pool2d")(x, (2, 2), (2, 2)), lambda x: aten.max_pool2d(x, [2, 2], [2, 2]), (tied,), (0,)
    )
    x = RNG.permutation(50).reshape(2, 1, 5, 5) * 0.1
    _grads_match(
        lambda x: ops.op("max_pool2d")(x, (2, 3), (2, 1), (1, 1), (2, 1), True),
        lambda x: aten.max_pool2d(x, [2, 3], [2, 1], [1, 1], [2, 1], True),
        (x,),
        (0,),
    )


# -- convolution ------------------------------------------------------------------------------------


CONV = [  # x shape, w shape, stride, padding, dilation, transposed, output_padding, groups
    ((2, 2, 7), (3, 2, 3), (2,), (1,), (1,), False, (0,), 1),
    ((1, 4, 5, 6), (4, 2, 3, 2), (1, 2), (1, 0), (2, 1), False, (0, 0), 2),
    ((1, 4, 4, 4), (4, 1, 3, 3), (2, 2), (1, 1), (1, 1), True, (1, 0), 2),
]


@pytest.mark.parametrize("case", range(len(CONV)))
@pytest.mark.parametrize("name", ["convolution", "_convolution"])
def test_convolution_values_gradients_and_tangents(ops, name, case):
    xs, ws, s, p, d, tr, op_, g = CONV[case]
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    b = RNG.normal(size=(ws[1] * g if tr else ws[0],))
    extra = (False, False, True, False) if name == "_convolution" else ()
    ours = lambda x, w, b: ops.op(name)(x, w, b, s, p, d, tr, op_, g, *extra)  # noqa: E731
    theirs = lambda x, w, b: getattr(aten, name)(x, w, b, list(s), list(p), list(d), tr, list(op_), g, *extra)  # noqa: E731
    _grads_match(ours, theirs, (x, w, b), (0, 1, 2))
    t = [RNG.normal(size=v.shape) for v in (x, w, b)]
    _, jt = jax.jvp(ours, (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b)), tuple(map(jnp.asarray, t)))
    _, tt = torch.func.jvp(theirs, (_t(x), _t(w), _t(b)), tuple(map(_t, t)))
    _close(jt, tt)


@pytest.mark.parametrize("case", range(len(CONV)))
def test_convolution_backward_and_its_gradients(ops, case):
    xs, ws, s, p, d, tr, op_, g = CONV[case]
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    bias_sizes = [ws[1] * g if tr else ws[0]]
    y = ops.op("convolution")(x, w, None, s, p, d, tr, op_, g)
    go = RNG.normal(size=y.shape)
    ours = lambda go, x, w: ops.op("convolution_backward")(
        go, x, w, bias_sizes, s, p, d, tr, op_, g, (True, True, True)
    )  # noqa: E731
    theirs = lambda go, x, w: aten.convolution_backward(
        go, x, w, bias_sizes, list(s), list(p), list(d), tr, list(op_), g, [True, True, True]
    )  # noqa: E731
    for out in (0, 1, 2):
        _grads_match(ours, theirs, (go, x, w), (0, 1, 2) if out < 2 else (0,), out=out)


def test_slow_conv2d_forward(ops):
    x, w, b = RNG.normal(size=(1, 2, 5, 5)), RNG.normal(size=(3, 2, 2, 3)), RNG.normal(size=(3,))
    _grads_match(
        lambda x, w, b: ops.op("_slow_conv2d_forward")(x, w, (2, 3), b, (2, 1), (1, 0)),
        lambda x, w, b: aten._slow_conv2d_forward(x, w, [2, 3], b, [2, 1], [1, 0]),
        (x, w, b),
        (0, 1, 2),
    )


# -- a wrong formula is caught ------------------------------------------------------------------------


def test_a_wrong_formula_is_caught(tmp_path):
    """torch's own entries pass; a weight slope doubled in _prelu_kernel's result formula, or a
    dropped rstd term in _fused_rms_norm's backward, fails."""
    from jaxderiv.check import check_all
    from jaxderiv.check.mutate import entry_yaml

    spec = load_spec(from_torch=True)
    prelu, rms = spec["_prelu_kernel"], spec["_fused_rms_norm"]
    right, wrong = tmp_path / "right.yaml", tmp_path / "wrong.yaml"
    right.write_text(entry_yaml(prelu) + entry_yaml(rms))
    result = next(f for f in prelu.forward if f.key == "result").text
    backward = next(f for f in rms.backward if f.key == "input, weight").text
    wrong.write_text(
        entry_yaml(prelu, {"result": result.replace("weight_p * self_t", "2 * weight_p * self_t")})
        + entry_yaml(rms, {"input, weight": backward.replace("grads[1], input", "Tensor(), input")})
    )
    assert {
        r.status for r in check_all(str(right), ops=["_prelu_kernel", "_fused_rms_norm"], modes=["vjp", "jvp"]).rows
    } == {"passed"}
    statuses = {
        (r.op, r.mode): r.status
        for r in check_all(str(wrong), ops=["_prelu_kernel", "_fused_rms_norm"], modes=["vjp", "jvp"]).rows
    }
    assert statuses[("_prelu_kernel", "jvp")] == "failed"
    assert statuses[("_fused_rms_norm", "vjp")] == "failed"


# -- the backward ops linear and max_pool2d call, and layer norm's ----------------------------------


def _linear_grads(x, g, w, mask):
    """torch's gradients of linear, kept differentiable: what linear_backward computes."""
    b = torch.zeros(w.shape[0], dtype=w.dtype, requires_grad=True)
    x, w = (t if t.requires_grad else t.detach().requires_grad_() for t in (x, w))
    grads = torch.autograd.grad(aten.linear(x, w, b), (x, w, b), g, create_graph=True)
    return [gr if m else None for gr, m in zip(grads, mask)]


@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 3), (0, 3)])
def test_linear_backward_values_and_its_double_backward(ops, shape):
    x, g, w = RNG.normal(size=shape), RNG.normal(size=shape[:-1] + (4,)), RNG.normal(size=(4, 3))
    op = ops.op("linear_backward")
    for out in (0, 1, 2):  # each output's cotangent, differentiated for every input
        _grads_match(
            lambda x, g, w: op(x, g, w, (True, True, True)),
            lambda x, g, w: _linear_grads(x, g, w, (True,) * 3),
            (x, g, w),
            (0, 1, 2),
            out=out,
        )
    # an output the mask turns off is still computed (JAX has no undefined tensor), with torch's value
    _close(op(x, g, w, (False, True, False))[1], _linear_grads(_t(x), _t(g), _t(w), (True,) * 3)[1])


def test_linear_second_derivative_applies_linear_double_backward(ops):
    """linear's backward formula calls the linear_backward entry: differentiating it runs that
    entry's linear_double_backward, which torch's double backward matches (here through the
    cotangent as well as the input and weight)."""
    x, w, b, ct, v = (RNG.normal(size=s) for s in ((2, 3), (4, 3), (4,), (2, 4), (2, 3)))
    lin = ops.op("linear")

    def first(x, w, ct):
        return jax.vjp(lambda x, w: lin(x, w, jnp.asarray(b)), x, w)[1](ct)

    got = jax.grad(
        lambda x, w, ct: jnp.sum(first(x, w, ct)[0] * v) + jnp.sum(first(x, w, ct)[1] ** 2), argnums=(0, 1, 2)
    )(*map(jnp.asarray, (x, w, ct)))
    tx, tw, tct = (_t(a).requires_grad_() for a in (x, w, ct))
    gx, gw = torch.autograd.grad(aten.linear(tx, tw, _t(b)), (tx, tw), tct, create_graph=True)
    want = torch.autograd.grad((gx * _t(v)).sum() + (gw**2).sum(), (tx, tw, tct))
    for a, e in zip(got, want):
        _close(a, e)


def _pool_backward(g, x, *geometry):
    _, idx = aten.max_pool2d_with_indices(x, *geometry)
    return aten.max_pool2d_with_indices_backward(g, x, *geometry, idx)


@pytest.mark.parametrize("case", ["ties", "padded"])
def test_max_pool2d_backward_values_and_derivatives(ops, case):
    """The first maximum of a window takes the gradient (ties); the gradient for self is zero;
    the one for grad_output raises, as the spec's error_for_max_pool2d_double_backward does."""
    from jaxderiv.errors import NotImplementedDerivative

    if case == "ties":
        x, geometry = (
            np.kron(np.array([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None],
            ((2, 2), (2, 2), (0, 0), (1, 1), False),
        )
    else:
        x, geometry = RNG.permutation(50).reshape(2, 1, 5, 5) * 0.1, ((2, 3), (2, 1), (1, 1), (2, 1), True)
    pool = ops.op("max_pool2d")
    g = RNG.normal(size=pool(x, *geometry).shape)
    op = ops.op("max_pool2d_backward")
    tg = [list(a) if isinstance(a, tuple) else a for a in geometry]
    _close(op(g, x, *geometry), _pool_backward(_t(g), _t(x), *tg))
    gx = jax.grad(lambda x: jnp.sum(op(jnp.asarray(g), x, *geometry) ** 2))(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(gx), 0)  # self: zeros_like(self)
    with pytest.raises(NotImplementedDerivative, match="error_for_max_pool2d_double_backward"):
        jax.grad(lambda g: jnp.sum(op(g, jnp.asarray(x), *geometry) ** 2))(jnp.asarray(g))
    # max_pool2d's second derivative through its cotangent goes through that entry, and raises too
    with pytest.raises(NotImplementedDerivative):
        jax.grad(lambda ct: jnp.sum(jax.vjp(lambda x: pool(x, *geometry), jnp.asarray(x))[1](ct)[0] ** 2))(
            jnp.asarray(g)
        )


LAYER_NORM = [  # input shape, normalized_shape, weight, bias
    ((2, 3, 4), (4,), True, True),
    ((2, 3, 4), (3, 4), False, False),
    ((3, 5), (5,), True, False),
    ((0, 4), (4,), True, True),
]


@pytest.mark.parametrize("case", range(len(LAYER_NORM)))
def test_native_layer_norm_backward_values_and_gradients(ops, case):
    """The gradients of every input but the saved statistics (not_implemented in the spec), as
    torch's layer_norm_double_backward gives them (it differentiates the statistics too)."""
    shape, normalized, weight, bias = LAYER_NORM[case]
    x, g = RNG.normal(size=shape), RNG.normal(size=shape)
    w = RNG.uniform(0.5, 1.5, size=normalized) if weight else None
    b = RNG.normal(size=normalized) if bias else None
    _, mean, rstd = aten.native_layer_norm(_t(x), list(normalized), None, None, 1e-5)
    mask = (True, weight, bias)  # torch's kernel rejects a mask that asks for an absent parameter's gradient
    op = ops.op("native_layer_norm_backward")
    ours = lambda g, x, w: op(g, x, normalized, mean.numpy(), rstd.numpy(), w, b, mask)  # noqa: E731
    theirs = lambda g, x, w: aten.native_layer_norm_backward(
        g, x, list(normalized), mean, rstd, w, None if b is None else _t(b), list(mask)
    )  # noqa: E731
    for out in [k for k, m in enumerate(mask) if m]:
        _grads_match(ours, theirs, (g, x, w), (0, 1, 2) if weight else (0, 1), out=out, rtol=1e-9)


@pytest.mark.parametrize("case", range(3))
def test_native_layer_norm_second_derivative(ops, case):
    """Through native_layer_norm's backward formula, which calls the native_layer_norm_backward
    entry: every input's second-order gradient against torch's."""
    shape, normalized, weight, bias = LAYER_NORM[case]
    x, ct, v = RNG.normal(size=shape), RNG.normal(size=shape), RNG.normal(size=shape)
    w = RNG.uniform(0.5, 1.5, size=normalized) if weight else None
    b = RNG.normal(size=normalized) if bias else None
    op = ops.op("native_layer_norm")
    grad_x = lambda x, w, ct: jax.vjp(lambda x, w: op(x, normalized, w, b, 1e-5)[0], x, w)[1](ct)  # noqa: E731
    argnums = (0, 1, 2) if weight else (0, 2)
    score = lambda x, w, ct: sum(jnp.sum(gr * u) for gr, u in zip(grad_x(x, w, ct), (v, 1.0)) if gr is not None)  # noqa: E731
    got = jax.grad(score, argnums=argnums)(jnp.asarray(x), None if w is None else jnp.asarray(w), jnp.asarray(ct))
    tx, tct = _t(x).requires_grad_(), _t(ct).requires_grad_()
    tw = _t(w).requires_grad_() if weight else None
    leaves = [tx] + ([tw] if weight else [])
    firsts = torch.autograd.grad(
        aten.native_layer_norm(tx, list(normalized), tw, None if b is None else _t(b), 1e-5)[0],
        leaves,
        tct,
        create_graph=True,
    )
    total = (firsts[0] * _t(v)).sum() + (firsts[1].sum() if weight else 0)
    want = torch.autograd.grad(total, leaves + [tct])
    for a, e in zip(got, want):
        _close(a, e, rtol=1e-9, atol=1e-10)


def test_wrong_double_backward_formulas_are_caught(tmp_path):
    """linear's and layer norm's second derivatives run the backward entries' own formulas: the
    right ones pass, a doubled grad_output in linear_double_backward's call or a dropped weight
    cotangent in layer_norm_double_backward fails."""
    from jaxderiv.check import check_all
    from jaxderiv.check.mutate import entry_yaml

    spec = load_spec(from_torch=True)
    names = ["linear", "linear_backward", "native_layer_norm", "native_layer_norm_backward"]
    right, wrong = tmp_path / "right.yaml", tmp_path / "wrong.yaml"
    right.write_text("".join(entry_yaml(spec[n]) for n in names))
    lb, lnb = spec["linear_backward"], spec["native_layer_norm_backward"]
    lb_text = next(f for f in lb.backward if f.key == "self, grad_output, weight").text
    lnb_text = next(f for f in lnb.backward if f.key == "input, weight, grad_out").text
    wrong.write_text(
        entry_yaml(spec["linear"])
        + entry_yaml(lb, {"self, grad_output, weight": lb_text.replace("self, grad_output", "self, 2 * grad_output")})
        + entry_yaml(spec["native_layer_norm"])
        + entry_yaml(lnb, {"input, weight, grad_out": lnb_text.replace("grads[1]", "Tensor()")})
    )
    ops = ["linear", "native_layer_norm"]
    assert {r.status for r in check_all(str(right), ops=ops, modes=["vjp_vjp"]).rows} == {"passed"}
    statuses = {r.op: r.status for r in check_all(str(wrong), ops=ops, modes=["vjp_vjp"]).rows}
    assert statuses == {"linear": "failed", "native_layer_norm": "failed"}


# -- nearest-exact upsampling ----------------------------------------------------------------------------

NEAREST_EXACT = [  # input shape, output_size, scales
    ((2, 2, 5), (8,), (None,)),
    ((2, 2, 6), (4,), (None,)),  # downsampling: every 1.5th pixel centre
    ((1, 2, 4, 5), (7, 9), (None, None)),
    ((1, 2, 4, 5), (8, 7), (2.0, 1.5)),  # explicit scales set the source positions
    ((1, 1, 3, 3, 4), (5, 4, 6), (None, None, None)),
    ((1, 1, 3, 3, 4), (1, 2, 2), (None, None, None)),
]


@pytest.mark.parametrize("case", range(len(NEAREST_EXACT)))
def test_upsample_nearest_exact_and_its_backward(ops, case):
    shape, size, scales = NEAREST_EXACT[case]
    n = len(size)
    x = RNG.normal(size=shape)
    name = f"_upsample_nearest_exact{n}d"
    _grads_match(
        lambda x: ops.op(name)(x, size, *scales), lambda x: getattr(aten, name)(x, list(size), *scales), (x,), (0,)
    )
    g = RNG.normal(size=shape[:2] + size)
    _grads_match(
        lambda g: ops.op(name + "_backward")(g, size, shape, *scales),
        lambda g: getattr(aten, name + "_backward")(g, list(size), list(shape), *scales),
        (g,),
        (0,),
    )


def test_upsample_nearest_exact_integer_input(ops):
    x = RNG.integers(0, 255, size=(1, 1, 3, 5)).astype(np.uint8)
    ours = np.asarray(ops.op("_upsample_nearest_exact2d")(x, (5, 3)))
    theirs = aten._upsample_nearest_exact2d(_t(x), [5, 3]).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


# -- antialiased bilinear, bicubic and Lanczos ----------------------------------------------------------------------

ANTIALIASED = [  # input shape, output_size, align_corners, scales
    ((1, 2, 4, 5), (7, 9), False, (None, None)),
    ((1, 2, 9, 11), (4, 5), False, (None, None)),  # downsampling: the filter averages several inputs
    ((2, 1, 9, 11), (4, 5), True, (None, None)),
    ((1, 1, 10, 7), (3, 7), False, (0.3, None)),  # a given scale, and an unchanged dim
    ((1, 1, 5, 6), (1, 1), False, (None, None)),  # one output: the mean-like average of the plane
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("case", range(len(ANTIALIASED)))
def test_antialiased_upsample_and_its_backward(ops, mode, case):
    shape, size, corners, scales = ANTIALIASED[case]
    name = f"_upsample_{mode}2d_aa"
    x, g = RNG.normal(size=shape), RNG.normal(size=shape[:2] + size)
    _grads_match(
        lambda x: ops.op(name)(x, size, corners, *scales),
        lambda x: getattr(aten, name)(x, list(size), corners, *scales),
        (x,),
        (0,),
    )
    _grads_match(
        lambda g: ops.op(name + "_backward")(g, size, shape, corners, *scales),
        lambda g: getattr(aten, name + "_backward")(g, list(size), list(shape), corners, *scales),
        (g,),
        (0,),
    )
    t = RNG.normal(size=shape)
    _, jt = jax.jvp(lambda x: ops.op(name)(x, size, corners, *scales), (jnp.asarray(x),), (jnp.asarray(t),))
    _, tt = torch.func.jvp(lambda x: getattr(aten, name)(x, list(size), corners, *scales), (_t(x),), (_t(t),))
    _close(jt, tt)


def test_antialiased_upsample_float32(ops):
    x = RNG.normal(size=(1, 2, 9, 7)).astype(np.float32)
    ours = ops.op("_upsample_bicubic2d_aa")(x, (4, 3), False)
    assert ours.dtype == jnp.float32
    _close(ours, aten._upsample_bicubic2d_aa(_t(x), [4, 3], False), rtol=1e-5, atol=1e-6)

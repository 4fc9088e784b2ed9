"""Convolutions against PyTorch 2.13: values and gradients through the spec's formulas, the
double backward through `_convolution_double_backward`, im2col/col2im, jit and vmap.

Gradients come from jaxderiv's ops (YAML backward formulas), torch's from torch.autograd.
torch's own entries (the spec torch 2.13 ships) for convolution, _convolution,
convolution_backward and _slow_conv2d_forward: values, gradients and tangents, transposed and
grouped included.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, assert_vjp_matches, to_torch  # noqa: E402

aten = torch.ops.aten

# (dims, groups, stride, padding, dilation, transposed, output_padding)
CONVS = [
    (1, 1, 1, 0, 1, False, 0),
    (2, 2, 2, 1, 2, False, 0),
    (2, 4, 1, 1, 1, False, 0),  # depthwise: one input channel per group
    (3, 1, 2, 1, 1, False, 0),
    (2, 1, 2, 1, 1, True, 1),
    (2, 2, 3, 0, 2, True, 2),
]


def _inputs(rng, n, groups, transposed):
    cin, cout = 4, 4
    x = rng.normal(size=(2, cin) + (5,) * n)
    w = rng.normal(size=((cin, cout // groups) if transposed else (cout, cin // groups)) + (3,) * n)
    return x, w, rng.normal(size=cout)


def _vjp(name, args, diff, ct):
    """jaxderiv's vjp of op `name` with respect to args[i] for i in diff."""
    op = jaxderiv.op(name)

    def f(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return op(*full)

    y, pullback = jax.vjp(f, *[args[i] for i in diff])
    return y, pullback(jnp.asarray(ct))


@pytest.mark.parametrize("conv", CONVS, ids=str)
def test_convolution_overrideable_matches_torch(conv):
    n, groups, s, p, d, transposed, op = conv
    rng = np.random.default_rng(0)
    x, w, b = _inputs(rng, n, groups, transposed)
    params = ([s] * n, [p] * n, [d] * n, transposed, [op] * n, groups)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = aten.convolution(tx, tw, tb, *params)
    ct = rng.normal(size=ty.shape)
    grads = torch.autograd.grad(ty, (tx, tw, tb), torch.tensor(ct))
    y, ours = _vjp("convolution_overrideable", (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), *params), (0, 1, 2), ct)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, t in zip(ours, grads):
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-10, atol=1e-10)


def test_double_backward_matches_torch():
    """The gradient of <grad_input, v> + <grad_weight, u> with respect to (grad_output, input, weight)."""
    rng = np.random.default_rng(1)
    x, w, _ = _inputs(rng, 2, 2, False)
    params = ([2, 2], [1, 1], [2, 2], False, [0, 0], 2)
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ty = aten.convolution(tx, tw, None, *params)
    go = rng.normal(size=ty.shape)
    tgo = torch.tensor(go, requires_grad=True)
    gx, gw = torch.autograd.grad(ty, (tx, tw), tgo, create_graph=True)
    v, u = rng.normal(size=x.shape), rng.normal(size=w.shape)
    expected = torch.autograd.grad((gx * torch.tensor(v)).sum() + (gw * torch.tensor(u)).sum(), (tgo, tx, tw))
    op = jaxderiv.op("convolution_backward_overrideable")

    def h(go, x, w):
        gi, gw, _ = op(go, x, w, *params, (True, True, True))
        return jnp.sum(gi * v) + jnp.sum(gw * u)

    ours = jax.grad(h, argnums=(0, 1, 2))(jnp.asarray(go), jnp.asarray(x), jnp.asarray(w))
    for a, t in zip(ours, expected):
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "name",
    [
        "mkldnn_convolution",
        "miopen_convolution",
        "thnn_conv2d_forward",
        "slow_conv_dilated2d",
        "_nnpack_spatial_convolution",
    ],
)
def test_backends_are_the_same_convolution(name):
    rng = np.random.default_rng(2)
    x, w, b = _inputs(rng, 2, 1, False)
    args = {
        "mkldnn_convolution": (b, (1, 1), (2, 2), (1, 1), 1),
        "miopen_convolution": (b, (1, 1), (2, 2), (1, 1), 1, False, False),
        "thnn_conv2d_forward": ((3, 3), b, (2, 2), (1, 1)),
        "slow_conv_dilated2d": ((3, 3), b, (2, 2), (1, 1), (1, 1)),
        "_nnpack_spatial_convolution": (b, (1, 1), (2, 2)),
    }[name]
    out = jaxderiv.op(name)(
        jnp.asarray(x), jnp.asarray(w), *[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    )
    out = out[0] if isinstance(out, tuple) else out
    expected = aten.convolution(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), [2, 2], [1, 1], [1, 1], False, [0, 0], 1
    )
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-10, atol=1e-10)


def test_conv_tbc_and_its_gradients_match_torch():
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(6, 2, 3)), rng.normal(size=(3, 3, 4)), rng.normal(size=4)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = aten.conv_tbc(tx, tw, tb, 1)
    ct = rng.normal(size=ty.shape)
    grads = torch.autograd.grad(ty, (tx, tw, tb), torch.tensor(ct))
    y, ours = _vjp("conv_tbc", (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), 1), (0, 1, 2), ct)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10)
    for a, t in zip(ours, grads):
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-10, atol=1e-10)


def test_im2col_col2im_match_torch():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 6, 7))
    args = ([2, 3], [1, 2], [1, 0], [2, 1])
    cols = aten.im2col(torch.tensor(x), *args)
    np.testing.assert_array_equal(jaxderiv.op("im2col")(jnp.asarray(x), *args), cols.numpy())
    c = rng.normal(size=cols.shape)
    np.testing.assert_allclose(
        jaxderiv.op("col2im")(jnp.asarray(c), [6, 7], *args),
        aten.col2im(torch.tensor(c), [6, 7], *args).numpy(),
        rtol=1e-12,
    )


def test_jit_and_vmap_of_a_convolution():
    rng = np.random.default_rng(5)
    x, w, b = _inputs(rng, 2, 1, False)
    op = jaxderiv.op("convolution_overrideable")
    params = ((1, 1), (1, 1), (1, 1), False, (0, 0), 1)
    loss = lambda x, w: jnp.sum(op(x, w, jnp.asarray(b), *params) ** 2)
    g = jax.jit(jax.grad(loss, argnums=1))(jnp.asarray(x), jnp.asarray(w))
    batched = jax.vmap(jax.grad(loss, argnums=1), in_axes=(0, None))(jnp.asarray(x)[:, None], jnp.asarray(w))
    np.testing.assert_allclose(jnp.sum(batched, 0), g, rtol=1e-10)


def test_im2col_of_a_zero_size_batch_is_torchs_empty_columns():
    """OpInfo's 0-size batch: reshape's -1 raised ZeroDivisionError before."""
    x = np.zeros((0, 3, 6, 6))
    args = ([2, 2], [1, 1], [0, 0], [1, 1])
    ours = jaxderiv.op("im2col")(jnp.asarray(x), *args)
    assert ours.shape == tuple(aten.im2col(torch.tensor(x), *args).shape) == (0, 12, 25)
    assert jax.grad(lambda x: jnp.sum(jaxderiv.op("im2col")(x, *args)))(jnp.asarray(x)).shape == x.shape


def test_transposed_convolution_with_output_padding_past_the_stride_matches_torch():
    """Found by the OpInfo replay (nn.functional.conv_transpose2d): an output_padding of at least
    the stride (ATen allows it while it is below the dilation) makes the adjoint convolution of
    grad_output one position longer than the input; the input gradient is cut to the input's size."""
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(2, 2, 4, 4)), rng.normal(size=(2, 2, 4, 5)), rng.normal(size=4)
    params = ([3, 2], [1, 2], [4, 4], True, [2, 3], 2)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = aten.convolution(tx, tw, tb, *params)
    ct = rng.normal(size=ty.shape)
    grads = torch.autograd.grad(ty, (tx, tw, tb), torch.tensor(ct))
    y, ours = _vjp("convolution_overrideable", (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), *params), (0, 1, 2), ct)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, t in zip(ours, grads):
        assert a.shape == t.shape
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-10, atol=1e-10)


# -- torch's own entries -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


RNG = np.random.default_rng(0)


CONV = [  # x shape, w shape, stride, padding, dilation, transposed, output_padding, groups
    ((2, 2, 7), (3, 2, 3), (2,), (1,), (1,), False, (0,), 1),
    ((1, 4, 5, 6), (4, 2, 3, 2), (1, 2), (1, 0), (2, 1), False, (0, 0), 2),
    ((1, 4, 4, 4), (4, 1, 3, 3), (2, 2), (1, 1), (1, 1), True, (1, 0), 2),
]


@pytest.mark.parametrize("case", range(len(CONV)))
@pytest.mark.parametrize("name", ["convolution", "_convolution"])
def test_convolution_values_gradients_and_tangents(torch_registry, name, case):
    xs, ws, s, p, d, tr, op_, g = CONV[case]
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    b = RNG.normal(size=(ws[1] * g if tr else ws[0],))
    extra = (False, False, True, False) if name == "_convolution" else ()
    ours = lambda x, w, b: torch_registry.op(name)(x, w, b, s, p, d, tr, op_, g, *extra)  # noqa: E731
    theirs = lambda x, w, b: getattr(aten, name)(x, w, b, list(s), list(p), list(d), tr, list(op_), g, *extra)  # noqa: E731
    assert_vjp_matches(RNG, ours, theirs, (x, w, b), (0, 1, 2))
    t = [RNG.normal(size=v.shape) for v in (x, w, b)]
    _, jt = jax.jvp(ours, (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b)), tuple(map(jnp.asarray, t)))
    _, tt = torch.func.jvp(theirs, (to_torch(x), to_torch(w), to_torch(b)), tuple(map(to_torch, t)))
    assert_same(jt, tt)


@pytest.mark.parametrize("case", range(len(CONV)))
def test_convolution_backward_and_its_gradients(torch_registry, case):
    xs, ws, s, p, d, tr, op_, g = CONV[case]
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    bias_sizes = [ws[1] * g if tr else ws[0]]
    y = torch_registry.op("convolution")(x, w, None, s, p, d, tr, op_, g)
    go = RNG.normal(size=y.shape)
    ours = lambda go, x, w: torch_registry.op("convolution_backward")(
        go, x, w, bias_sizes, s, p, d, tr, op_, g, (True, True, True)
    )  # noqa: E731
    theirs = lambda go, x, w: aten.convolution_backward(
        go, x, w, bias_sizes, list(s), list(p), list(d), tr, list(op_), g, [True, True, True]
    )  # noqa: E731
    for out in (0, 1, 2):
        assert_vjp_matches(RNG, ours, theirs, (go, x, w), (0, 1, 2) if out < 2 else (0,), out=out)


def test_slow_conv2d_forward(torch_registry):
    x, w, b = RNG.normal(size=(1, 2, 5, 5)), RNG.normal(size=(3, 2, 2, 3)), RNG.normal(size=(3,))
    assert_vjp_matches(
        RNG,
        lambda x, w, b: torch_registry.op("_slow_conv2d_forward")(x, w, (2, 3), b, (2, 1), (1, 0)),
        lambda x, w, b: aten._slow_conv2d_forward(x, w, [2, 3], b, [2, 1], [1, 0]),
        (x, w, b),
        (0, 1, 2),
    )

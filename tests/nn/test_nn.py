"""Softmax, glu, dropout and embedding against PyTorch 2.13, and a small classifier end to end.

torch 2.13's `_softmax_backward_data` takes an input dtype where the 1.7 spec takes `self`;
the tests differentiate the ops as models use them, through their formulas.

torch's own entries (the spec torch 2.13 ships) for linear and linear_backward, the prelu
kernel, dropout backward, safe and masked softmax and _embedding_bag_backward: values,
gradients of every input and, where the entry has them, tangents and second derivatives (the
backward entries' own double backward formulas), on kinks, ties and blank softmax rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import load_spec

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, assert_vjp_matches, to_torch  # noqa: E402

aten = torch.ops.aten
RNG = np.random.default_rng(0)


def _grad_pair(ours_fn, torch_fn, x, ct):
    g = jax.vjp(ours_fn, jnp.asarray(x))[1](jnp.asarray(ct))[0]
    tx = torch.from_numpy(x).requires_grad_()
    (tg,) = torch.autograd.grad(torch_fn(tx), tx, torch.from_numpy(ct))
    return np.asarray(g), tg.numpy()


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_value_gradient_and_double_backward(name, dim):
    x, ct, v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    op, top = jaxderiv.op(name), getattr(aten, name).default
    np.testing.assert_allclose(np.asarray(op(x, dim, False)), top(torch.from_numpy(x), dim, False).numpy(), rtol=1e-12)
    g, tg = _grad_pair(lambda x: op(x, dim, False), lambda x: top(x, dim, False), x, ct)
    np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-12)
    gg = jax.grad(lambda x: jnp.sum(jax.vjp(lambda x: op(x, dim, False), x)[1](jnp.asarray(ct))[0] * v))(jnp.asarray(x))
    tx = torch.from_numpy(x).requires_grad_()
    (first,) = torch.autograd.grad(top(tx, dim, False), tx, torch.from_numpy(ct), create_graph=True)
    (tgg,) = torch.autograd.grad((first * torch.from_numpy(v)).sum(), tx)
    np.testing.assert_allclose(np.asarray(gg), tgg.numpy(), rtol=1e-9, atol=1e-12)


def test_softmax_jit_and_vmap():
    x = RNG.normal(size=(5, 3, 4))
    op = jaxderiv.op("_softmax")
    g = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(op(x, 1, False) ** 2))))(x)
    tx = torch.from_numpy(x).requires_grad_()
    (tg,) = torch.autograd.grad((aten._softmax.default(tx, 2, False) ** 2).sum(), tx)
    np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dim", [0, -1])
def test_glu_matches_torch(dim):
    x, ct = RNG.normal(size=(4, 6)), RNG.normal(size=(2, 6) if dim == 0 else (4, 3))
    g, tg = _grad_pair(lambda x: jaxderiv.op("glu")(x, dim), lambda x: aten.glu.default(x, dim), x, ct)
    np.testing.assert_allclose(g, tg, rtol=1e-10)


@pytest.mark.parametrize("padding_idx,scale", [(-1, False), (2, False), (-1, True), (2, True)])
def test_embedding_gradient_matches_torch(padding_idx, scale):
    """padding_idx rows get no gradient; scale_grad_by_freq divides by each index's count."""
    w, idx = RNG.normal(size=(5, 3)), np.array([[0, 2, 2], [4, 2, 0]])
    ct = RNG.normal(size=(2, 3, 3))
    op = jaxderiv.op("embedding")
    g, tg = _grad_pair(
        lambda w: op(w, idx, padding_idx, scale, False),
        lambda w: aten.embedding.default(w, torch.from_numpy(idx), padding_idx, scale, False),
        w,
        ct,
    )
    np.testing.assert_allclose(g, tg, rtol=1e-12)


def test_embedding_jit_and_vmap():
    w, idx = RNG.normal(size=(5, 3)), np.array([[0, 2], [4, 2]])
    op = jaxderiv.op("embedding")
    g = jax.jit(jax.vmap(jax.grad(lambda w, i: jnp.sum(op(w, i) ** 2)), in_axes=(None, 0)))(w, idx)
    for k in range(2):
        tw = torch.from_numpy(w).requires_grad_()
        (tg,) = torch.autograd.grad((aten.embedding.default(tw, torch.from_numpy(idx[k])) ** 2).sum(), tw)
        np.testing.assert_allclose(np.asarray(g[k]), tg.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_matches_torch(mode):
    w, idx, offsets = RNG.normal(size=(6, 3)), np.array([0, 2, 4, 2, 1, 3, 5]), np.array([0, 2, 2, 5])
    psw = RNG.uniform(0.5, 1.5, size=7) if mode == 0 else None
    ours = jaxderiv.op("_embedding_bag")(w, idx, offsets, False, mode, False, psw, False)
    theirs = aten._embedding_bag.default(
        torch.from_numpy(w),
        torch.from_numpy(idx),
        torch.from_numpy(offsets),
        False,
        mode,
        False,
        None if psw is None else torch.from_numpy(psw),
        False,
    )
    np.testing.assert_allclose(np.asarray(ours[0]), theirs[0].numpy(), rtol=1e-12)
    if mode:  # ATen's CPU kernel fills bag_size for mean and max only
        np.testing.assert_array_equal(np.asarray(ours[2]), theirs[2].numpy())
    ct = RNG.normal(size=ours[0].shape)
    g = jax.vjp(
        lambda w: jaxderiv.op("_embedding_bag")(w, idx, offsets, False, mode, False, psw, False)[0], jnp.asarray(w)
    )[1](jnp.asarray(ct))[0]
    tw = torch.from_numpy(w).requires_grad_()
    out = aten._embedding_bag.default(
        tw,
        torch.from_numpy(idx),
        torch.from_numpy(offsets),
        False,
        mode,
        False,
        None if psw is None else torch.from_numpy(psw),
        False,
    )[0]
    (tg,) = torch.autograd.grad(out, tw, torch.from_numpy(ct))
    np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-12)


def test_fused_dropout_same_key_same_mask_and_gradient_uses_it():
    x = RNG.normal(size=(50,))
    op = jaxderiv.op("_fused_dropout")
    key = jax.random.key(3)
    out1, mask1 = op(x, 0.6, key)
    out2, mask2 = op(x, 0.6, key)
    np.testing.assert_array_equal(np.asarray(mask1), np.asarray(mask2))
    assert 0 < int(mask1.sum()) < 50
    np.testing.assert_allclose(np.asarray(out1), x * np.asarray(mask1) / 0.6)
    g = jax.grad(lambda x: jnp.sum(op(x, 0.6, key)[0]))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), np.asarray(mask1) / 0.6)


def test_small_classifier_end_to_end_matches_torch():
    """addmm -> native_batch_norm (training) -> relu -> addmm -> _log_softmax -> nll_loss_forward."""
    x, y = RNG.normal(size=(8, 5)), RNG.integers(0, 3, size=8)
    params = [
        RNG.normal(size=(5, 4)),
        RNG.normal(size=(4,)),
        RNG.uniform(0.5, 1.5, 4),
        RNG.normal(size=4),
        RNG.normal(size=(4, 3)),
        RNG.normal(size=(3,)),
    ]

    def model(ops, x, w1, b1, gamma, beta, w2, b2, y):
        h = ops["addmm"](b1, x, w1)
        h = ops["native_batch_norm"](h, gamma, beta, None, None, True, 0.1, 1e-5)[0]
        h = ops["addmm"](b2, ops["relu"](h), w2)
        return ops["nll_loss_forward"](ops["_log_softmax"](h, 1, False), y, None, 1, -100)[0]

    names = ["addmm", "native_batch_norm", "relu", "nll_loss_forward", "_log_softmax"]
    ours_ops = {n: jaxderiv.op(n) for n in names}
    torch_ops = {n: getattr(aten, n).default for n in names}
    loss, grads = jax.value_and_grad(lambda *p: model(ours_ops, jnp.asarray(x), *p, y), argnums=tuple(range(6)))(
        *[jnp.asarray(p) for p in params]
    )
    tparams = [torch.from_numpy(p).requires_grad_() for p in params]
    tloss = model(torch_ops, torch.from_numpy(x), *tparams, torch.from_numpy(y))
    tgrads = torch.autograd.grad(tloss, tparams)
    np.testing.assert_allclose(float(loss), float(tloss), rtol=1e-12)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["_softmax_backward_data", "_log_softmax_backward_data"])
def test_softmax_backward_data_checked_through_output_of_self(tmp_path, name):
    """The 1.7 entries key the derivative through `output` to `self`; the checker's reference
    ties output = softmax(self). The shipped formulas pass; a scaled `self` formula fails."""
    from jaxderiv.check import check_all
    from jaxderiv.check.mutate import entry_yaml
    from jaxderiv.spec import load_spec, shipped_spec_files

    entry = load_spec(shipped_spec_files()[0])[name]
    self_formula = next(f for f in entry.backward if f.key == "self")
    # One entry holds no release fingerprint: the copies are given 1.7, whose meaning of
    # softmax_double_backward they need.
    right, wrong = tmp_path / "right.yaml", tmp_path / "wrong.yaml"
    right.write_text(entry_yaml(entry))
    wrong.write_text(entry_yaml(entry, {"self": f"2 * {self_formula.text}"}))
    rows = check_all(load_spec(right, torch_version="1.7"), ops=[name], modes=["vjp", "jvp", "vjp_vjp"]).rows
    assert [(r.mode, r.status) for r in rows] == [("vjp", "passed"), ("jvp", "passed"), ("vjp_vjp", "not_applicable")]
    assert [
        r.status for r in check_all(load_spec(wrong, torch_version="1.7"), ops=[name], modes=["vjp", "jvp"]).rows
    ] == ["failed", "failed"]


def test_softmax_double_backward_meaning_follows_the_spec_version(monkeypatch):
    """From PyTorch 1.11, `_softmax_backward_data`'s formula for `output` calls
    softmax_double_backward meaning the derivative through `output` itself; torch 2.13's file
    checks with that meaning, and 1.7's meaning (through `self`) fails there."""
    from jaxderiv import load_spec, namespace
    from jaxderiv.check import check_all

    spec = load_spec(from_torch=True)
    statuses = lambda: [
        r.status for r in check_all(spec, ops=["_softmax_backward_data"], modes=["vjp", "vjp_vjp"]).rows
    ]  # noqa: E731
    assert statuses() == ["passed", "passed"]
    helper = namespace.HELPERS["softmax_double_backward"]
    monkeypatch.setattr(helper, "variants", [v for v in helper.variants if v.since is None])
    assert statuses() == ["failed", "failed"]


# -- torch's own entries -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


# -- linear and linear_backward ----------------------------------------------------------------------


@pytest.mark.parametrize("shape,bias", [((2, 3), True), ((2, 2, 3), False), ((3,), True), ((0, 3), True)])
def test_linear_values_gradients_and_second_order(torch_registry, shape, bias):
    x, w = RNG.normal(size=shape), RNG.normal(size=(4, 3))
    b = RNG.normal(size=(4,)) if bias else None
    args = (x, w, b)
    assert_vjp_matches(RNG, torch_registry.op("linear"), aten.linear, args, (0, 1, 2) if bias else (0, 1))
    # second order: the gradient of <vjp_x(ct), v> with respect to the weight
    ct, v = RNG.normal(size=shape[:-1] + (4,)), RNG.normal(size=shape)
    lin = torch_registry.op("linear")
    gg = jax.grad(lambda w: jnp.sum(jax.vjp(lambda x: lin(x, w, b), jnp.asarray(x))[1](jnp.asarray(ct))[0] * v))(
        jnp.asarray(w)
    )
    tx, tw = to_torch(x).requires_grad_(), to_torch(w).requires_grad_()
    (first,) = torch.autograd.grad(
        aten.linear(tx, tw, None if b is None else to_torch(b)), tx, to_torch(ct), create_graph=True
    )
    (want,) = torch.autograd.grad((first * to_torch(v)).sum(), tw)
    assert_same(gg, want)


def _linear_grads(x, g, w, mask):
    """torch's gradients of linear, kept differentiable: what linear_backward computes."""
    b = torch.zeros(w.shape[0], dtype=w.dtype, requires_grad=True)
    x, w = (t if t.requires_grad else t.detach().requires_grad_() for t in (x, w))
    grads = torch.autograd.grad(aten.linear(x, w, b), (x, w, b), g, create_graph=True)
    return [gr if m else None for gr, m in zip(grads, mask)]


@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 3), (0, 3)])
def test_linear_backward_values_and_its_double_backward(torch_registry, shape):
    x, g, w = RNG.normal(size=shape), RNG.normal(size=shape[:-1] + (4,)), RNG.normal(size=(4, 3))
    op = torch_registry.op("linear_backward")
    for out in (0, 1, 2):  # each output's cotangent, differentiated for every input
        assert_vjp_matches(
            RNG,
            lambda x, g, w: op(x, g, w, (True, True, True)),
            lambda x, g, w: _linear_grads(x, g, w, (True,) * 3),
            (x, g, w),
            (0, 1, 2),
            out=out,
        )
    # an output the mask turns off is still computed (JAX has no undefined tensor), with torch's value
    assert_same(
        op(x, g, w, (False, True, False))[1], _linear_grads(to_torch(x), to_torch(g), to_torch(w), (True,) * 3)[1]
    )


def test_linear_second_derivative_applies_linear_double_backward(torch_registry):
    """linear's backward formula calls the linear_backward entry: differentiating it runs that
    entry's linear_double_backward, which torch's double backward matches (here through the
    cotangent as well as the input and weight)."""
    x, w, b, ct, v = (RNG.normal(size=s) for s in ((2, 3), (4, 3), (4,), (2, 4), (2, 3)))
    lin = torch_registry.op("linear")

    def first(x, w, ct):
        return jax.vjp(lambda x, w: lin(x, w, jnp.asarray(b)), x, w)[1](ct)

    got = jax.grad(
        lambda x, w, ct: jnp.sum(first(x, w, ct)[0] * v) + jnp.sum(first(x, w, ct)[1] ** 2), argnums=(0, 1, 2)
    )(*map(jnp.asarray, (x, w, ct)))
    tx, tw, tct = (to_torch(a).requires_grad_() for a in (x, w, ct))
    gx, gw = torch.autograd.grad(aten.linear(tx, tw, to_torch(b)), (tx, tw), tct, create_graph=True)
    want = torch.autograd.grad((gx * to_torch(v)).sum() + (gw**2).sum(), (tx, tw, tct))
    for a, e in zip(got, want):
        assert_same(a, e)


# -- prelu kernel: the kink at 0 takes the negative side's slope -------------------------------------


def test_prelu_kernel_at_its_kink(torch_registry):
    x = np.array([[0.0, -1.0, 2.0], [-0.0, 1.0, -3.0]])
    w = np.array([0.25, 0.5, 2.0])
    assert_vjp_matches(RNG, torch_registry.op("_prelu_kernel"), aten._prelu_kernel, (x, w), (0, 1))
    tangents = (RNG.normal(size=x.shape), RNG.normal(size=w.shape))
    _, jt = jax.jvp(
        lambda x, w: torch_registry.op("_prelu_kernel")(x, w),
        (jnp.asarray(x), jnp.asarray(w)),
        tuple(map(jnp.asarray, tangents)),
    )
    _, tt = torch.func.jvp(aten._prelu_kernel, (to_torch(x), to_torch(w)), tuple(map(to_torch, tangents)))
    assert_same(jt, tt)


@pytest.mark.parametrize("out", [0, 1])
def test_prelu_kernel_backward_and_its_gradients(torch_registry, out):
    g, x, w = RNG.normal(size=(2, 3)), np.array([[0.0, -1.0, 2.0], [1.5, 0.3, -0.7]]), RNG.normal(size=(3,))
    assert_vjp_matches(
        RNG, torch_registry.op("_prelu_kernel_backward"), aten._prelu_kernel_backward, (g, x, w), (0, 1, 2), out=out
    )


# -- dropout backward, safe and masked softmax -------------------------------------------------------


def test_native_dropout_backward(torch_registry):
    g, mask = RNG.normal(size=(3, 4)), RNG.uniform(size=(3, 4)) < 0.6
    assert_vjp_matches(
        RNG,
        torch_registry.op("native_dropout_backward"),
        lambda g, m, s: aten.native_dropout_backward(g, m, s),
        (g, mask, 2.5),
        (0,),
    )


@pytest.mark.parametrize(("p", "train"), [(0.0, True), (0.4, False), (1.0, True), (0.0, None), (1.0, None)])
def test_native_dropout_where_aten_determines_the_mask(torch_registry, p, train):
    x = RNG.normal(size=(3, 4))
    x[0, 0] = np.inf  # p = 1: inf * 0 is NaN in ATen's input * mask * 0 too
    out, mask = torch_registry.op("native_dropout")(x, p, train)
    t_out, t_mask = aten.native_dropout(torch.from_numpy(x), p, train)
    assert_same(out, t_out)
    assert_same(mask, t_mask)
    x[0, 0] = 1.0
    assert_vjp_matches(
        RNG, torch_registry.op("native_dropout"), lambda x, p, t: aten.native_dropout(x, p, t)[0], (x, p, train), (0,)
    )


def test_native_dropout_zero_size_and_refusals(torch_registry):
    op = torch_registry.op("native_dropout")
    out, mask = op(np.zeros((0, 3), np.float32), 0.5, True)
    t_out, t_mask = aten.native_dropout(torch.zeros(0, 3), 0.5, True)
    assert out.shape == tuple(t_out.shape) and mask.dtype == jnp.float32 and t_mask.dtype == torch.float32
    with pytest.raises(ValueError, match=r"native_dropout\(p=0.3, train=True\) draws a random mask"):
        op(RNG.normal(size=(3,)), 0.3, True)


@pytest.mark.parametrize("train", [True, None])
def test_native_dropout_with_a_drawn_mask_has_torchs_scales(torch_registry, train):
    """Training at 0 < p < 1 through its variant (the mask from a key). Its formula
    scales the gradient by 1 / (1 - p) when train is True but by 1 when train is None, while
    the forward scales by 1 / (1 - p) in both: torch 2.13 does the same."""
    from jaxderiv.forward import variants

    p, x, ct = 0.3, RNG.normal(size=(400,)) + 3, RNG.normal(size=(400,))
    variant = variants()["native_dropout"]
    out, vjp = jax.vjp(lambda x: variant.run(torch_registry, x, p, train, key=jax.random.key(5))[0], jnp.asarray(x))
    (g,) = vjp(jnp.asarray(ct))
    mask = np.asarray(out) != 0
    assert 200 < mask.sum() < 360
    tx = torch.from_numpy(x).requires_grad_()
    t_out, t_mask = aten.native_dropout(tx, p, train)
    (tg,) = torch.autograd.grad(t_out, tx, torch.from_numpy(ct))
    grad_scale = 1 / (1 - p) if train else 1.0
    np.testing.assert_allclose(np.asarray(out), np.where(mask, x / (1 - p), 0), rtol=1e-14)
    np.testing.assert_allclose(t_out.detach().numpy(), np.where(t_mask.numpy(), x / (1 - p), 0), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(g), np.where(mask, ct * grad_scale, 0), rtol=1e-14)
    np.testing.assert_allclose(tg.numpy(), np.where(t_mask.numpy(), ct * grad_scale, 0), rtol=1e-14)


@pytest.mark.parametrize("dim", [1, -1, 0])
def test_safe_softmax_blank_rows_give_zeros(torch_registry, dim):
    x = RNG.normal(size=(3, 4))
    x[1] = -np.inf  # a blank row (dim 1)
    x[:, 2] = -np.inf  # a blank column (dim 0)
    op = torch_registry.op("_safe_softmax")
    ours = np.asarray(op(x, dim))
    assert_same(ours, aten._safe_softmax(to_torch(x), dim))
    assert np.isfinite(ours).all()
    ct = RNG.normal(size=x.shape)
    g = jax.vjp(lambda x: op(x, dim), jnp.asarray(x))[1](jnp.asarray(ct))[0]
    tx = to_torch(x).requires_grad_()
    (tg,) = torch.autograd.grad(aten._safe_softmax(tx, dim), tx, to_torch(ct))
    assert_same(g, tg)


def test_safe_softmax_tangent_and_integer_input(torch_registry):
    x, t = RNG.normal(size=(2, 5)), RNG.normal(size=(2, 5))
    _, jt = jax.jvp(lambda x: torch_registry.op("_safe_softmax")(x, -1), (jnp.asarray(x),), (jnp.asarray(t),))
    _, tt = torch.func.jvp(lambda x: aten._safe_softmax(x, -1), (to_torch(x),), (to_torch(t),))
    assert_same(jt, tt)
    ints = np.array([[1, 2, 3]])
    assert_same(
        torch_registry.op("_safe_softmax")(ints, 1, np.float64), aten._safe_softmax(to_torch(ints), 1, torch.float64)
    )


@pytest.mark.parametrize("dim", [None, 0, -2])
def test_masked_softmax_matches_torch(torch_registry, dim):
    x = RNG.normal(size=(3, 4))
    mask = RNG.uniform(size=(3, 4)) < 0.4
    mask[0, :] = mask[:, 0] = False  # every row and column keeps an element
    assert_vjp_matches(
        RNG,
        lambda x, m: torch_registry.op("_masked_softmax")(x, m, dim),
        lambda x, m: aten._masked_softmax(x, m, dim),
        (x, mask),
        (0,),
    )


def test_masked_softmax_fully_masked_row_is_nan_as_in_torch(torch_registry):
    x, mask = RNG.normal(size=(2, 3)), np.array([[True, False, True], [True, True, True]])
    np.testing.assert_array_equal(
        np.isnan(np.asarray(torch_registry.op("_masked_softmax")(x, mask, 1))),
        torch.isnan(aten._masked_softmax(to_torch(x), to_torch(mask), 1)).numpy(),
    )


# -- _embedding_bag_backward -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("scale, padding_idx", [(False, -1), (True, -1), (False, 2), (True, 4)])
def test_embedding_bag_backward(torch_registry, mode, scale, padding_idx):
    """Bags with an empty one and repeated indices; the bag layout is torch's forward's."""
    w = to_torch(RNG.normal(size=(5, 3)))
    idx, offsets = torch.tensor([0, 2, 4, 2, 1, 3]), torch.tensor([0, 2, 2, 5])
    psw = to_torch(RNG.uniform(0.5, 1.5, size=6)) if mode == 0 else None
    _, offset2bag, bag_size, max_indices = aten._embedding_bag(
        w, idx, offsets, scale, mode, False, psw, False, padding_idx
    )
    g = to_torch(RNG.normal(size=(4, 3)))
    args = (g, idx, offsets, offset2bag, bag_size, max_indices, 5, scale, mode, False, psw, padding_idx)
    ours = torch_registry.op("_embedding_bag_backward")(
        *[a.numpy() if isinstance(a, torch.Tensor) else a for a in args]
    )
    if not scale or mode == 2:  # max mode has no frequency scaling
        assert_same(ours, aten._embedding_bag_backward(*args))
        return
    # torch 2.13's CPU kernel divides the k-th distinct index's row by the count of the k-th
    # sorted index (with repeats), not by its own count: scaled here from its unscaled result.
    unscaled = aten._embedding_bag_backward(*args[:7], False, *args[8:]).numpy()
    counts = np.maximum(np.bincount(idx.numpy(), minlength=5), 1)[:, None]
    assert_same(ours, unscaled / counts)
    assert not np.allclose(aten._embedding_bag_backward(*args).numpy(), unscaled / counts)


# -- a wrong formula is caught -----------------------------------------------------------------------


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


# ==================================================================================================
# torch's own _embedding_bag_dense_backward (torch_registry above: the spec torch 2.13 ships). The
# op database and tests/check/test_parity.py compare the family with torch, but not this entry
# (its record's not_compared: the checker's samples are schema defaults, float indices); torch's
# formula for it is not_implemented. This test adds its values against torch in mode mean, from
# torch's own entry.
# ==================================================================================================


def test_embedding_bag_dense_backward_mean_values(torch_registry):
    op = torch_registry.op("_embedding_bag_dense_backward")
    assert op.formulas["vjp"] != "none"  # built from torch's file, every formula translated
    grad = np.random.default_rng(3).normal(size=(2, 3))
    indices, offset2bag, bag_size = np.array([0, 2, 1, 3, 2]), np.array([0, 0, 1, 1, 1]), np.array([2, 3])
    args = (grad, indices, offset2bag, bag_size, np.zeros(2, np.int64), 5, False, 1, None, -1)
    ours = op(*args)
    theirs = aten._embedding_bag_dense_backward(*[to_torch(a) if isinstance(a, np.ndarray) else a for a in args])
    assert_same(ours, theirs, rtol=1e-12)

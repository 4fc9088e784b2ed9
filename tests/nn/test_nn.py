"""Softmax, glu, dropout and embedding against PyTorch 2.13, and a small classifier end to end.

torch 2.13's `_softmax_backward_data` takes an input dtype where the 1.7 spec takes `self`;
the tests differentiate the ops as models use them, through their formulas.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
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
    rows = check_all(load_spec(right, torch_version="1.7"), ops=[name]).rows
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
    monkeypatch.setitem(namespace.REVISIONS, "softmax_double_backward", [])
    assert statuses() == ["failed", "failed"]

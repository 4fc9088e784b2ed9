"""The CTC losses against torch 2.13: losses, log_alpha and gradients.

Padded and concatenated targets, variable lengths, a repeated label, a blank other than 0,
zero_infinity with an impossible alignment (ATen's NaN gradients without it, zeros with it),
float64. `_cudnn_ctc_loss` and `miopen_ctc_loss` need CUDA / ROCm in torch; they are compared
with the CPU loss of the log_softmax of their input, which is what cuDNN and MIOpen compute.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.errors import NotImplementedDerivative

torch = pytest.importorskip("torch")
aten = torch.ops.aten
T, N, C = 7, 4, 5
PADDED = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 0, 0], [2, 0, 0, 0]])
INPUT_LENGTHS = (7, 5, 2, 6)  # sequence 2 (labels 3, 3) needs 3 steps: impossible
TARGET_LENGTHS = (4, 2, 2, 0)  # sequence 3 has an empty target
CONCATENATED = np.concatenate([row[:n] for row, n in zip(PADDED, TARGET_LENGTHS)])


def _log_probs(seed=0, normalized=True):
    x = np.random.default_rng(seed).normal(size=(T, N, C))
    return x - np.log(np.exp(x).sum(2, keepdims=True)) if normalized else x


def _valid(log_alpha, il=INPUT_LENGTHS, tl=TARGET_LENGTHS):
    """log_alpha where ATen writes it (the rest of its tensor is uninitialized)."""
    return [np.asarray(log_alpha)[b, : il[b], : 2 * tl[b] + 1] for b in range(len(il))]


def _ours(lp, targets, blank=0, zero_infinity=False, il=INPUT_LENGTHS, tl=TARGET_LENGTHS):
    op = jaxderiv.op("_ctc_loss")
    return jax.vjp(lambda x: op(x, jnp.asarray(targets), il, tl, blank, zero_infinity), jnp.asarray(lp))


def _torch(lp, targets, ct, blank=0, zero_infinity=False, il=INPUT_LENGTHS, tl=TARGET_LENGTHS):
    x = torch.from_numpy(lp).requires_grad_()
    nll, log_alpha = aten._ctc_loss(x, torch.from_numpy(targets), list(il), list(tl), blank, zero_infinity)
    (g,) = torch.autograd.grad(nll, x, torch.from_numpy(ct))
    return nll.detach().numpy(), log_alpha.detach().numpy(), g.numpy()


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("targets", [PADDED, CONCATENATED], ids=["padded", "concatenated"])
def test_ctc_loss_as_torch(targets, zero_infinity):
    lp = _log_probs()
    ct = np.random.default_rng(1).normal(size=N)
    (nll, log_alpha), vjp = _ours(lp, targets, zero_infinity=zero_infinity)
    t_nll, t_alpha, t_grad = _torch(lp, targets, ct, zero_infinity=zero_infinity)
    np.testing.assert_allclose(np.asarray(nll), t_nll, rtol=1e-12)
    assert np.isinf(t_nll[2]) and np.asarray(log_alpha).shape == t_alpha.shape
    for ours, theirs in zip(_valid(log_alpha), _valid(t_alpha)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    (grad,) = vjp((jnp.asarray(ct), jnp.zeros_like(log_alpha)))
    # without zero_infinity ATen's gradient of the impossible sequence is NaN inside it
    np.testing.assert_allclose(np.asarray(grad), t_grad, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert np.isnan(t_grad[:2, 2]).all() != zero_infinity


def test_ctc_loss_blank_last_and_unnormalized_input():
    """ATen's formula does not assume normalized log_probs: exp(lp) - posterior for any input."""
    lp = _log_probs(2, normalized=False)
    targets = np.where(PADDED == 4, 0, PADDED)
    il, tl = (7, 7, 6, 6), (4, 2, 2, 0)
    ct = np.random.default_rng(3).normal(size=N)
    (nll, _), vjp = _ours(lp, targets, blank=4, il=il, tl=tl)
    t_nll, _, t_grad = _torch(lp, targets, ct, blank=4, il=il, tl=tl)
    np.testing.assert_allclose(np.asarray(nll), t_nll, rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(vjp((jnp.asarray(ct), jnp.zeros((N, T, 9))))[0]), t_grad, rtol=1e-10, atol=1e-12
    )


def test_ctc_loss_functional_under_jit():
    """torch.nn.functional.ctc_loss (mean over target lengths and batch) from logits, through jit."""
    logits = _log_probs(4, normalized=False)
    op = jaxderiv.op("_ctc_loss")
    lengths = jnp.asarray(TARGET_LENGTHS, jnp.float64)

    def loss(x):
        nll, _ = op(jax.nn.log_softmax(x, axis=2), jnp.asarray(CONCATENATED), INPUT_LENGTHS, TARGET_LENGTHS, 0, True)
        nll = jnp.where(jnp.isinf(nll), 0.0, nll)
        return jnp.mean(nll / jnp.maximum(lengths, 1.0))

    value, grad = jax.jit(jax.value_and_grad(loss))(jnp.asarray(logits))
    x = torch.from_numpy(logits).requires_grad_()
    expected = torch.nn.functional.ctc_loss(
        x.log_softmax(2),
        torch.from_numpy(CONCATENATED),
        list(INPUT_LENGTHS),
        list(TARGET_LENGTHS),
        reduction="mean",
        zero_infinity=True,
    )
    expected.backward()
    np.testing.assert_allclose(float(value), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(grad), x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_ctc_loss_jvp_is_torch_jacobian():
    """Forward mode (the transposed backward formula): each loss's tangent is <torch's gradient, v>."""
    lp, il, tl = _log_probs(5), (7, 5, 4, 6), TARGET_LENGTHS
    v = np.random.default_rng(6).normal(size=lp.shape)
    op = jaxderiv.op("_ctc_loss")
    _, (tangent, _) = jax.jvp(lambda x: op(x, jnp.asarray(PADDED), il, tl), (jnp.asarray(lp),), (jnp.asarray(v),))
    rows = [_torch(lp, PADDED, np.eye(N)[b], il=il, tl=tl)[2] for b in range(N)]
    np.testing.assert_allclose(np.asarray(tangent), [np.sum(r * v) for r in rows], rtol=1e-10)


def test_ctc_loss_backward_op_as_torch():
    lp = _log_probs(7)
    grad = np.random.default_rng(8).normal(size=N)
    nll, log_alpha = aten._ctc_loss(
        torch.from_numpy(lp), torch.from_numpy(PADDED), list(INPUT_LENGTHS), list(TARGET_LENGTHS), 0, True
    )
    expected = aten._ctc_loss_backward(
        torch.from_numpy(grad),
        torch.from_numpy(lp),
        torch.from_numpy(PADDED),
        list(INPUT_LENGTHS),
        list(TARGET_LENGTHS),
        nll,
        log_alpha,
        0,
        True,
    )
    ours_nll, ours_alpha = jaxderiv.op("_ctc_loss")(
        jnp.asarray(lp), jnp.asarray(PADDED), INPUT_LENGTHS, TARGET_LENGTHS, 0, True
    )
    from jaxderiv.forward import implementation

    got = implementation("_ctc_loss_backward")(
        jnp.asarray(grad),
        jnp.asarray(lp),
        jnp.asarray(PADDED),
        INPUT_LENGTHS,
        TARGET_LENGTHS,
        ours_nll,
        ours_alpha,
        0,
        True,
    )
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_second_derivative_is_not_given():
    """Neither the spec nor PyTorch differentiates _ctc_loss_backward."""
    lp = _log_probs(9)
    op = jaxderiv.op("_ctc_loss")
    loss = lambda x: jnp.sum(op(x, jnp.asarray(PADDED), (7, 5, 4, 6), TARGET_LENGTHS)[0])
    with pytest.raises(NotImplementedDerivative, match="_ctc_loss_backward"):
        jax.hessian(loss)(jnp.asarray(lp))
    x = torch.from_numpy(lp).requires_grad_()
    (g,) = torch.autograd.grad(
        aten._ctc_loss(x, torch.from_numpy(PADDED), [7, 5, 4, 6], list(TARGET_LENGTHS))[0].sum(), x, create_graph=True
    )
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.autograd.grad(g.sum(), x)


def test_ctc_loss_bad_arguments():
    op = jaxderiv.op("_ctc_loss")
    with pytest.raises(ValueError, match="blank"):
        op(jnp.asarray(_log_probs()), jnp.asarray(PADDED), INPUT_LENGTHS, TARGET_LENGTHS, C)
    with pytest.raises(ValueError, match="3-dimensional"):
        op(jnp.asarray(_log_probs()[:, 0]), jnp.asarray(PADDED[0]), (7,), (4,))


@pytest.mark.parametrize("name", ["_cudnn_ctc_loss", "miopen_ctc_loss"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_library_ctc_loss_as_torch_cpu_loss(name, zero_infinity):
    """cuDNN and MIOpen normalize their input: costs and raw gradient are the CPU loss of
    log_softmax(x) and its gradient in x; the formula (`_cudnn_ctc_loss_backward`,
    `_miopen_ctc_loss_backward`) scales the raw gradient, zeroing zero losses under zero_infinity."""
    x = _log_probs(10, normalized=False)
    il = (7, 7, 7, 7)
    ct = np.random.default_rng(11).normal(size=N)
    op = jaxderiv.op(name)
    (costs, raw_grad), vjp = jax.vjp(
        lambda x: op(x, jnp.asarray(CONCATENATED), il, TARGET_LENGTHS, 0, True, zero_infinity), jnp.asarray(x)
    )
    xt = torch.from_numpy(x).requires_grad_()
    nll, _ = aten._ctc_loss(
        xt.log_softmax(2), torch.from_numpy(CONCATENATED), list(il), list(TARGET_LENGTHS), 0, zero_infinity
    )
    (per_ct,) = torch.autograd.grad(nll, xt, torch.from_numpy(ct), retain_graph=True)
    np.testing.assert_allclose(np.asarray(costs), nll.detach().numpy(), rtol=1e-12)
    rows = np.stack([torch.autograd.grad(nll[b], xt, retain_graph=True)[0][:, b].numpy() for b in range(N)], axis=1)
    np.testing.assert_allclose(np.asarray(raw_grad), rows, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(vjp((jnp.asarray(ct), jnp.zeros_like(raw_grad)))[0]), per_ct.numpy(), rtol=1e-10, atol=1e-12
    )
    with pytest.raises(ValueError, match="blank must be label 0"):
        op(jnp.asarray(x), jnp.asarray(CONCATENATED), il, TARGET_LENGTHS, 1, True, zero_infinity)


def test_cudnn_zero_infinity_zeroes_zero_losses():
    """FunctionsManual's _cudnn_ctc_loss_backward: under zero_infinity, sequences whose loss is 0."""
    from jaxderiv.namespace import HELPERS

    fn = HELPERS["_cudnn_ctc_loss_backward"]
    raw = np.random.default_rng(12).normal(size=(T, 2, C))
    grad, loss = np.array([2.0, 3.0]), np.array([0.0, 1.5])
    np.testing.assert_array_equal(np.asarray(fn(jnp.asarray(grad), jnp.asarray(loss), jnp.asarray(raw), True))[:, 0], 0)
    np.testing.assert_allclose(
        np.asarray(fn(jnp.asarray(grad), jnp.asarray(loss), jnp.asarray(raw), False)), raw * grad[None, :, None]
    )


def test_ctc_loss_tensor_lengths_as_torch():
    """Newer specs' `_ctc_loss.Tensor`: the lengths as int64 tensors, concrete (they fix the masks)."""
    lp, ct = _log_probs(13), np.random.default_rng(14).normal(size=N)
    il, tl = np.array(INPUT_LENGTHS), np.array(TARGET_LENGTHS)
    spec = jaxderiv.load_spec(from_torch=True)
    op = jaxderiv.Registry(spec).op("_ctc_loss.Tensor")
    (nll, log_alpha), vjp = jax.vjp(
        lambda x: op(x, jnp.asarray(PADDED), jnp.asarray(il), jnp.asarray(tl), 0, True), jnp.asarray(lp)
    )
    x = torch.from_numpy(lp).requires_grad_()
    t_nll, _ = aten._ctc_loss.Tensor(x, torch.from_numpy(PADDED), torch.from_numpy(il), torch.from_numpy(tl), 0, True)
    (t_grad,) = torch.autograd.grad(t_nll, x, torch.from_numpy(ct))
    np.testing.assert_allclose(np.asarray(nll), t_nll.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(vjp((jnp.asarray(ct), jnp.zeros_like(log_alpha)))[0]), t_grad.numpy(), rtol=1e-10, atol=1e-12
    )


def test_ctc_loss_gradient_under_vmap():
    """vmap of the gradient over a stack of inputs equals the gradients one by one, each torch's."""
    stack = np.stack([_log_probs(15), _log_probs(16)])
    op = jaxderiv.op("_ctc_loss")
    il = (7, 5, 4, 6)

    def loss(x):
        return jnp.sum(op(x, jnp.asarray(PADDED), il, TARGET_LENGTHS)[0])

    got = jax.vmap(jax.grad(loss))(jnp.asarray(stack))
    for k in range(2):
        np.testing.assert_allclose(
            np.asarray(got[k]), _torch(stack[k], PADDED, np.ones(N), il=il)[2], rtol=1e-10, atol=1e-12
        )


@pytest.mark.parametrize("target_lengths", [(3, 2), (0, 0), (1, 4)])
def test_log_alpha_has_torchs_shape_whatever_the_targets_padding(target_lengths):
    """ATen's log_alpha is (N, T, 2 max(target_lengths) + 1), not sized by the padded width;
    its entries outside the lattice are uninitialized in ATen, so the lattice alone is compared."""
    rng = np.random.default_rng(5)
    lp = torch.tensor(rng.normal(size=(6, 2, 4))).log_softmax(-1)
    targets = np.array([[1, 2, 3, 1, 3, 2], [3, 1, 2, 1, 2, 3]])
    nll, alpha = jaxderiv.op("_ctc_loss")(
        jnp.asarray(lp.numpy()), jnp.asarray(targets), [6, 5], target_lengths, 0, False
    )
    t_nll, t_alpha = torch.ops.aten._ctc_loss(lp, torch.tensor(targets), [6, 5], list(target_lengths), 0, False)
    assert alpha.shape == tuple(t_alpha.shape) == (2, 6, 2 * max(target_lengths) + 1)
    np.testing.assert_allclose(nll, t_nll.numpy(), rtol=1e-12)
    for b, (il, tl) in enumerate(zip((6, 5), target_lengths)):
        np.testing.assert_allclose(alpha[b, :il, : 2 * tl + 1], t_alpha[b, :il, : 2 * tl + 1].numpy(), rtol=1e-12)

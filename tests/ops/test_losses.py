"""The losses against PyTorch 2.13: forward values and gradients in every reduction, kinks included.

jaxderiv follows the 1.7 spec's signatures; torch 2.13 is called with the same arguments
(reduction as ATen's int). The inputs include the kinks (ties for l1, |x - y| = beta for
smooth_l1, hinges of the margin losses), which the checker avoids.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.check import opdb
from jaxderiv.check.samples import samples_for
from jaxderiv.check.mutate import entry_yaml
from jaxderiv.spec import torch_spec_file

torch = pytest.importorskip("torch")
from jaxderiv.check import parity as P  # noqa: E402
from torch_oracle import assert_jvp_is_torchs_jacobian, to_numpy  # noqa: E402

aten = torch.ops.aten
RNG = np.random.default_rng(0)


def _t(a):
    return torch.from_numpy(np.asarray(a)) if a is not None else None


def _pair(kink=None):
    x = RNG.normal(size=(3, 4))
    t = RNG.normal(size=(3, 4))
    if kink is not None:
        t[0, :2] = x[0, :2] - kink  # x - t exactly at the kinks
        t[1, 0] = x[1, 0]
    return x, t


# (name, args, positions of differentiable args, torch function on torch tensors)
CASES = []
for r in (0, 1, 2):
    CASES += [
        (f"mse_loss-r{r}", "mse_loss", (*_pair(), r), (0, 1), aten.mse_loss.default),
        (f"l1_loss-r{r}", "l1_loss", (*_pair(0.0), r), (0, 1), aten.l1_loss.default),
        (f"smooth_l1_loss-r{r}", "smooth_l1_loss", (*_pair(0.5), r, 0.5), (0, 1), aten.smooth_l1_loss.default),
        (
            f"soft_margin_loss-r{r}",
            "soft_margin_loss",
            (RNG.normal(size=(3, 4)), np.sign(RNG.normal(size=(3, 4))), r),
            (0,),
            aten.soft_margin_loss.default,
        ),
        (
            f"kl_div-r{r}",
            "kl_div",
            (RNG.normal(size=(3, 4)), RNG.uniform(0.1, 1, size=(3, 4)), r),
            (0, 1),
            aten.kl_div.default,
        ),
        (
            f"bce-r{r}",
            "binary_cross_entropy",
            (RNG.uniform(0.1, 0.9, (3, 4)), RNG.uniform(0, 1, (3, 4)), RNG.uniform(0.5, 1.5, (3, 4)), r),
            (0,),
            aten.binary_cross_entropy.default,
        ),
        (
            f"bce_logits-r{r}",
            "binary_cross_entropy_with_logits",
            (
                RNG.normal(size=(3, 4)),
                RNG.uniform(0, 1, (3, 4)),
                RNG.uniform(0.5, 1.5, (3, 4)),
                RNG.uniform(0.5, 2, (4,)),
                r,
            ),
            (0, 1),
            aten.binary_cross_entropy_with_logits.default,
        ),
        (
            f"nll_loss-r{r}",
            "nll_loss_forward",
            (RNG.normal(size=(5, 3)), np.array([0, 2, 1, 1, 2]), RNG.uniform(0.5, 1.5, 3), r, 1),
            (0,),
            aten.nll_loss_forward.default,
        ),
        (
            f"nll_loss2d-r{r}",
            "nll_loss2d_forward",
            (RNG.normal(size=(2, 3, 2, 2)), RNG.integers(0, 3, (2, 2, 2)), None, r, -100),
            (0,),
            aten.nll_loss2d_forward.default,
        ),
        (
            f"multi_margin-r{r}",
            "multi_margin_loss",
            (np.array([[0.5, -0.5, 0.2], [1.0, 0.0, 2.0]]), np.array([0, 2]), 2, 1.0, np.array([1.0, 2.0, 0.5]), r),
            (0,),
            aten.multi_margin_loss.default,
        ),
        (
            f"multilabel_margin-r{r}",
            "multilabel_margin_loss_forward",
            (np.array([[0.1, 0.2, 0.4, 0.8], [0.5, -0.5, 1.5, 0.0]]), np.array([[3, 0, -1, 1], [1, 2, 3, -1]]), r),
            (0,),
            aten.multilabel_margin_loss_forward.default,
        ),
    ]
CASES.append(
    (
        "nll_loss-1d",
        "nll_loss_forward",
        (RNG.normal(size=(3,)), np.array(2), None, 1, -100),
        (0,),
        aten.nll_loss_forward.default,
    )
)


def _first(y):
    return y[0] if isinstance(y, (tuple, list)) else y


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_loss_and_gradients_match_torch(case):
    _, name, args, diff, torch_fn = case
    op = jaxderiv.op(name)
    ours = _first(op(*args))
    targs = [_t(a) if isinstance(a, np.ndarray) else a for a in args]
    for i in diff:
        targs[i] = targs[i].clone().requires_grad_()
    theirs = _first(torch_fn(*targs))
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    ct = RNG.normal(size=np.shape(ours))

    def f(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return _first(op(*full))

    grads = jax.vjp(f, *[jnp.asarray(args[i]) for i in diff])[1](jnp.asarray(ct))
    tgrads = torch.autograd.grad(theirs, [targs[i] for i in diff], _t(ct))
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-9, atol=1e-12)
    tangents = [RNG.normal(size=np.shape(args[i])) for i in diff]
    _, jv = jax.jvp(f, tuple(jnp.asarray(args[i]) for i in diff), tuple(jnp.asarray(t) for t in tangents))
    expected = sum(float(np.sum(tg.numpy() * t)) for tg, t in zip(tgrads, tangents))
    np.testing.assert_allclose(float(np.sum(np.asarray(jv) * ct)), expected, rtol=1e-9, atol=1e-12)


BACKWARD_CASES = [
    ("mse_loss_backward", (RNG.normal(size=()), *_pair(), 1), (0, 1, 2)),
    ("smooth_l1_loss_backward", (RNG.normal(size=()), *_pair(), 2, 0.7), (0, 1, 2)),
    (
        "soft_margin_loss_backward",
        (RNG.normal(size=()), RNG.normal(size=(3, 4)), np.sign(RNG.normal(size=(3, 4))), 1),
        (0, 1),
    ),
    (
        "binary_cross_entropy_backward",
        (RNG.normal(size=()), RNG.uniform(0.1, 0.9, (3, 4)), RNG.uniform(0, 1, (3, 4)), None, 1),
        (0, 1),
    ),
]


@pytest.mark.parametrize("name,args,diff", BACKWARD_CASES, ids=[c[0] for c in BACKWARD_CASES])
def test_backward_ops_and_their_gradients_match_torch(name, args, diff):
    """The *_backward entries' own formulas (double backward) against torch's."""
    op, torch_fn = jaxderiv.op(name), getattr(aten, name).default
    targs = [_t(a) if isinstance(a, np.ndarray) else a for a in args]
    for i in diff:
        targs[i] = targs[i].clone().requires_grad_()
    theirs = torch_fn(*targs)
    np.testing.assert_allclose(np.asarray(op(*args)), theirs.detach().numpy(), rtol=1e-10)
    ct = RNG.normal(size=theirs.shape)

    def f(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return op(*full)

    grads = jax.vjp(f, *[jnp.asarray(args[i]) for i in diff])[1](jnp.asarray(ct))
    tgrads = torch.autograd.grad(theirs, [targs[i] for i in diff], _t(ct), allow_unused=True)
    for g, tg, i in zip(grads, tgrads, diff):
        np.testing.assert_allclose(
            np.asarray(g), np.zeros(np.shape(args[i])) if tg is None else tg.numpy(), rtol=1e-9, atol=1e-12
        )


def test_nll_loss_jit_and_vmap():
    x, t = RNG.normal(size=(4, 5, 3)), RNG.integers(0, 3, (4, 5))
    op = jaxderiv.op("nll_loss_forward")
    loss = lambda x, t: op(x, t, None, 1, -100)[0]  # noqa: E731
    g = jax.jit(jax.vmap(jax.grad(loss)))(x, t)
    for i in range(4):
        tx = torch.from_numpy(x[i]).requires_grad_()
        (tg,) = torch.autograd.grad(aten.nll_loss_forward.default(tx, torch.from_numpy(t[i]), None, 1, -100)[0], tx)
        np.testing.assert_allclose(np.asarray(g[i]), tg.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_total_weight_matches_torch(reduction, weighted):
    """Both outputs, ignore_index included: total_weight is the summed weight of the counted
    targets in every reduction (ATen computes it for none too)."""
    x, t = RNG.normal(size=(6, 4)), np.array([0, 3, 1, 3, 2, 1])
    w = RNG.uniform(0.5, 1.5, 4) if weighted else None
    ours = jaxderiv.op("nll_loss_forward")(x, t, w, reduction, 3)
    theirs = aten.nll_loss_forward.default(_t(x), _t(t), _t(w), reduction, 3)
    for o, th in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), th.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_kl_div_log_target_matches_torch(reduction):
    """log_target=True: the target is given as log-probabilities; gradients for both inputs."""
    x, t = RNG.normal(size=(3, 4)), np.log(RNG.uniform(0.1, 1, size=(3, 4)))
    op = jaxderiv.op("kl_div")
    ours = op(x, t, reduction, log_target=True)
    tx, tt = _t(x).requires_grad_(), _t(t).requires_grad_()
    theirs = aten.kl_div.default(tx, tt, reduction, log_target=True)
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-12)
    ct = RNG.normal(size=np.shape(ours))
    grads = jax.vjp(lambda a, b: op(a, b, reduction, log_target=True), jnp.asarray(x), jnp.asarray(t))[1](
        jnp.asarray(ct)
    )
    for g, tg in zip(grads, torch.autograd.grad(theirs, [tx, tt], _t(ct))):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-10, atol=1e-12)


# -- 0-d inputs (OpInfo samples): one sample of one class, as ATen reads them ------------------------

ZERO_D_MARGIN = [("multi_margin_loss", 0, p, r) for p in (1, 2) for r in (0, 1, 2)] + [
    ("multilabel_margin_loss_forward", t, None, r) for t in (0, -1) for r in (0, 1, 2)
]


@pytest.mark.parametrize("name,target,p,reduction", ZERO_D_MARGIN)
def test_margin_losses_of_0d_inputs_match_torch(name, target, p, reduction):
    args = (jnp.asarray(target), p, 1.0, None, reduction) if p else (jnp.asarray(target), reduction)
    targs = (torch.tensor(target), p, 1.0, None, reduction) if p else (torch.tensor(target), reduction)
    for reg in (jaxderiv.default_registry(), jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))):
        op = reg.op(name)
        first = lambda x: (lambda y: y[0] if isinstance(y, tuple) else y)(op(x, *args))  # noqa: E731
        tx = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
        out = getattr(aten, name)(tx, *targs)
        outs = out if isinstance(out, tuple) else (out,)
        ours = op(jnp.asarray(0.7), *args)
        ours = ours if isinstance(ours, tuple) else (ours,)
        for o, t in zip(ours, outs, strict=True):
            assert o.shape == tuple(t.shape)
            np.testing.assert_allclose(o, t.detach().numpy())
        (tg,) = torch.autograd.grad(outs[0], tx)
        np.testing.assert_allclose(jax.grad(first)(jnp.asarray(0.7)), tg.numpy())


# ==================================================================================================
# torch's own entries for huber_loss and huber_loss_backward (torch_registry: the spec torch 2.13
# ships). The op database and tests/check/test_parity.py compare both with torch (values, dtypes,
# vjp, jvp) on their records' samples and kinks (self - target at 0 and +-delta, in
# forward/losses.py); these tests add the second derivative through huber_loss_backward's
# own entry, huber_loss_backward's jvp (torch has no forward-mode derivative of it to compare with) against
# the Jacobian of torch's backward, and a wrong formula that the checker catches.
# ==================================================================================================


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


def test_second_order_through_huber_matches_torch(torch_registry):
    """The Hessian-vector product reaches huber_loss_backward's own entry (double backward)."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=(2, 3))
    x, v = y + rng.uniform(-2, 2, size=(2, 3)), rng.normal(size=(2, 3))
    op = torch_registry.op("huber_loss")
    ours = jax.jvp(jax.grad(lambda a: op(a, jnp.asarray(y), 1, 0.6)), (jnp.asarray(x),), (jnp.asarray(v),))[1]
    tx = torch.from_numpy(x).requires_grad_(True)
    (g,) = torch.autograd.grad(aten.huber_loss(tx, torch.from_numpy(y), 1, 0.6), tx, create_graph=True)
    (theirs,) = torch.autograd.grad(g, tx, torch.from_numpy(v))
    np.testing.assert_allclose(np.asarray(ours), to_numpy(theirs), rtol=1e-9, atol=1e-12)


def test_huber_loss_backward_jvp_is_the_jacobian_of_torchs_backward(torch_registry):
    """jax.jvp (the transposed backward formula) against the Jacobian of torch's backward applied
    to the tangents (torch.func.jvp has no formula for the op), on the record's samples and kinks."""
    op = torch_registry.op("huber_loss_backward")
    assert not op.entry.forward  # its jvp is the backward formula transposed
    inputs = [s.args for s in samples_for(op, np.random.default_rng(0))] + list(opdb.record(op.name).kinks)
    rng = np.random.default_rng(1)
    for args in inputs:
        assert_jvp_is_torchs_jacobian(P._Call(op, args, {}), rng)


def test_a_wrong_huber_formula_is_caught(write_spec):
    """torch's entry with delta replaced by 1.0 in its formula: the checker fails it, where torch's passes."""
    wrong = entry_yaml(
        jaxderiv.load_spec(from_torch=True)["huber_loss"],
        {"self": "huber_loss_backward(grad, self, target, reduction, 1.0)"},
    )
    right = jaxderiv.check_all(str(torch_spec_file()), ops=["huber_loss"], modes=("vjp",))
    assert {r.status for r in right} == {"passed"}, right.summary()
    report = jaxderiv.check_all(write_spec(wrong), ops=["huber_loss"], modes=("vjp",))
    assert "failed" in {r.status for r in report}, report.summary()

"""A small CNN built from jaxderiv's ATen ops matches the same CNN built from torch.ops.aten:
conv -> batch norm (training) -> relu -> max pool -> conv -> adaptive avg pool -> linear
(addmm) -> log_softmax -> nll loss; loss, every parameter's gradient and the input's, float64,
under jax.jit.

The shipped spec files name the general convolution `convolution_overrideable`, with
aten::convolution's schema; torch runs that schema as `aten.convolution` (its
`convolution_overrideable` has no CPU kernel)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import aten as jaten

torch = pytest.importorskip("torch")
taten = torch.ops.aten

N, C_IN, SIDE, C1, C2, CLASSES = 4, 3, 8, 4, 6, 5
PARAMS = {
    "w1": (C1, C_IN, 3, 3),
    "b1": (C1,),
    "gamma": (C1,),
    "beta": (C1,),
    "w2": (C2, C1, 3, 3),
    "b2": (C2,),
    "fc_w": (CLASSES, C2),
    "fc_b": (CLASSES,),
}


def _model(ops, conv, x, p, target, running_mean, running_var):
    """The forward pass on one op namespace: `ops.name.default` for every ATen op, `conv` for the convolution."""
    h = conv(x, p["w1"], p["b1"], [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    h = ops.native_batch_norm.default(h, p["gamma"], p["beta"], running_mean, running_var, True, 0.1, 1e-5)[0]
    h = ops.relu.default(h)
    h = ops.max_pool2d_with_indices.default(h, [2, 2], [2, 2])[0]
    h = conv(h, p["w2"], p["b2"], [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    h = ops._adaptive_avg_pool2d.default(h, [1, 1])
    h = ops.view.default(h, [N, C2])
    logits = ops.addmm.default(p["fc_b"], h, ops.t.default(p["fc_w"]))
    logp = ops._log_softmax.default(logits, 1, False)
    return ops.nll_loss_forward.default(logp, target, None, 1, -100)[0]


def test_cnn_loss_and_gradients_match_torch():
    rng = np.random.default_rng(0)
    params = {k: rng.normal(size=s) * (0.5 if k.startswith(("w", "fc_w")) else 1.0) for k, s in PARAMS.items()}
    params["gamma"] = rng.uniform(0.5, 1.5, C1)
    x = rng.normal(size=(N, C_IN, SIDE, SIDE))
    target = rng.integers(0, CLASSES, N)
    stats = (np.zeros(C1), np.ones(C1))

    jax_conv = jaten.convolution_overrideable.default
    loss = lambda x, p: _model(jaten, jax_conv, x, p, jnp.asarray(target), *(jnp.asarray(s) for s in stats))
    value, (gx, gp) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(
        jnp.asarray(x), {k: jnp.asarray(v) for k, v in params.items()}
    )

    tx = torch.tensor(x, requires_grad=True)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    t_loss = _model(taten, taten.convolution.default, tx, tp, torch.tensor(target), *(torch.tensor(s) for s in stats))
    t_grads = torch.autograd.grad(t_loss, [tx, *tp.values()])

    assert value.dtype == jnp.float64
    np.testing.assert_allclose(value, t_loss.item(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, t_grads[0].numpy(), rtol=1e-10, atol=1e-12)
    for k, t in zip(tp, t_grads[1:]):
        assert np.abs(t.numpy()).max() > 0, k  # every parameter gets a gradient
        np.testing.assert_allclose(gp[k], t.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)

"""Three small models, each written twice (jaxderiv ops, jax.numpy/lax) and once in torch.

A training step is forward, backward and an SGD update. Both JAX versions take the same
parameters and batch, so their steps are the same program up to the derivative rules.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxderiv import aten

LR = 0.01


@dataclasses.dataclass(frozen=True)
class Model:
    name: str
    init: Callable[[np.random.Generator, bool], tuple[dict, tuple]]  # (rng, quick) -> (params, batch), numpy arrays
    ours: Callable  # loss(params, batch) from jaxderiv ops
    native: Callable  # the same loss in jax.numpy / lax
    torch: Callable | None  # loss(params, batch) on torch tensors


def _normal(rng, *shape, scale=None):
    scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
    return (rng.normal(size=shape) * scale).astype(np.float32)


# -- MLP ------------------------------------------------------------------------------------


def _mlp_init(rng, quick):
    b, sizes = (64, (784, 256, 256, 10)) if quick else (256, (784, 1024, 1024, 10))
    params = {}
    for i, (n, m) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"w{i}"], params[f"b{i}"] = _normal(rng, n, m), np.zeros(m, np.float32)
    batch = (rng.normal(size=(b, sizes[0])).astype(np.float32), rng.integers(0, sizes[-1], size=b))
    return params, batch


def _mlp_ours(p, batch):
    x, y = batch
    h = x
    for i in range(3):
        h = aten.addmm(p[f"b{i}"], h, p[f"w{i}"])
        if i < 2:
            h = aten.relu(h)
    return aten.nll_loss_forward(aten._log_softmax(h, 1, False), y, None, 1, -100)[0]


def _mlp_native(p, batch):
    x, y = batch
    h = x
    for i in range(3):
        h = p[f"b{i}"] + h @ p[f"w{i}"]
        if i < 2:
            h = jax.nn.relu(h)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h, axis=1), y[:, None], axis=1))


def _mlp_torch(p, batch):
    import torch
    import torch.nn.functional as F

    x, y = batch
    h = x
    for i in range(3):
        h = torch.addmm(p[f"b{i}"], h, p[f"w{i}"])
        if i < 2:
            h = F.relu(h)
    return F.nll_loss(F.log_softmax(h, 1), y)


# -- CNN ------------------------------------------------------------------------------------


def _cnn_init(rng, quick):
    b, c1, c2, hw = (16, 8, 16, 16) if quick else (64, 16, 32, 28)
    params = {
        "c1": _normal(rng, c1, 1, 3, 3, scale=1 / 3),
        "cb1": np.zeros(c1, np.float32),
        "c2": _normal(rng, c2, c1, 3, 3, scale=1 / np.sqrt(9 * c1)),
        "cb2": np.zeros(c2, np.float32),
        "w": _normal(rng, c2 * (hw // 4) ** 2, 10),
        "b": np.zeros(10, np.float32),
    }
    batch = (rng.normal(size=(b, 1, hw, hw)).astype(np.float32), rng.integers(0, 10, size=b))
    return params, batch


def _cnn_ours(p, batch):
    x, y = batch
    h = x
    for i in (1, 2):
        h = aten.mkldnn_convolution(h, p[f"c{i}"], p[f"cb{i}"], [1, 1], [1, 1], [1, 1], 1)
        h = aten.max_pool2d_with_indices(aten.relu(h), [2, 2], [2, 2])[0]
    h = aten.addmm(p["b"], aten.view(h, [h.shape[0], -1]), p["w"])
    return aten.nll_loss_forward(aten._log_softmax(h, 1, False), y, None, 1, -100)[0]


def _cnn_native(p, batch):
    x, y = batch
    h = x
    for i in (1, 2):
        h = lax.conv_general_dilated(
            h, p[f"c{i}"], (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        h = jax.nn.relu(h + p[f"cb{i}"][:, None, None])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = p["b"] + h.reshape(h.shape[0], -1) @ p["w"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h, axis=1), y[:, None], axis=1))


def _cnn_torch(p, batch):
    import torch
    import torch.nn.functional as F

    x, y = batch
    h = x
    for i in (1, 2):
        h = F.max_pool2d(F.relu(F.conv2d(h, p[f"c{i}"], p[f"cb{i}"], padding=1)), 2)
    h = torch.addmm(p["b"], h.reshape(h.shape[0], -1), p["w"])
    return F.nll_loss(F.log_softmax(h, 1), y)


# -- transformer block ------------------------------------------------------------------------


def _tf_init(rng, quick):
    b, t, d, heads = (4, 32, 64, 4) if quick else (8, 128, 256, 8)
    params = {
        "ln1w": np.ones(d, np.float32),
        "ln1b": np.zeros(d, np.float32),
        "wqkv": _normal(rng, d, 3 * d),
        "bqkv": np.zeros(3 * d, np.float32),
        "wo": _normal(rng, d, d),
        "bo": np.zeros(d, np.float32),
        "ln2w": np.ones(d, np.float32),
        "ln2b": np.zeros(d, np.float32),
        "w1": _normal(rng, d, 4 * d),
        "b1": np.zeros(4 * d, np.float32),
        "w2": _normal(rng, 4 * d, d),
        "b2": np.zeros(d, np.float32),
    }
    batch = (rng.normal(size=(b, t, d)).astype(np.float32), rng.normal(size=(b, t, d)).astype(np.float32), heads)
    return params, batch


def _heads(x, b, t, h, d):
    return x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3).reshape(b * h, t, d // h)


def _tf_ours(p, batch):
    x, target, h = batch
    b, t, d = x.shape
    flat = aten.view(x, [b * t, d])
    a = aten.native_layer_norm(flat, [d], p["ln1w"], p["ln1b"], 1e-5)[0]
    qkv = aten.addmm(p["bqkv"], a, p["wqkv"])
    q, k, v = (
        aten.view(
            aten.permute(aten.view(qkv[:, i * d : (i + 1) * d], [b, t, h, d // h]), [0, 2, 1, 3]), [b * h, t, d // h]
        )
        for i in range(3)
    )
    scores = aten.mul.Scalar(aten.bmm(q, aten.transpose.int(k, 1, 2)), 1.0 / np.sqrt(d // h))
    att = aten.bmm(aten._softmax(scores, -1, False), v)
    att = aten.view(aten.permute(aten.view(att, [b, h, t, d // h]), [0, 2, 1, 3]), [b * t, d])
    flat = aten.add.Tensor(flat, aten.addmm(p["bo"], att, p["wo"]))
    m = aten.native_layer_norm(flat, [d], p["ln2w"], p["ln2b"], 1e-5)[0]
    m = aten.addmm(p["b2"], aten.gelu(aten.addmm(p["b1"], m, p["w1"])), p["w2"])
    out = aten.add.Tensor(flat, m)
    return aten.mse_loss(out, aten.view(target, [b * t, d]))


def _ln(x, w, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * w + b


def _tf_native(p, batch):
    x, target, h = batch
    b, t, d = x.shape
    flat = x.reshape(b * t, d)
    qkv = p["bqkv"] + _ln(flat, p["ln1w"], p["ln1b"]) @ p["wqkv"]
    q, k, v = (_heads(qkv[:, i * d : (i + 1) * d], b, t, h, d) for i in range(3))
    att = jax.nn.softmax(q @ k.transpose(0, 2, 1) * (1.0 / np.sqrt(d // h)), axis=-1) @ v
    att = att.reshape(b, h, t, d // h).transpose(0, 2, 1, 3).reshape(b * t, d)
    flat = flat + p["bo"] + att @ p["wo"]
    m = p["b2"] + jax.nn.gelu(p["b1"] + _ln(flat, p["ln2w"], p["ln2b"]) @ p["w1"], approximate=False) @ p["w2"]
    return jnp.mean(jnp.square(flat + m - target.reshape(b * t, d)))


def _tf_torch(p, batch):
    import torch
    import torch.nn.functional as F

    x, target, h = batch
    b, t, d = x.shape
    flat = x.reshape(b * t, d)
    qkv = torch.addmm(p["bqkv"], F.layer_norm(flat, (d,), p["ln1w"], p["ln1b"]), p["wqkv"])
    q, k, v = (
        qkv[:, i * d : (i + 1) * d].reshape(b, t, h, d // h).permute(0, 2, 1, 3).reshape(b * h, t, d // h)
        for i in range(3)
    )
    att = torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * (1.0 / np.sqrt(d // h)), -1), v)
    att = att.reshape(b, h, t, d // h).permute(0, 2, 1, 3).reshape(b * t, d)
    flat = flat + torch.addmm(p["bo"], att, p["wo"])
    m = torch.addmm(
        p["b2"], F.gelu(torch.addmm(p["b1"], F.layer_norm(flat, (d,), p["ln2w"], p["ln2b"]), p["w1"])), p["w2"]
    )
    return F.mse_loss(flat + m, target.reshape(b * t, d))


MODELS = (
    Model("mlp", _mlp_init, _mlp_ours, _mlp_native, _mlp_torch),
    Model("cnn", _cnn_init, _cnn_ours, _cnn_native, _cnn_torch),
    Model("transformer_block", _tf_init, _tf_ours, _tf_native, _tf_torch),
)


def train_step(loss: Callable) -> Callable:
    """One SGD step: (params, batch) -> (new params, loss). A fresh function object each call."""

    def step(params, batch):
        value, grads = jax.value_and_grad(loss)(params, batch)
        return jax.tree.map(lambda p, g: p - LR * g, params, grads), value

    return step


def jax_inputs(model: Model, quick: bool, seed: int = 0):
    params, batch = model.init(np.random.default_rng(seed), quick)
    params = {k: jnp.asarray(v) for k, v in params.items()}
    arrays = tuple(jnp.asarray(v) if isinstance(v, np.ndarray) else v for v in batch)
    return params, arrays


def split_static(batch):
    """Arrays of the batch (traced) and its Python ints (static: e.g. the number of heads)."""
    arrays = tuple(v for v in batch if not isinstance(v, int))
    statics = tuple(v for v in batch if isinstance(v, int))
    return arrays, statics


def jitted_step(loss: Callable, batch):
    """A jitted train step over (params, arrays), with the batch's Python ints baked in."""
    _, statics = split_static(batch)

    def rebuild(arrays):
        it_a, it_s = iter(arrays), iter(statics)
        return tuple(next(it_s) if isinstance(v, int) else next(it_a) for v in batch)

    step = train_step(loss)
    return jax.jit(lambda params, arrays: step(params, rebuild(arrays)))


def torch_step(model: Model, quick: bool, seed: int = 0):
    """A torch eager train step over the same parameters and batch; returns the loss as a float."""
    import torch

    params, batch = model.init(np.random.default_rng(seed), quick)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tb = tuple(torch.tensor(v) if isinstance(v, np.ndarray) else v for v in batch)

    def step():
        loss = model.torch(tp, tb)
        grads = torch.autograd.grad(loss, list(tp.values()))
        with torch.no_grad():
            for p, g in zip(tp.values(), grads):
                p.sub_(LR * g)
        return loss.item()

    return step

"""Port a PyTorch model to JAX: the same weights in torch, in jaxderiv.nn and in plain JAX.

Loss, input gradient and every parameter gradient side by side, with their max difference from torch's.
jaxderiv evaluates PyTorch's own derivative formulas, so it agrees with torch everywhere; plain
JAX agrees on smooth inputs but has its own conventions at kinks: an exactly pruned weight under
an L1 penalty (d|w|/dw at 0: torch 0, JAX 1) and ties in a max-pooling window written as a
reshape and max (JAX splits the gradient among the tied elements, torch gives it to the first).
A last table lists common JAX spellings at their kinks.

Run: python examples/port_torch_model.py [--quick]
Needs: pip install -e ".[flax]" torch
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch
from flax import nnx
from jax import lax

import jaxderiv.nn as jnn
from jaxderiv import aten
from jaxderiv.nn import functional as F

jax.config.update("jax_enable_x64", True)  # compare in float64: differences are then conventions, not rounding
L1 = 1e-2  # weight of the L1 penalty on the classifier's weights


def torch_model() -> torch.nn.Sequential:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 3 * 3, 5),
    ).double()


def jaxderiv_model() -> nnx.Sequential:
    r = nnx.Rngs(0)
    f64 = dict(param_dtype=jnp.float64)
    return nnx.Sequential(
        jnn.Conv2d(1, 4, 3, padding=1, rngs=r, **f64),
        jnn.ReLU(),
        jnn.MaxPool2d(2),
        jnn.Flatten(),
        jnn.Linear(4 * 3 * 3, 5, rngs=r, **f64),
    )


def torch_loss_and_grads(model, x, y) -> tuple[float, dict]:
    model.zero_grad()
    tx = torch.tensor(x, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(model(tx), torch.tensor(y)) + L1 * model[4].weight.abs().sum()
    loss.backward()
    return loss.item(), {"input": tx.grad.numpy(), **{k: p.grad.numpy() for k, p in model.named_parameters()}}


def jaxderiv_loss_and_grads(model, x, y) -> tuple[float, dict]:
    def loss(m, x):
        return F.cross_entropy(m(x), y) + L1 * aten.abs.default(m.layers[4].weight[...]).sum()

    value, (grads, gx) = nnx.jit(nnx.value_and_grad(loss, argnums=(0, 1)))(model, x)
    return float(value), {"input": np.asarray(gx), **{k: np.asarray(v) for k, v in _torch_keys(grads).items()}}


def _torch_keys(state) -> dict:
    return {".".join(str(p) for p in path if p != "layers"): v[...] for path, v in nnx.to_flat_state(state)}


def plain_jax_loss_and_grads(params: dict, x, y) -> tuple[float, dict]:
    """The same model written with jax.numpy and lax, differentiated by JAX's own rules.

    2x2 max pooling as a reshape and max, a common JAX idiom (lax.reduce_window, which flax's
    max_pool uses, would route ties as torch does)."""

    def loss(p, x):
        h = lax.conv_general_dilated(
            x, p["0.weight"], (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        h = jax.nn.relu(h + p["0.bias"][None, :, None, None])
        n, c, height, width = h.shape
        h = h.reshape(n, c, height // 2, 2, width // 2, 2).max(axis=(3, 5))
        logits = h.reshape(n, -1) @ p["4.weight"].T + p["4.bias"]
        nll = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), jnp.asarray(y)[:, None], axis=1))
        return nll + L1 * jnp.abs(p["4.weight"]).sum()

    value, (grads, gx) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(
        {k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(x)
    )
    return float(value), {"input": np.asarray(gx), **{k: np.asarray(v) for k, v in grads.items()}}


def inputs(kinks: bool, batch: int, seed: int):
    """Images and labels; with kinks, each image has a flat 4x4 centre, so the conv outputs of the
    centre pooling window tie."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, 1, 6, 6))
    if kinks:
        x[:, :, 1:5, 1:5] = rng.normal(size=(batch, 1, 1, 1))
    return x, rng.integers(0, 5, size=batch)


def models(prune: bool, seed: int):
    """A torch model and jaxderiv's with its weights; pruning sets the classifier's smallest third of weights to exactly 0."""
    torch.manual_seed(seed)
    t_model = torch_model()
    if prune:
        with torch.no_grad():
            w = t_model[4].weight
            w[w.abs() < w.abs().quantile(1 / 3)] = 0.0
    return t_model, jnn.load_torch_state_dict(jaxderiv_model(), {k: v.numpy() for k, v in t_model.state_dict().items()})


def compare(title: str, x, y, t_model, j_model) -> dict:
    """Print the loss and each gradient's max |difference| from torch; return the worst per implementation."""
    state = {k: v.detach().numpy().copy() for k, v in t_model.state_dict().items()}
    t_loss, t_grads = torch_loss_and_grads(t_model, x, y)
    j_loss, j_grads = jaxderiv_loss_and_grads(j_model, jnp.asarray(x), jnp.asarray(y))
    p_loss, p_grads = plain_jax_loss_and_grads(state, x, y)
    print(f"\n{title}")
    print(f"{'':16} {'torch: value / max |grad|':>26} {'|jaxderiv - torch|':>20} {'|plain JAX - torch|':>20}")
    print(f"{'loss':16} {t_loss:26.15f} {abs(j_loss - t_loss):20.1e} {abs(p_loss - t_loss):20.1e}")
    diffs = {"jaxderiv": abs(j_loss - t_loss), "plain_jax": abs(p_loss - t_loss)}
    for k, g in t_grads.items():
        dj, dp = float(np.max(np.abs(j_grads[k] - g))), float(np.max(np.abs(p_grads[k] - g)))
        print(f"{'grad ' + k:16} {np.max(np.abs(g)):26.4f} {dj:20.1e} {dp:20.1e}")
        diffs["jaxderiv"], diffs["plain_jax"] = max(diffs["jaxderiv"], dj), max(diffs["plain_jax"], dp)
    return diffs


def conventions() -> dict:
    """Gradients at kinks of common JAX spellings, next to torch's and jaxderiv's."""
    z, ties = np.zeros(3), np.ones((1, 1, 2, 2))
    rows = {
        "relu at 0 (jnp.maximum(x, 0))": (z, lambda x: torch.relu(x), F.relu, lambda x: jnp.maximum(x, 0)),
        "relu at 0 (jax.nn.relu)": (z, lambda x: torch.relu(x), F.relu, jax.nn.relu),
        "|x| at 0 (jnp.abs)": (z, torch.abs, aten.abs.default, jnp.abs),
        "clamp(x, 0, 1) at 0 and 1 (jnp.clip)": (
            np.array([0.0, 1.0, 0.5]),
            lambda x: torch.clamp(x, 0, 1),
            lambda x: aten.clamp.default(x, 0.0, 1.0),
            lambda x: jnp.clip(x, 0, 1),
        ),
        "2x2 max pool of a tie (reshape + max)": (
            ties,
            lambda x: torch.nn.functional.max_pool2d(x, 2),
            lambda x: F.max_pool2d(x, 2),
            lambda x: x.reshape(1, 1, 1, 2, 1, 2).max(axis=(3, 5)),
        ),
        "2x2 max pool of a tie (lax.reduce_window)": (
            ties,
            lambda x: torch.nn.functional.max_pool2d(x, 2),
            lambda x: F.max_pool2d(x, 2),
            lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
        ),
    }
    print(f"\n{'gradient of sum(f(x)) at a kink':44} {'torch':>22} {'jaxderiv':>22} {'JAX':>22}")
    out = {}
    for name, (x, t_fn, j_fn, jax_fn) in rows.items():
        tx = torch.tensor(x, requires_grad=True)
        t_fn(tx).sum().backward()
        grads = [
            tx.grad.numpy().ravel(),
            np.asarray(jax.grad(lambda x: j_fn(x).sum())(jnp.asarray(x))).ravel(),
            np.asarray(jax.grad(lambda x: jax_fn(x).sum())(jnp.asarray(x))).ravel(),
        ]
        print(f"{name:44} " + " ".join(f"{str(np.round(g, 2).tolist()):>22}" for g in grads))
        out[name] = {
            "jaxderiv_matches": bool(np.array_equal(grads[1], grads[0])),
            "jax_matches": bool(np.array_equal(grads[2], grads[0])),
        }
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller batch (smoke test)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    batch = 4 if args.quick else 32

    smooth = compare(
        "random images, dense weights (no kink): all three agree to rounding",
        *inputs(False, batch, args.seed),
        *models(False, args.seed),
    )
    kinks = compare(
        "images with a flat centre, pruned weights: plain JAX's conventions differ, jaxderiv's match torch's",
        *inputs(True, batch, args.seed),
        *models(True, args.seed),
    )
    spellings = conventions()
    seconds = time.perf_counter() - start
    print(f"\n{seconds:.1f} s")
    return {"smooth": smooth, "kinks": kinks, "conventions": spellings, "seconds": seconds}


if __name__ == "__main__":
    main()

"""Train a small CNN on scikit-learn's digits (8x8 images shipped inside scikit-learn: no download)
with jaxderiv.nn and optax: every gradient is PyTorch's rule, evaluated by JAX under nnx.jit.

Run: python examples/train_digits_cnn.py [--quick] [--out digits_loss.png]
Needs: pip install -e ".[examples]"
"""

from __future__ import annotations

import argparse
import time

import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import jaxderiv.nn as jnn
from jaxderiv.nn import functional as F


def cnn(rngs: nnx.Rngs) -> nnx.Sequential:
    """conv-bn-relu-pool twice, then dropout and a linear classifier: 8x8 -> 4x4 -> 2x2 -> 10 classes."""
    return nnx.Sequential(
        jnn.Conv2d(1, 16, 3, padding=1, rngs=rngs),
        jnn.BatchNorm2d(16),
        jnn.ReLU(),
        jnn.MaxPool2d(2),
        jnn.Conv2d(16, 32, 3, padding=1, rngs=rngs),
        jnn.BatchNorm2d(32),
        jnn.ReLU(),
        jnn.MaxPool2d(2),
        jnn.Flatten(),
        jnn.Dropout(0.25, rngs=rngs),
        jnn.Linear(32 * 2 * 2, 10, rngs=rngs),
    )


def digits(seed: int):
    """Images scaled to [0, 1] as (N, 1, 8, 8) float32, labels; a stratified 80/20 split."""
    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    return train_test_split(x, data.target, test_size=0.2, random_state=seed, stratify=data.target)


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda m: F.cross_entropy(m(x), y))(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def predict(model, x):
    return jnp.argmax(model(x), axis=1)


def plot(losses, epoch_ends, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=0.8, label="batch loss")
    ax.plot(
        epoch_ends, [np.mean(losses[max(0, e - 10) : e + 1]) for e in epoch_ends], "o-", label="mean of last 10 batches"
    )
    ax.set(xlabel="step", ylabel="cross entropy", yscale="log", title="digits CNN, jaxderiv.nn + optax")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test): 2 epochs on 400 images")
    parser.add_argument("--epochs", type=int, default=None, help="default: 12, or 2 with --quick")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="digits_loss.png", help="where to write the loss curve (PNG)")
    args = parser.parse_args(argv)
    epochs = args.epochs or (2 if args.quick else 12)
    start = time.perf_counter()

    x_train, x_test, y_train, y_test = digits(args.seed)
    if args.quick:
        x_train, y_train = x_train[:400], y_train[:400]
    model = cnn(nnx.Rngs(params=args.seed, dropout=args.seed + 1))
    optimizer = nnx.Optimizer(model, optax.adam(args.lr), wrt=nnx.Param)
    rng = np.random.default_rng(args.seed)
    losses, epoch_ends = [], []
    model.train()
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        for i in range(0, len(order) - args.batch_size + 1, args.batch_size):  # whole batches: one compiled shape
            batch = order[i : i + args.batch_size]
            losses.append(float(train_step(model, optimizer, jnp.asarray(x_train[batch]), jnp.asarray(y_train[batch]))))
        epoch_ends.append(len(losses) - 1)
        print(f"epoch {epoch + 1:>2}/{epochs}  loss {np.mean(losses[-(len(order) // args.batch_size) :]):.4f}")
    model.eval()
    accuracy = float(np.mean(np.asarray(predict(model, jnp.asarray(x_test))) == y_test))
    plot(losses, epoch_ends, args.out)
    seconds = time.perf_counter() - start
    print(f"test accuracy {accuracy:.3f} on {len(y_test)} images; loss curve written to {args.out}; {seconds:.1f} s")
    return {"losses": losses, "test_accuracy": accuracy, "plot": args.out, "seconds": seconds}


if __name__ == "__main__":
    main()

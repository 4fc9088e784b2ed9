"""Fine-tune a transformers checkpoint in JAX and hand the weights back to torch.

A tiny BERT sequence classifier (2 layers, width 32, random weights, nothing downloaded) is
written with `save_pretrained` and read back with `from_pretrained`, as a real checkpoint would
be. It is imported twice with `jaxderiv.torch.from_module`: in training mode (dropout) and in
eval mode, and wrapped as one Flax NNX module (`jt.to_nnx`), whose `.train()`/`.eval()` pick the
graph. It is fine-tuned with optax under `nnx.jit` on a synthetic task (does the sequence hold
token 1 or token 2?), evaluated in JAX, written into the checkpoint's `model.safetensors` with
`jt.save_safetensors`, reloaded by torch with `from_pretrained` and evaluated there: the two
accuracies are equal, and the logits agree to float32 rounding.

Run: python examples/finetune_pretrained.py [--quick] [--dir checkpoint_dir]
Needs: pip install -e ".[torch,flax]" transformers safetensors
"""

from __future__ import annotations

import argparse
import tempfile
import time

import jax.numpy as jnp
import numpy as np
import optax
import torch
import transformers
from flax import nnx

import jaxderiv.torch as jt

VOCAB, LENGTH = 32, 12


def make_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random tokens 3..31 with one marker: token 1 (label 1) or token 2 (label 0)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, VOCAB, size=(n, LENGTH))
    labels = rng.integers(0, 2, size=n)
    ids[np.arange(n), rng.integers(0, LENGTH, size=n)] = np.where(labels == 1, 1, 2)
    return ids, labels


def save_checkpoint(directory: str) -> None:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=LENGTH,
        num_labels=2,
    )
    transformers.BertForSequenceClassification(cfg).save_pretrained(directory)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 steps instead of 150")
    parser.add_argument("--dir", help="the checkpoint directory (default: a temporary one)")
    args = parser.parse_args(argv)
    steps = 40 if args.quick else 150
    directory = args.dir or tempfile.mkdtemp(prefix="tiny_bert_")

    save_checkpoint(directory)
    torch_model = transformers.BertForSequenceClassification.from_pretrained(directory)
    ids, _ = make_data(16, seed=0)
    example = torch.from_numpy(ids)
    t0 = time.perf_counter()
    train_graph = jt.from_module(torch_model.train(), example)  # dropout 0.1 draws from the NNX rngs
    eval_graph = jt.from_module(torch_model.eval(), example)
    module = jt.to_nnx(train_graph, eval_model=eval_graph, rngs=nnx.Rngs(dropout=0))
    print(f"imported {directory} twice (train, eval) in {time.perf_counter() - t0:.1f} s")

    optimizer = nnx.Optimizer(module, optax.adamw(3e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(module, optimizer, ids, labels):
        def loss_fn(module):
            logits = module(ids)["logits"]
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(module)
        optimizer.update(module, grads)
        return loss

    t0 = time.perf_counter()
    losses = []
    for step in range(steps):
        ids, labels = make_data(16, seed=1 + step)
        losses.append(float(train_step(module, optimizer, jnp.asarray(ids), jnp.asarray(labels))))
    print(f"{steps} steps in {time.perf_counter() - t0:.1f} s: loss {losses[0]:.3f} -> {np.mean(losses[-5:]):.3f}")

    test_ids, test_labels = make_data(200, seed=10_000)
    module.eval()
    jax_logits = np.asarray(module(jnp.asarray(test_ids))["logits"])
    jax_accuracy = float(np.mean(jax_logits.argmax(-1) == test_labels))

    jt.save_safetensors(train_graph, directory, *module.weights())
    reloaded = transformers.BertForSequenceClassification.from_pretrained(directory).eval()
    with torch.no_grad():
        torch_logits = reloaded(torch.from_numpy(test_ids)).logits.numpy()
    torch_accuracy = float(np.mean(torch_logits.argmax(-1) == test_labels))
    logits_diff = float(np.max(np.abs(torch_logits - jax_logits)))
    print(f"test accuracy: JAX {jax_accuracy:.3f}, torch {torch_accuracy:.3f} (200 sequences)")
    print(f"largest logit difference, JAX vs torch on the saved weights: {logits_diff:.1e}")
    return {
        "losses": losses,
        "jax_accuracy": jax_accuracy,
        "torch_accuracy": torch_accuracy,
        "logits_diff": logits_diff,
    }


if __name__ == "__main__":
    main()

"""A Hugging Face model exported from torch and trained in JAX with PyTorch's own gradients.

A small GPT-2 (random weights, nothing downloaded) is exported with torch.export and imported
with `jaxderiv.torch.from_module`: every ATen node runs the jaxderiv op whose derivatives are
torch's derivatives.yaml formulas. The same model is trained a few Adam steps in torch and, from
the same weights, in JAX (optax, the whole step under jax.jit); the loss curves are printed side
by side and drawn to a PNG. They agree step by step to rounding: float32's for GPT-2, whose loss
in transformers casts the logits to float32 (`logits.float()`), as torch's run does too;
float64's for BERT (`--model bert`), whose loss stays in the model's dtype.

Run: python examples/torch_model_in_jax.py [--quick] [--out curve.png] [--model gpt2|bert]
Needs: pip install -e ".[torch,flax]" transformers matplotlib
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch
import transformers

import jaxderiv.torch as jt

jax.config.update("jax_enable_x64", True)  # the model is float64: differences are then conventions, not rounding
VOCAB, LR = 64, 1e-2


def make_model(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if name == "gpt2":
        cfg = transformers.GPT2Config(
            n_layer=2,
            n_head=2,
            n_embd=32,
            vocab_size=VOCAB,
            n_positions=32,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            use_cache=False,
        )
        return transformers.GPT2LMHeadModel(cfg).double().train()
    cfg = transformers.BertConfig(
        num_hidden_layers=2,
        num_attention_heads=2,
        hidden_size=32,
        intermediate_size=64,
        vocab_size=VOCAB,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=3,
    )
    return transformers.BertForSequenceClassification(cfg).double().train()


def batch(name: str, step: int):
    g = torch.Generator().manual_seed(step)
    ids = torch.randint(0, VOCAB, (4, 12), generator=g)
    labels = ids if name == "gpt2" else torch.randint(0, 3, (4,), generator=g)
    return ids, labels


def train_torch(module, name, steps):
    opt = torch.optim.Adam(module.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        ids, labels = batch(name, step)
        loss = module(ids, labels=labels).loss  # the model's own loss, computed inside its forward
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def train_jax(model: jt.ImportedModel, name, steps):
    opt = optax.adam(LR)  # torch.optim.Adam's update, eps outside the square root as there

    def loss_fn(params, buffers, ids, labels):
        out, buffers = model.apply(params, buffers, ids, labels=labels)
        return out["loss"], buffers

    @jax.jit
    def train_step(params, buffers, state, ids, labels):
        (loss, buffers), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, buffers, ids, labels)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), buffers, state, loss

    params, buffers = model.params, model.buffers
    state = opt.init(params)
    losses, compile_s = [], None
    for step in range(steps):
        ids, labels = (jnp.asarray(t.numpy()) for t in batch(name, step))
        t0 = time.perf_counter()
        params, buffers, state, loss = train_step(params, buffers, state, ids, labels)
        losses.append(float(loss))
        if compile_s is None:
            compile_s = time.perf_counter() - t0
    return losses, params, compile_s


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 steps instead of 30")
    parser.add_argument("--model", choices=["gpt2", "bert"], default="gpt2")
    parser.add_argument("--out", help="write the two loss curves to this PNG")
    args = parser.parse_args(argv)
    steps = 5 if args.quick else 30

    module = make_model(args.model)
    ids, labels = batch(args.model, 0)
    t0 = time.perf_counter()
    model = jt.from_module(
        module, ids, labels=labels
    )  # exported before torch trains, so both start from the same weights
    import_s = time.perf_counter() - t0
    ops = {s.op for s in model.program.steps}
    print(
        f"{args.model}: {len(model.program.steps)} graph nodes, {len(ops)} distinct ops, imported in {import_s:.1f} s; "
        f"tied weights: {model.aliases or 'none'}"
    )

    jax_losses, params, compile_s = train_jax(model, args.model, steps)
    torch_losses = train_torch(module, args.model, steps)
    print(f"{'step':>4}  {'torch':>20}  {'jaxderiv':>20}  rel. difference")
    for i, (a, b) in enumerate(zip(torch_losses, jax_losses)):
        print(f"{i:>4}  {a:>20.15f}  {b:>20.15f}  {abs(a - b) / abs(a):.1e}")
    final = model.state_dict(params)
    weight_diff = max(
        float(np.max(np.abs(final[k] - v.detach().numpy()))) for k, v in module.state_dict().items() if k in final
    )
    print(f"first step (compile + run) {compile_s:.1f} s; largest weight difference after training: {weight_diff:.1e}")

    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(torch_losses, "o-", label="torch eager (loss.backward, torch.optim.Adam)")
        ax.plot(jax_losses, "x--", label="jaxderiv import (jax.jit, optax.adam)")
        ax.set_xlabel("step")
        ax.set_ylabel(f"{args.model} loss")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out, dpi=100)
        print(f"wrote {args.out}")
    return {"torch": torch_losses, "jax": jax_losses, "weight_diff": weight_diff, "nodes": len(model.program.steps)}


if __name__ == "__main__":
    main()

"""A torch model trained sharded over 8 devices with JAX's SPMD partitioner and PyTorch's gradients.

A small transformers Llama (random weights, nothing downloaded) is imported with
`jaxderiv.torch.from_module`, placed on a mesh by a sharding plan (`jt.fsdp()`: ZeRO-3,
`jt.tensor_parallel()`: Megatron, `jt.data_parallel()`, or both on a 2-D mesh) and trained with
optax under one `jax.jit`; XLA inserts the all-gathers and all-reduces. The same steps on one
device give the same losses. On a CPU the 8 devices are simulated
(`--xla_force_host_platform_device_count=8`, set below before JAX starts): the point is the
layout and the memory per device, not speed.

Run: python examples/train_sharded.py [--quick] [--plan fsdp|data_parallel|tensor_parallel|2d]
Needs: pip install -e ".[torch,flax]" transformers
"""

from __future__ import annotations

import os

if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # before JAX starts
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import argparse  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import jaxderiv.torch as jt  # noqa: E402

VOCAB = 64


def make_llama() -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_size=32,
        intermediate_size=64,
        vocab_size=VOCAB,
        max_position_embeddings=16,
        use_cache=False,
    )
    return transformers.LlamaForCausalLM(cfg).train()


def plan_and_mesh(name: str, devices) -> tuple[jt.ShardingPlan, jax.sharding.Mesh]:
    n = len(devices)
    if name == "2d" and n % 2 == 0:  # data x model: Megatron inside each pair, FSDP across
        return jt.tensor_parallel("model", data_axis="data", fsdp=True), jax.make_mesh((2, n // 2), ("data", "model"))
    if name == "tensor_parallel":
        return jt.tensor_parallel("model"), jax.make_mesh((n,), ("model",))
    plan = jt.data_parallel() if name == "data_parallel" else jt.fsdp()
    return plan, jax.make_mesh((n,), ("data",))


def train(model: jt.ImportedModel, plan, mesh, batches, lr=1e-2):
    """The user's part: shard, jit one optax step with the plan's shardings, loop."""
    state = jt.shard(model, mesh, plan)
    params, buffers = state
    opt = optax.adam(lr)
    opt_state = state.put(opt.init(params))  # Adam's moments sharded as their parameters

    def loss_fn(params, ids):
        return model.apply(params, buffers, ids, labels=ids)[0]["loss"]

    @jax.jit
    def step(params, opt_state, ids):
        loss, grads = jax.value_and_grad(loss_fn)(params, ids)
        updates, opt_state = opt.update(grads, opt_state, params)
        return state.constrain(optax.apply_updates(params, updates)), state.constrain(opt_state), loss

    losses, t0, compile_s = [], time.perf_counter(), 0.0
    for ids in batches:
        params, opt_state, loss = step(params, opt_state, *state.shard_batch(ids))
        losses.append(float(loss))
        compile_s = compile_s or time.perf_counter() - t0
    return losses, state, compile_s


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 steps instead of 40")
    parser.add_argument("--plan", choices=["fsdp", "data_parallel", "tensor_parallel", "2d"], default="fsdp")
    args = parser.parse_args(argv)
    steps = 5 if args.quick else 40

    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, VOCAB, (8, 12), generator=g).numpy() for _ in range(2)]
    batches = [data[i % 2] for i in range(steps)]  # two batches in turn: the loss falls as it learns them
    model = jt.from_module(make_llama(), torch.from_numpy(batches[0]), labels=torch.from_numpy(batches[0]))

    devices = jax.devices()
    plan, mesh = plan_and_mesh(args.plan, devices)
    losses, state, compile_s = train(model, plan, mesh, batches)
    one, one_state, _ = train(model, jt.data_parallel(), jax.make_mesh((1,), ("data",), devices=devices[:1]), batches)

    print(state.summary())
    per_device = max(state.device_bytes().values())
    total = sum(v.nbytes for v in model.params.values())
    print(
        f"{plan.name} on {dict(mesh.shape)}: parameters {per_device} B per device of {total} B ({per_device / total:.3f})"
    )
    print(f"first step (compile + run) {compile_s:.1f} s")
    print(f"{'step':>4}  {len(devices)} devices    1 device     rel. difference")
    for i, (a, b) in enumerate(zip(losses, one)):
        print(f"{i:>4}  {a:.9f}  {b:.9f}  {abs(a - b) / abs(b):.1e}")
    return {
        "losses": losses,
        "one_device": one,
        "devices": len(devices),
        "param_bytes_per_device": per_device,
        "param_bytes": total,
        "max_rel_difference": float(np.max(np.abs(np.subtract(losses, one)) / np.abs(one))),
    }


if __name__ == "__main__":
    main()

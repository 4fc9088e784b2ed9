"""A layer author's own NNX layer, written with jaxderiv.aten ops, checked with jaxderiv.check_function.

The layer: x + sigmoid(gate(x)) * silu(proj(rms_norm(x))), an RMS-normalized gated residual block.
Its gradients are PyTorch's rules, op by op; check_function verifies the composition against
central finite differences in float64 (vjp, jvp and second order) and against JAX's autodiff
of a plain jax.numpy version. A second version with a hand-fused RMSNorm whose custom_vjp
drops a term shows what a failing check reports.

Run: python examples/custom_layer.py [--quick]
Needs: pip install -e ".[flax]"
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import jaxderiv
import jaxderiv.nn as jnn
from jaxderiv import aten


def rms_norm(x, scale, eps: float = 1e-6):
    """x / sqrt(mean(x^2 over the last dim) + eps) * scale, in ATen ops."""
    mean_square = aten.mean.dim(aten.pow.Tensor_Scalar(x, 2), [-1], True)
    return aten.mul.Tensor(aten.mul.Tensor(x, aten.rsqrt.default(aten.add.Scalar(mean_square, eps))), scale)


class GatedRMSBlock(nnx.Module):
    """x + sigmoid(gate(x)) * silu(proj(rms_norm(x))): same shape in and out.

    Attributes:
      scale: Param [dim], RMSNorm's gain (ones); proj, gate: jaxderiv.nn.Linear(dim, dim).
    """

    def __init__(self, dim: int, eps: float = 1e-6, *, param_dtype=jnp.float32, rngs: nnx.Rngs):
        self.scale = nnx.Param(jnp.ones((dim,), param_dtype))
        self.proj = jnn.Linear(dim, dim, rngs=rngs, param_dtype=param_dtype)
        self.gate = jnn.Linear(dim, dim, rngs=rngs, param_dtype=param_dtype)
        self.eps = eps

    def norm(self, x):
        return rms_norm(x, self.scale[...], self.eps)

    def __call__(self, x):
        h = aten.silu.default(self.proj(self.norm(x)))
        return aten.add.Tensor(x, aten.mul.Tensor(aten.sigmoid.default(self.gate(x)), h))


def reference(block: GatedRMSBlock, x):
    """The same block in plain jax.numpy (JAX's own derivatives): a second reference for the check."""
    normed = x * jax.lax.rsqrt(jnp.mean(x**2, axis=-1, keepdims=True) + block.eps) * block.scale[...]
    linear = lambda m, v: v @ m.weight[...].T + m.bias[...]
    return x + jax.nn.sigmoid(linear(block.gate, x)) * jax.nn.silu(linear(block.proj, normed))


@jax.custom_vjp
def fused_rms_norm(x, scale):
    """A hand-fused RMSNorm whose backward forgets that the mean square depends on x."""
    return x * jax.lax.rsqrt(jnp.mean(x**2, axis=-1, keepdims=True) + 1e-6) * scale


def _fused_fwd(x, scale):
    r = jax.lax.rsqrt(jnp.mean(x**2, axis=-1, keepdims=True) + 1e-6)
    return x * r * scale, (x, r, scale)


def _fused_bwd(res, g):
    x, r, scale = res
    return g * r * scale, jnp.sum(g * x * r, axis=tuple(range(x.ndim - 1)))  # missing: the term through mean(x^2)


fused_rms_norm.defvjp(_fused_fwd, _fused_bwd)


class FusedGatedRMSBlock(GatedRMSBlock):
    def norm(self, x):
        return fused_rms_norm(x, self.scale[...])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first-order modes only, one direction (smoke test)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    modes = ("vjp", "jvp") if args.quick else ("vjp", "jvp", "vjp_vjp")
    directions = 1 if args.quick else 3

    block = GatedRMSBlock(8, rngs=nnx.Rngs(args.seed))
    x = jnp.asarray(np.random.default_rng(args.seed).normal(size=(4, 8)), jnp.float32)
    print("GatedRMSBlock output", block(x).shape, "- its function checked at random parameters and inputs:")
    report = jaxderiv.check_function(
        lambda block, x: block(x),
        block,
        x,
        modes=modes,
        seed=args.seed,
        directions=directions,
        reference=reference,
        name="GatedRMSBlock",
    )
    print(report.summary())
    print(report.to_markdown())

    fused = FusedGatedRMSBlock(8, rngs=nnx.Rngs(args.seed))
    print("The same block with a hand-fused RMSNorm whose backward drops a term:")
    fused_report = jaxderiv.check_function(
        lambda block, x: block(x),
        fused,
        x,
        modes=("vjp",),
        seed=args.seed,
        directions=directions,
        name="FusedGatedRMSBlock",
    )
    print(fused_report.summary())
    seconds = time.perf_counter() - start
    print(f"\n{seconds:.1f} s")
    return {"report": report, "fused_report": fused_report, "seconds": seconds}


if __name__ == "__main__":
    main()

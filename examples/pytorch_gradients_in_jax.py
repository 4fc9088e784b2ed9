"""PyTorch's gradients inside a jitted JAX function: where they differ from JAX's own.

Run: python examples/pytorch_gradients_in_jax.py
"""

import jax
import jax.numpy as jnp

from jaxderiv import aten


def main() -> None:
    x = jnp.array([-1.0, 0.0, 2.0])

    # |x| at 0: PyTorch's formula `grad * self.sgn()` gives 0, JAX's own rule gives 1.
    ours = jax.jit(jax.grad(lambda x: aten.abs.default(x).sum()))(x)
    native = jax.jit(jax.grad(lambda x: jnp.abs(x).sum()))(x)
    print("d|x|/dx  at", x, "jaxderiv:", ours, " jax:", native)

    # Everything composes: vmap of grad, forward mode, second order.
    sin = aten.sin.default
    print("vmap(grad(sin))      :", jax.vmap(jax.grad(sin))(x))
    print("jvp(sin) tangent     :", jax.jvp(sin, (x,), (jnp.ones_like(x),))[1])
    print("hessian(sum of sin)  :", jnp.diag(jax.hessian(lambda x: sin(x).sum())(x)))


if __name__ == "__main__":
    main()

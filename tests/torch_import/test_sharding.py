"""jaxderiv ops under JAX's own scale-out: NamedSharding over a 4-device mesh, and shard_map.

The device count is fixed when JAX starts, so each check runs in a fresh interpreter with
XLA_FLAGS=--xla_force_host_platform_device_count=4 and reports its arrays back as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# A small classifier with PyTorch's kink at 0 (abs: sgn(0) = 0, where JAX's own rule gives 1),
# so that a gradient from JAX's rules instead of the spec's would not match.
_SETUP = """
import json
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jaxderiv import aten

rng = np.random.default_rng(0)
params = {
    "w0": jnp.asarray(rng.normal(size=(6, 16)).astype(np.float32)), "b0": jnp.zeros(16, jnp.float32),
    "w1": jnp.asarray(rng.normal(size=(16, 3)).astype(np.float32)), "b1": jnp.zeros(3, jnp.float32),
}
x = rng.normal(size=(8, 6)).astype(np.float32)
x[:, 0] = 0.0  # abs at its kink
x, y = jnp.asarray(x), jnp.asarray(rng.integers(0, 3, size=8))

def loss(p, x, y, abs_=aten.abs):
    h = aten.relu(aten.addmm(p["b0"], abs_(x) + x, p["w0"]))
    logits = aten.addmm(p["b1"], aten.tanh(h), p["w1"])
    return aten.nll_loss_forward(aten._log_softmax(logits, 1, False), y, None, 1, -100)[0]

def grad_x(p, x, y, abs_=aten.abs):
    return jax.grad(loss, argnums=1)(p, x, y, abs_)

def step(p, x, y):
    value, g = jax.value_and_grad(loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 0.1 * b, p, g), value

def out(**arrays):
    print(json.dumps({k: np.asarray(v).tolist() for k, v in arrays.items()}))
"""


def _run(body: str, devices: int = 4) -> dict:
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
        "PYTHONPATH": str(SRC),
        "JAX_PLATFORMS": "cpu",
    }
    code = _SETUP + textwrap.dedent(body)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return {k: np.asarray(v) for k, v in json.loads(run.stdout.strip().splitlines()[-1]).items()}


@pytest.fixture(scope="module")
def single():
    """Gradients, one SGD step and the loss on one device: the reference."""
    return _run(
        """
        assert len(jax.devices()) == 1
        new, value = jax.jit(step)(params, x, y)
        gx = jax.jit(grad_x)(params, x, y)
        gx_jax = jax.jit(lambda p, x, y: grad_x(p, x, y, jnp.abs))(params, x, y)
        out(value=value, gx=gx, gx_jax=gx_jax, **new)
        """,
        devices=1,
    )


def test_reference_uses_the_spec_rules(single):
    # at x = 0, d|x|/dx is 0 in PyTorch and 1 in JAX: the column of zeros tells them apart
    assert not np.allclose(single["gx"][:, 0], single["gx_jax"][:, 0])
    np.testing.assert_allclose(single["gx"][:, 1:], single["gx_jax"][:, 1:], rtol=1e-5, atol=1e-6)


def test_named_sharding_data_parallel_step(single):
    got = _run(
        """
        mesh = Mesh(np.array(jax.devices()), ("data",))
        assert mesh.size == 4
        xs = jax.device_put(x, NamedSharding(mesh, P("data")))
        ys = jax.device_put(y, NamedSharding(mesh, P("data")))
        ps = jax.device_put(params, NamedSharding(mesh, P()))
        new, value = jax.jit(step)(ps, xs, ys)
        gx = jax.jit(grad_x)(ps, xs, ys)
        assert len(gx.sharding.device_set) == 4
        out(value=value, gx=gx, **new)
        """
    )
    for k in ("value", "gx", "w0", "b0", "w1", "b1"):
        np.testing.assert_allclose(got[k], single[k], rtol=2e-5, atol=2e-6, err_msg=k)


def test_shard_map_data_parallel_step(single):
    got = _run(
        """
        shard_map = getattr(jax, "shard_map", None)
        if shard_map is None:
            from jax.experimental.shard_map import shard_map
        mesh = Mesh(np.array(jax.devices()), ("data",))

        def local_loss(p, x, y):
            # the batch mean is the mean of the 4 local means
            return loss(p, x, y) / 4

        def local_step(p, x, y):
            # the parameters are replicated: JAX sums their gradient over the devices
            value, g = jax.value_and_grad(local_loss)(p, x, y)
            return jax.tree.map(lambda a, b: a - 0.1 * b, p, g), jax.lax.psum(value, "data")

        def local_grad_x(p, x, y):
            return jax.grad(local_loss, argnums=1)(p, x, y)

        dp_step = jax.jit(shard_map(local_step, mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=(P(), P())))
        dp_grad_x = jax.jit(shard_map(local_grad_x, mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=P("data")))
        new, value = dp_step(params, x, y)
        out(value=value, gx=dp_grad_x(params, x, y), **new)
        """
    )
    for k in ("value", "gx", "w0", "b0", "w1", "b1"):
        np.testing.assert_allclose(got[k], single[k], rtol=2e-5, atol=2e-6, err_msg=k)

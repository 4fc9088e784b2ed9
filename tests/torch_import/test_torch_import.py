"""jaxderiv.torch: the importer's contract (transforms, state, errors, randomness, formulas)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import jaxderiv.torch as jt  # noqa: E402
from torch_models import edited_torch_spec  # noqa: E402

jax.config.update("jax_enable_x64", True)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(torch.relu(self.fc(x)).abs()).sum()


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    m = Small().double()
    x = torch.randn(5, 3, dtype=torch.float64)
    return m, x, jt.from_module(m, x)


def test_params_keyed_by_state_dict_names_and_round_trip(small):
    m, _, model = small
    assert set(model.params) == {"fc.weight", "fc.bias", "out.weight", "out.bias"}
    sd = model.state_dict({k: v + 1 for k, v in model.params.items()})
    for k, v in m.state_dict().items():
        np.testing.assert_allclose(sd[k], v.numpy() + 1)
    params, buffers = model.load_state_dict(m.state_dict())
    assert all(np.array_equal(params[k], model.params[k]) for k in params) and buffers == {}


def test_jit_grad_jvp_vmap_hessian(small):
    m, x, model = small
    xj = jnp.asarray(x.numpy())

    def f(params, x):
        return model.apply(params, model.buffers, x)[0]

    xt = x.clone().requires_grad_()
    loss = m(xt)
    (gx_t,) = torch.autograd.grad(loss, xt)
    np.testing.assert_allclose(jax.jit(jax.grad(f, argnums=1))(model.params, xj), gx_t.numpy(), rtol=1e-12)
    # vmap over a batch of inputs equals the loop
    batch = jnp.stack([xj, 2 * xj])
    np.testing.assert_allclose(
        jax.vmap(f, in_axes=(None, 0))(model.params, batch), [f(model.params, xj), f(model.params, 2 * xj)], rtol=1e-12
    )
    # jvp equals the directional derivative from the gradient
    t = jnp.ones_like(xj)
    _, tangent = jax.jvp(lambda x: f(model.params, x), (xj,), (t,))
    np.testing.assert_allclose(tangent, jnp.sum(gx_t.numpy() * t), rtol=1e-12)
    # hessian of a ReLU net w.r.t. its input is zero almost everywhere; w.r.t. out.weight too
    h = jax.hessian(lambda x: f(model.params, x))(xj)
    assert h.shape == xj.shape * 2 and float(jnp.max(jnp.abs(h))) == 0.0


def test_gradient_follows_the_spec_text(tmp_path):
    """Edit abs's formula in a copy of torch's file: the imported model's gradient changes."""
    registry = edited_torch_spec(
        tmp_path,
        "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn()\n",
        "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn() * 3\n",
    )

    class Abs(nn.Module):
        def forward(self, x):
            return x.abs().sum()

    x = torch.tensor([-2.0, 0.0, 1.5], dtype=torch.float64)
    plain = jt.from_module(Abs(), x)
    tripled = jt.from_module(Abs(), x, registry=registry)
    xj = jnp.asarray(x.numpy())
    g = jax.grad(lambda x: plain.apply({}, {}, x)[0])(xj)
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])  # torch's sgn at 0, not JAX's 1
    np.testing.assert_array_equal(jax.grad(lambda x: tripled.apply({}, {}, x)[0])(xj), 3 * g)


def test_compare_finds_the_first_diverging_gradient(tmp_path):
    doubled_relu = edited_torch_spec(
        tmp_path,
        "  self: threshold_backward(grad, result, 0)\n  result: auto_element_wise\n",
        "  self: threshold_backward(grad, result, 0) * 2\n  result: auto_element_wise\n",
    )
    torch.manual_seed(0)
    m = Small().double()
    x = torch.randn(5, 3, dtype=torch.float64)
    good = jt.compare(m, x)
    assert good.ok, str(good)
    bad = jt.compare(m, x, registry=doubled_relu)
    assert bad.first_value_divergence is None
    first = bad.first_grad_divergence
    # the doubled ReLU gradient shows first at the node feeding relu, where backward leaves it
    assert first is not None and "relu" in first.source and first.grad_error > 0.1, str(bad)


class WithConstructors(nn.Module):
    def forward(self, x):
        n = x.shape[0]
        pos = torch.arange(n, dtype=torch.float64)
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        scores = torch.where(mask, x[:, None] * pos[None, :], torch.zeros(n, n, dtype=x.dtype))
        return scores.sum() + torch.full((1,), 2.0, dtype=x.dtype).sum() * x.argmax().to(x.dtype)


def test_constructors_and_queries_carry_no_gradient():
    x = torch.tensor([0.5, -1.0, 3.0, 2.0], dtype=torch.float64, requires_grad=True)
    model = jt.from_module(WithConstructors(), x.detach())
    kinds = {s.op: s.kind for s in model.program.steps}
    assert kinds["aten::arange"] == "constant" and kinds["aten::argmax"] == "constant"
    (g_t,) = torch.autograd.grad(WithConstructors()(x), x)
    out, grad = jax.value_and_grad(lambda x: model.apply({}, {}, x)[0])(jnp.asarray(x.detach().numpy()))
    np.testing.assert_allclose(out, WithConstructors()(x).item(), rtol=1e-14)
    np.testing.assert_allclose(grad, g_t.numpy(), rtol=1e-14)


class Dropped(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


def test_dropout_draws_from_the_key_and_uses_the_spec_formula():
    x = torch.ones(200, dtype=torch.float64)
    model = jt.from_module(Dropped().train(), x)
    assert [s.kind for s in model.program.steps if "dropout" in s.op] == ["random"]
    xj = jnp.ones(200)
    with pytest.raises(ValueError, match="pass key=") as e:
        model.apply({}, {}, xj)
    note = " ".join(e.value.__notes__)  # the node, its op and the user's line
    assert "aten::native_dropout" in note and "self.drop(x)" in note
    y = model.apply({}, {}, xj, key=jax.random.key(1))[0]
    kept = np.asarray(y) != 0
    assert set(np.unique(np.asarray(y))) <= {0.0, 2.0} and 60 < kept.sum() < 140
    np.testing.assert_array_equal(model.apply({}, {}, xj, key=jax.random.key(1))[0], y)  # same key, same mask
    g = jax.grad(lambda x: jnp.sum(model.apply({}, {}, x, key=jax.random.key(1))[0]))(xj)
    np.testing.assert_array_equal(g, np.where(kept, 2.0, 0.0))  # native_dropout_backward(grad, mask, 2)


class Noisy(nn.Module):
    def forward(self, x):
        return x * 2 + torch.randn_like(x)  # a VAE's reparameterisation: x * 2 + noise


def test_random_constructor_draws_from_the_key_and_carries_no_gradient():
    x = torch.zeros(4000, dtype=torch.float64)
    model = jt.from_module(Noisy(), x)
    assert [s.kind for s in model.program.steps if "randn" in s.op] == ["random"]
    xj = jnp.zeros(4000)
    with pytest.raises(ValueError, match="randn_like draws random values: pass key="):
        model.apply({}, {}, xj)
    y = np.asarray(model.apply({}, {}, xj, key=jax.random.key(2))[0])
    assert y.dtype == np.float64 and abs(y.mean()) < 0.1 and abs(y.std() - 1) < 0.05
    np.testing.assert_array_equal(model.apply({}, {}, xj, key=jax.random.key(2))[0], y)
    assert not np.array_equal(model.apply({}, {}, xj, key=jax.random.key(3))[0], y)
    g = jax.grad(lambda x: jnp.sum(model.apply({}, {}, x, key=jax.random.key(2))[0]))(xj)
    np.testing.assert_array_equal(g, np.full(4000, 2.0))


@pytest.mark.parametrize(
    ("self_dtype", "src_dtype", "src_shape"),
    [
        (torch.float64, torch.float64, (4,)),
        (torch.float32, torch.float64, (3, 1)),
        (torch.complex128, torch.float64, ()),
    ],
)
def test_copy_runs_expand_then_to_copy_with_torchs_gradients(self_dtype, src_dtype, src_shape):
    """`copy_` (VariableTypeManual's derivative): src broadcast and cast; its gradient summed
    to src's shape, the real part for a real src; none for self."""
    from jaxderiv.torch.resolve import resolve, torch_registry

    rng = np.random.default_rng(3)
    target, src = torch.randn(3, 4, dtype=self_dtype), torch.randn(src_shape, dtype=src_dtype)
    resolved = resolve("copy_", torch_registry())
    assert resolved.kind == "variant" and "_to_copy" in resolved.detail
    out, vjp = jax.vjp(resolved.fn, jnp.asarray(target.numpy()), jnp.asarray(src.numpy()))
    ct = rng.normal(size=(3, 4)) + (1j * rng.normal(size=(3, 4)) if self_dtype.is_complex else 0)
    g_self, g_src = vjp(jnp.asarray(ct, out.dtype))
    t_self, t_src = target.clone().requires_grad_(), src.clone().requires_grad_()
    t_out = t_self.clone().copy_(t_src)
    want_self, want_src = torch.autograd.grad(t_out, (t_self, t_src), torch.from_numpy(ct).to(self_dtype))
    assert out.dtype == jnp.dtype(str(self_dtype).removeprefix("torch."))
    np.testing.assert_allclose(np.asarray(out), t_out.detach().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(g_self), want_self.numpy())
    assert g_src.dtype == jnp.dtype(str(src_dtype).removeprefix("torch."))
    np.testing.assert_allclose(np.asarray(g_src), want_src.numpy(), rtol=1e-6)


def test_copy_gradient_follows_to_copys_formula(tmp_path):
    registry = edited_torch_spec(
        tmp_path,
        "  self: _to_copy_backward(grad, self.options())\n",
        "  self: _to_copy_backward(grad * 2, self.options())\n",
    )
    from jaxderiv.torch.resolve import resolve

    fn = resolve("copy_", registry).fn
    g = jax.grad(lambda s: jnp.sum(fn(jnp.zeros((2, 3)), s)))(jnp.ones(3))
    np.testing.assert_array_equal(g, [4.0, 4.0, 4.0])  # summed over 2 rows, doubled by the edit


@torch.library.custom_op("jaxderiv_test::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


@_twice.register_fake
def _(x):
    return torch.empty_like(x)


def test_unsupported_lists_every_node_with_the_users_line():
    class Odd(nn.Module):
        def forward(self, x):
            a = _twice(x)  # a custom op: no derivatives.yaml entry, no decomposition
            return a + _twice(a.sin())

    x = torch.randn(3, dtype=torch.float64)
    found = jt.unsupported(Odd(), x)
    assert [n.op for n in found] == ["jaxderiv_test.twice.default"] * 2
    assert all("test_torch_import.py" in n.source and "_twice(" in n.source and "custom" in n.reason for n in found)
    with pytest.raises(jt.UnsupportedGraphError) as e:
        jt.from_module(Odd(), x)
    assert e.value.nodes == found and "2 graph node(s)" in str(e.value) and "_twice(a.sin())" in str(e.value)


def test_float64_model_needs_x64():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(TypeError, match="jax_enable_x64"):
            jt.from_module(Small().double(), torch.randn(2, 3, dtype=torch.float64))
    finally:
        jax.config.update("jax_enable_x64", True)


def test_in_place_ops_in_the_module_become_functional():
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros((), dtype=torch.float64))

        def forward(self, x):
            self.count.add_(1)
            y = x.clone()
            y.mul_(3).relu_()
            return y.sum() * self.count

    x = torch.tensor([-1.0, 2.0], dtype=torch.float64)
    model = jt.from_module(InPlace(), x)
    out, buffers = model.apply({}, model.buffers, jnp.asarray(x.numpy()))
    assert float(out) == 6.0 and float(buffers["count"]) == 1.0 and float(model.buffers["count"]) == 0.0


def test_the_core_package_never_imports_torch():
    import subprocess
    import sys

    code = (
        "import sys, jax.numpy as jnp, jaxderiv; jaxderiv.aten.abs.default(jnp.ones(2)); "
        "jaxderiv.Registry(jaxderiv.load_spec(from_torch=True)).op('relu'); "
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_imported_model_under_named_sharding():
    """A batch sharded over 4 host devices gives the unsharded gradients (fresh interpreter:
    the device count is fixed when JAX starts)."""
    import os
    import subprocess
    import sys

    code = """
import jax, jax.numpy as jnp, numpy as np, torch
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import jaxderiv.torch as jt
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(8, 3)
model = jt.from_module(m, x)
loss = lambda p, x: jnp.sum(model.apply(p, model.buffers, x)[0] ** 2)
g = jax.jit(jax.grad(loss))(model.params, jnp.asarray(x.numpy()))
mesh = Mesh(np.array(jax.devices()), ("batch",))
xs = jax.device_put(jnp.asarray(x.numpy()), NamedSharding(mesh, P("batch")))
gs = jax.jit(jax.grad(loss))(model.params, xs)
assert len(jax.devices()) == 4 and len(xs.sharding.device_set) == 4
for k in g:
    np.testing.assert_allclose(gs[k], g[k], rtol=1e-5, atol=1e-6)
print("ok")
"""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]

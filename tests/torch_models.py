"""Shared by the importer's tests: a torch model against its jaxderiv import, in float64.

`against_torch` runs the module in torch (loss.backward(), torch.func.jvp) and the import in
JAX (value_and_grad, jax.jvp) on identical weights and inputs, and returns every relative
error, so a test asserts each one."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import torch

import jaxderiv
import jaxderiv.torch as jt


@dataclasses.dataclass
class Errors:
    loss: float
    params: dict[str, float]  # per parameter: max relative gradient error
    inputs: list[float]  # per floating input
    buffers: dict[str, float]  # updated buffers
    jvp: float
    model: jt.ImportedModel

    @property
    def max_grad(self) -> float:
        return max([*self.params.values(), *self.inputs, 0.0])


def edited_torch_spec(tmp_path, original: str, edited: str):
    """A registry of a copy of torch's own derivatives.yaml with one formula's text replaced:
    the importer's and the replay's tests show that a wrong formula changes what they see."""
    from jaxderiv.spec import torch_spec_file

    text = torch_spec_file().read_text()
    assert original in text
    path = tmp_path / "derivatives.yaml"
    path.write_text(text.replace(original, edited, 1))
    return jaxderiv.Registry(jaxderiv.load_spec(path))


def rel(a, b) -> float:
    """max |a - b| / max |b|; a gradient that is zero in exact arithmetic (a bias before
    BatchNorm) is rounding noise on both sides, so the scale is at least 1e-8."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-8))


def _leaf(o):
    if isinstance(o, dict):
        o = next(iter(o.values()))
    if isinstance(o, (tuple, list)):
        o = o[0]
    return o


def against_torch(module: torch.nn.Module, inputs: tuple, *, seed: int = 0, jvp: bool = True, **kwinputs) -> Errors:
    """Loss = sum(first output * fixed cotangent); every gradient, buffer update and a jvp compared."""
    model = jt.from_module(module, *inputs, **kwinputs)
    floats = [i for i, x in enumerate(inputs) if x.is_floating_point()]
    xs = [jnp.asarray(x.numpy()) for x in inputs]
    kws = {k: jnp.asarray(v.numpy()) for k, v in kwinputs.items()}

    # torch, on fresh copies so that the export did not touch what is compared
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    targs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    out = _leaf(module(*targs, **kwinputs))
    ct = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    loss_t = (out * torch.from_numpy(ct)).sum()
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    params_t = dict(module.named_parameters())
    grads_t = torch.autograd.grad(loss_t, [params_t[n] for n in names] + [targs[i] for i in floats], allow_unused=True)
    buffers_t = {k: v.detach().clone() for k, v in module.state_dict().items() if k in model.buffers}
    module.load_state_dict(state)

    def loss(params, fx):
        full = list(xs)
        for i, x in zip(floats, fx):
            full[i] = x
        o, new_buffers = model.apply(params, model.buffers, *full, **kws)
        return jnp.sum(_leaf(o) * ct), new_buffers

    (loss_j, new_buffers), (g_params, g_inputs) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(
        model.params, [xs[i] for i in floats]
    )
    errors = Errors(abs(float(loss_j) - float(loss_t)) / max(abs(float(loss_t)), 1e-300), {}, [], {}, 0.0, model)
    for n, g in zip(names, grads_t[: len(names)]):
        g = np.zeros(tuple(params_t[n].shape)) if g is None else g.numpy()
        errors.params[n] = rel(g_params[model.aliases.get(n, n)], g) if n not in model.aliases else 0.0
    for k, (i, g) in enumerate(zip(floats, grads_t[len(names) :])):
        errors.inputs.append(rel(g_inputs[k], np.zeros(tuple(inputs[i].shape)) if g is None else g.numpy()))
    for k, v in buffers_t.items():
        errors.buffers[k] = rel(new_buffers[k], v.numpy())
    if jvp:
        errors.jvp = _jvp_error(module, model, inputs, kwinputs, seed)
    return errors


def _jvp_error(module, model, inputs, kwinputs, seed) -> float:
    """jax.jvp of the import against torch.func.jvp, tangents on every parameter and float input."""
    rng = np.random.default_rng(seed + 1)
    tp = {k: rng.standard_normal(v.shape) for k, v in model.params.items()}
    floats = [i for i, x in enumerate(inputs) if x.is_floating_point()]
    tx = {i: rng.standard_normal(tuple(inputs[i].shape)) for i in floats}
    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())
    names = list(model.params)

    def f_torch(ps, xs):
        full = list(inputs)
        for i, x in zip(floats, xs):
            full[i] = x
        state = {k: v.detach().clone() for k, v in buffers.items()}
        tied = {a: ps[names.index(c)] for a, c in model.aliases.items()}
        return _leaf(
            torch.func.functional_call(module, {**dict(zip(names, ps)), **tied, **state}, tuple(full), kwinputs)
        )

    # torch's fused attention kernels have no forward AD; its math backend is the same function.
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        _, t_out = torch.func.jvp(
            f_torch,
            (tuple(params[n].detach() for n in names), tuple(inputs[i] for i in floats)),
            (tuple(torch.from_numpy(tp[n]) for n in names), tuple(torch.from_numpy(tx[i]) for i in floats)),
        )
    xs = [jnp.asarray(x.numpy()) for x in inputs]
    kws = {k: jnp.asarray(v.numpy()) for k, v in kwinputs.items()}

    def f_jax(ps, fx):
        full = list(xs)
        for i, x in zip(floats, fx):
            full[i] = x
        return _leaf(model.apply(ps, model.buffers, *full, **kws)[0])

    _, j_out = jax.jvp(
        f_jax,
        (model.params, [xs[i] for i in floats]),
        ({k: jnp.asarray(v) for k, v in tp.items()}, [jnp.asarray(tx[i]) for i in floats]),
    )
    return rel(j_out, t_out.detach().numpy())

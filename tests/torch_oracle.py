"""Shared conversions and comparisons of the tests that use torch 2.13 as the oracle."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")

__all__ = [
    "to_torch",
    "to_numpy",
    "random_like",
    "assert_same",
    "assert_close",
    "check_against_torch",
    "assert_vjp_matches",
    "assert_jvp_is_torchs_jacobian",
]


def to_torch(v):
    """Arrays (and NumPy scalars) become tensors, dtypes torch dtypes; anything else is passed on."""
    if isinstance(v, np.dtype):
        return getattr(torch, str(v))
    if isinstance(v, (np.ndarray, np.generic)):
        return torch.from_numpy(np.array(v))
    return v


def to_numpy(t):
    """Detached, with conjugate and negative views resolved."""
    return t.numpy(force=True)


def random_like(rng, x):
    """A standard normal array shaped like `x`, complex when `x` is."""
    x = np.asarray(x)
    r = np.asarray(rng.normal(size=x.shape))
    return r + 1j * rng.normal(size=x.shape) if np.iscomplexobj(x) else r


def assert_same(ours, theirs, rtol=1e-10, atol=1e-12):
    """Same shapes, dtypes and values; NaNs and infinities in the same places (`theirs` may be a tensor)."""
    ours = np.asarray(ours)
    theirs = to_numpy(theirs) if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)


def assert_close(ours, theirs, tol=None):
    """`assert_same` at `tol`, by default 1e-6 in single precision and 1e-12 otherwise."""
    tol = tol or (1e-6 if np.asarray(ours).dtype in (np.float32, np.complex64) else 1e-12)
    assert_same(ours, theirs, rtol=tol, atol=tol)


def _first(y):
    return y[0] if isinstance(y, tuple) else y


def check_against_torch(op, torch_fn, args, diff=(0,), kwargs=None, seed=0, grad_tol=None):
    """Values (every output), vjp and jvp (the first output) of the jaxderiv `op` against
    `torch_fn`, differentiating the argument positions `diff`; arrays among `args` become JAX
    arrays and tensors, anything else is passed as it is. An input the torch output does not
    depend on must get a zero gradient."""
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    ours = op(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    targs = [to_torch(a).requires_grad_(i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    theirs = torch_fn(*targs, **kwargs)
    if isinstance(theirs, (tuple, list)):
        for o, t in zip(ours, theirs):
            assert_close(o, t)
    else:
        assert_close(ours, theirs)
    if not diff:
        return

    def f(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return _first(op(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in full], **kwargs))

    primals = [jnp.asarray(args[i]) for i in diff]
    y, pullback = jax.vjp(f, *primals)
    ct = rng.standard_normal(y.shape).astype(y.dtype)
    grads = torch.autograd.grad(_first(theirs), [targs[i] for i in diff], to_torch(ct), allow_unused=True)
    for g, tg in zip(pullback(jnp.asarray(ct)), grads):
        assert_close(g, torch.zeros_like(targs[diff[0]]) if tg is None else tg, grad_tol)
    tangents = [rng.standard_normal(np.shape(args[i])).astype(np.asarray(args[i]).dtype) for i in diff]
    _, jy = jax.jvp(f, primals, [jnp.asarray(t) for t in tangents])

    def tf(*xs):
        full = list(targs)
        for i, x in zip(diff, xs):
            full[i] = x
        return _first(torch_fn(*full, **kwargs))

    _, tj = torch.func.jvp(tf, tuple(to_torch(args[i]) for i in diff), tuple(to_torch(t) for t in tangents))
    assert_close(jy, tj, grad_tol)


def assert_vjp_matches(rng, ours, theirs, args, diff, out=0, rtol=1e-10):
    """Output `out` of `ours` against `theirs`, and its vjp with a cotangent drawn from `rng` for
    the `diff` positions of `args` (arrays become tensors); an input the torch output does not
    depend on must get a zero gradient."""
    y = ours(*args)
    y = y[out] if isinstance(y, tuple) else y
    targs = [to_torch(a).requires_grad_(i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    ty = theirs(*targs)
    ty = ty[out] if isinstance(ty, (tuple, list)) else ty
    assert_same(y, ty, rtol)
    ct = rng.normal(size=np.shape(y))

    def f(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        r = ours(*full)
        return r[out] if isinstance(r, tuple) else r

    got = jax.vjp(f, *[jnp.asarray(args[i]) for i in diff])[1](jnp.asarray(ct))
    want = torch.autograd.grad(ty, [targs[i] for i in diff], to_torch(ct), allow_unused=True)
    for g, w, i in zip(got, want, diff):
        assert_same(g, torch.zeros_like(targs[i]) if w is None else w, rtol)


def assert_jvp_is_torchs_jacobian(call, rng, tol=1e-9):
    """jax.jvp of output 0 of a parity `_Call` against torch's Jacobian of it applied to tangents
    drawn from `rng`: for ops torch.func.jvp has no formula for (their backward ops)."""
    xs = call.xs()
    ts = [rng.normal(size=np.shape(x)) for x in xs]
    _, ours = jax.jvp(lambda *a: call.jax(*a)[0], tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, ts)))
    jac = torch.autograd.functional.jacobian(lambda *a: call.torch(*a)[0], tuple(map(to_torch, xs)))
    theirs = sum(torch.tensordot(j, to_torch(t), dims=t.ndim) for j, t in zip(jac, ts))
    assert_close(ours, theirs, tol)

"""check_function: a user's function built from jaxderiv ops, its derivatives against finite differences.

The same comparisons as the op checker (its accumulator, random directions and tolerances),
applied to a whole function: a layer, a loss, a model. Every floating-point leaf of the
arguments is an input to differentiate; the check runs in float64.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence, cast

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import JaxderivError
from .checker import Accumulator, check_sample, Mismatch, outputs_of
from .report import Report, Row

__all__ = ["check_function"]


class _NoReference(NotImplementedError):
    """No reference function was given: the checker then compares with finite differences only
    (a NotImplementedError, as a reference JAX cannot differentiate, which the checker skips)."""


def _inexact(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)


def _float64(x):
    if not _inexact(x):
        return x
    return jnp.asarray(x, jnp.complex128 if jnp.issubdtype(x.dtype, jnp.complexfloating) else jnp.float64)


class _FunctionProblem:
    """The function as one of its floating-point leaves, in the shape the op checker compares."""

    def __init__(self, f: Callable, args: tuple, reference: Callable | None):
        self.f, self.reference = f, reference
        leaves, self.treedef = jax.tree_util.tree_flatten(args)
        self.leaves = [_float64(x) for x in leaves]
        self.slots = [i for i, x in enumerate(self.leaves) if _inexact(x)]
        self.xs = [self.leaves[i] for i in self.slots]

    def _call(self, fn: Callable, xs) -> list:
        leaves = list(self.leaves)
        for i, x in zip(self.slots, xs):
            leaves[i] = x
        out = fn(*jax.tree_util.tree_unflatten(self.treedef, leaves))
        return [y for y in jax.tree_util.tree_leaves(out) if _inexact(y)]

    def rule_fn(self, *xs):
        return self._call(self.f, xs)

    def native_fn(self, *xs):
        if self.reference is None:
            raise _NoReference
        return self._call(self.reference, xs)

    @property
    def outputs(self) -> list:
        return outputs_of(self)

    @property
    def fd_fn(self):
        """Finite differences judge the user's function itself."""
        return self.rule_fn

    def project(self, vs) -> list:
        return list(vs)


# What evaluating or differentiating the function can raise, reported in its rows ("error"):
# jaxderiv's refusals and formula errors (NotImplementedDerivative, RealOnlyDerivative,
# TranslationError: JaxderivError), JAX's tracer and shape errors (TypeError, ValueError,
# IndexError), a missing transformation rule (NotImplementedError) or an XLA failure
# (RuntimeError), a floating-point trap (ArithmeticError). Other exceptions (a NameError, an
# AttributeError in the function) are bugs of the function and raise with their traceback.
_REPORTED = (JaxderivError, TypeError, ValueError, LookupError, RuntimeError, ArithmeticError)

# The modes a plain function is checked in (its second order: reverse over reverse).
FUNCTION_MODES = ("vjp", "jvp", "vjp_vjp")


def check_function(
    f: Callable,
    *args,
    modes: Sequence[str] = ("vjp", "jvp"),
    seed: int = 0,
    directions: int = 3,
    reference: Callable | None = None,
    name: str | None = None,
) -> Report:
    """Check f's vjp, jvp (and "vjp_vjp", second order, in the inputs and the cotangents: a rule
    that cuts its cotangent from differentiation fails there) at args against central finite
    differences.

    args: arrays or pytrees of arrays (an `nnx.State`, a dict of parameters); each floating
    leaf is differentiated, after a cast to float64. Integer leaves (indices) stay fixed.
    directions: how many random directions and cotangents each mode is checked along.
    reference: optionally the same function written otherwise (jax.numpy, say); JAX's autodiff
    of it must then agree too, which holds away from kinks.
    Returns a Report with one Row per mode; `bool(report)` is False iff a check failed.
    Finite differences judge only smooth points: keep args away from kinks (relu at 0, ties).
    """
    bad = [m for m in modes if m not in FUNCTION_MODES]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}; choose from {FUNCTION_MODES}")
    label = name or cast(str, getattr(f, "__name__", "function"))  # a callable object may have no __name__
    what = "finite differences" + (" and JAX autodiff of the reference" if reference is not None else "")
    rows = []
    with jax.enable_x64(True):
        problem = _FunctionProblem(f, args, reference)
        for mode in modes:
            start = time.perf_counter()
            rng = np.random.default_rng(seed)
            acc = Accumulator()
            row = Row(label, mode, "passed", formula=f"jaxderiv's rules vs {what}")
            try:
                if not problem.xs:
                    row.status, row.reason = "not_applicable", "no floating-point argument to differentiate"
                elif not problem.rule_fn(*problem.xs):
                    row.status, row.reason = "not_applicable", "no floating-point output"
                else:
                    for _ in range(directions):
                        check_sample(mode, problem, rng, acc)
            except Mismatch as m:
                row.status, row.reason = "failed", str(m)
            except _REPORTED as e:  # a derivative that cannot be evaluated is reported in the row
                row.status, row.reason = "error", f"{type(e).__name__}: {e}"
            if row.status in ("passed", "failed"):
                row.max_abs_err, row.max_rel_err = acc.abs_err, acc.rel_err
            row.seconds = time.perf_counter() - start
            rows.append(row)
    return Report(rows)

"""Negative checks: a derivative the spec does not give is refused, never made up.

gradcheck's `test_fn_fail_gradgrad` asks for a derivative PyTorch does not implement and
expects the error. jaxderiv's counterpart: for each Tensor input of a sample that the entry
gives no formula for (a `not_implemented(...)` formula, a `non_differentiable` input, or no
line at all), asking for its gradient must raise NotImplementedDerivative naming the entry,
unless no input of the op is differentiable, when the op's outputs are constants and the
gradient is zero (the analog of PyTorch's outputs without `grad_fn`). A silent wrong gradient
there, zero or not, is the failure this module reports.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..errors import JaxderivError, NotImplementedDerivative
from ..normalize import Derivative, Kind, derivative
from ..op import Op

__all__ = ["refused_inputs", "check_refusals", "states_not_implemented"]

# What tracing raises where a forward needs its values (value-dependent shapes): JAX's tracer
# errors (TypeErrors; NonConcreteBooleanIndexError, an IndexError), a missing transformation rule
# (NotImplementedError), a forward's or a C++ condition's refusal of a traced value (ValueError;
# inside a formula, the JaxderivError that names it).
_UNTRACEABLE = (TypeError, ValueError, IndexError, NotImplementedError, JaxderivError)


def states_not_implemented(formula) -> bool:
    """Whether a formula (a spec Formula or its normalized Derivative) is a `not_implemented(...)`
    call: the spec refuses that derivative."""
    if formula is None:
        return False
    return (formula if isinstance(formula, Derivative) else derivative(formula)).kind is Kind.NOT_IMPLEMENTED


def refused_inputs(op: Op) -> list[str]:
    """The Tensor inputs (by schema name) whose derivative the entry does not give: no formula,
    `non_differentiable`, or a `not_implemented(...)` formula (asked of the backward formulas)."""
    return [
        a.name
        for a in op.schema.arguments
        if a.is_tensor
        and not a.is_tensor_list
        and (
            a.name not in op.differentiable_inputs
            or (op.entry.backward and states_not_implemented(op.derivatives.formula_for(a.name)))
        )
    ]


def _inexact(v) -> bool:
    return hasattr(v, "dtype") and jnp.issubdtype(v.dtype, jnp.inexact)


def check_refusals(op: Op, args: tuple, kwargs: dict) -> tuple[list[str], list[str]]:
    """Ask for the gradient of each refused input of one call, that input alone.

    Returns (checked, problems): the inputs asked about, and for each that was not refused as
    it should be, what happened instead.
    """
    bound = op.bind(tuple(args), dict(kwargs))
    names = list(bound)
    kw = {a.name for a in op.schema.arguments if a.kwarg_only}
    constant = not op.differentiable_inputs
    checked, problems = [], []
    for name in refused_inputs(op):
        x = bound.get(name)
        if not _inexact(x):
            continue

        def with_x(value, name=name):
            values = dict(bound, **{name: value})
            out = op(*[values[n] for n in names if n not in kw], **{n: values[n] for n in names if n in kw})
            outs = out if isinstance(out, (tuple, list)) else (out,)
            return [y for y in outs if _inexact(y)]

        def gradient(x, with_x=with_x):
            """None where the call has no floating output (a bool `any`): nothing to refuse."""
            ys, pullback = jax.vjp(with_x, x)
            return pullback([jnp.ones_like(y) for y in ys])[0] if ys else None

        try:
            # Traced only, where a refusal is expected: NotImplementedDerivative is raised while
            # the rule is traced, and nothing is computed. A constant op's zero is computed.
            g = gradient(jnp.asarray(x)) if constant else jax.eval_shape(gradient, jnp.asarray(x))
        except NotImplementedDerivative as e:
            checked.append(name)
            if constant:
                problems.append(
                    f"`{name}`: raised ({e}) though no input is differentiable: the outputs are constants, the gradient zero"
                )
            elif f"entry '{op.entry.name}'" not in str(e) or (op.entry.location.file or "") not in str(e):
                problems.append(f"`{name}`: the error does not name the entry and its file: {e}")
            continue
        except _UNTRACEABLE:  # the forward itself cannot run under vjp (value-dependent shapes): not asked
            continue
        if g is None:
            continue
        checked.append(name)
        if not constant:
            problems.append(f"`{name}`: the spec gives no derivative, yet a gradient (shape {g.shape}) was returned")
        elif g.size and bool(jnp.any(g != 0)):
            problems.append(
                f"`{name}`: no input is differentiable, yet the gradient is not zero (max |g| = {float(jnp.max(jnp.abs(g))):.3g})"
            )
    return checked, problems

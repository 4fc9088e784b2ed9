"""One application of an op: its bound arguments, its forward, and both linear maps over its arrays.

`Op.__call__` (op.py) binds a call's arguments and hands an `Application` to the linear
primitive of rules.py, which asks it for the tangent map (the `result:` formulas) and the
cotangent map (the backward formulas). Zero cotangents and tangents arrive as None, from one
place (rules.py): a backward formula receives an output's absent gradient as None, as PyTorch's
engine hands its formulas an undefined tensor, and a result formula reads an absent tangent as
zeros. A mode the entry has no formula for is the other mode's formula, transposed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol, Sequence

import jax
import jax.numpy as jnp

from .entry_rules import EntryRules, is_tensor_arg, output_index, output_variable
from .errors import NotImplementedDerivative, RealOnlyDerivative, TranslationError
from .normalize import Kind
from .rules import LinearRule, shaped_like
from .schema import FunctionSchema
from .spec import Entry

__all__ = ["Application", "AppliedOp", "Slot"]


class AppliedOp(Protocol):
    """What an Application reads of its op (op.py's `Op`): public parts only."""

    name: str
    schema: FunctionSchema
    entry: Entry
    impl: Callable | None
    rules: EntryRules

    def complex_refusal(self, bound: dict, ys: Sequence | None = None) -> str | None: ...


def _conj(x):
    return jnp.conj(x) if x is not None and jnp.iscomplexobj(x) else x


def _zeros_like(x):
    return jnp.zeros(jnp.shape(x), jnp.result_type(x))


def _transpose(linear: Callable, at: list, cts: list) -> list:
    """The transpose of `linear` (linear in its arguments) applied to `cts`.

    Pulled back with `jax.vjp` at zeros rather than `jax.linear_transpose`: partial evaluation
    inlines the forwards of the jaxderiv ops a formula calls, so the transposed map, once
    differentiated again (reverse over a transposed forward mode), would differentiate those
    forwards; the pullback goes through the ops' own rules instead.
    """
    _, pullback = jax.vjp(lambda *a: list(linear(*a)), *at)
    return list(pullback(list(cts)))


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where one array input sits among the schema's arguments."""

    arg: str  # argument name
    index: int | None  # position inside a Tensor[] argument, else None


def _inexact(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


class _TangentList(list):
    """A Tensor[] primal in a result formula, carrying its elements' tangents."""

    def __init__(self, primals, tangents):
        super().__init__(primals)
        self.tangents = list(tangents)


class Application:
    """One application of an Op: the bound arguments and both linear maps over its arrays.

    It reads the op's public parts only: `schema`, `impl`, `entry`, `rules` (entry_rules.py)
    and `complex_refusal`."""

    def __init__(self, op: AppliedOp, bound: dict[str, Any], slots: tuple[Slot, ...], xs: Sequence = ()):
        self.op, self.bound, self.slots = op, bound, slots
        self._xs = xs  # the arrays, for `flags` before any output is known
        self._flags: tuple[bool, ...] | None = None
        self.tuple_return = len(op.schema.returns) != 1
        self.list_return = len(op.schema.returns) == 1 and op.schema.returns[0].type.is_list

    # arrays <-> arguments ---------------------------------------------------------------------
    def inputs(self, xs: Sequence) -> dict[str, Any]:
        env = dict(self.bound)
        for a in self.op.schema.arguments:
            if a.is_tensor_list:
                env[a.name] = list(env[a.name])
        for s, x in zip(self.slots, xs):
            if s.index is None:
                env[s.arg] = x
            else:
                env[s.arg][s.index] = x
        return env

    def primal(self, *xs):
        out = self.op.impl(*self.inputs(xs).values())
        declared = len(self.op.schema.returns)
        if isinstance(out, tuple) and not self.list_return and len(out) > declared:
            # A forward shared with an older schema that had more outputs (slow_conv3d_forward's
            # scratch buffers, dropped in later files): the op returns what its schema declares.
            out = out[:declared] if self.tuple_return else out[0]
        if self.tuple_return or self.list_return:
            return [jnp.asarray(y) for y in out]
        return [jnp.asarray(out)]

    def pack(self, ys: list):
        if self.tuple_return:
            return tuple(ys)
        if self.list_return:
            return list(ys)
        return ys[0]

    def outputs(self, ys: Sequence) -> dict[str, Any]:
        env = {}
        if self.list_return:
            env["result"] = list(ys)
        elif not self.tuple_return:
            env["result"] = ys[0]
        for i, y in enumerate(ys):
            env[f"result{i}"] = y
            if i < len(self.op.schema.returns) and (name := self.op.schema.returns[i].name):
                env[output_variable(self.op.schema, name)] = y
        return env

    @property
    def flags(self) -> tuple[bool, ...]:
        """Which outputs carry derivatives; from the traced outputs' types once `rule` has run."""
        if self._flags is None:
            try:
                ys = jax.eval_shape(self.primal, *self._xs)
            except jax.errors.ConcretizationTypeError:  # output shape depends on values (masked_select)
                ys = self.primal(*self._xs)
            self._flags = self.out_differentiable(ys)
        return self._flags

    def rule(self, ys) -> LinearRule:
        """Both linear maps of this call, once its outputs (and so their dtypes) are known."""
        refused = self.op.complex_refusal(self.bound, ys)
        if refused is not None:
            raise RealOnlyDerivative(refused, self.op.entry.location)
        self._flags = self.out_differentiable(ys)
        return LinearRule(self.op.name, len(self.slots), self._flags, self.tangent_map, self.cotangent_map)

    def out_differentiable(self, ys) -> tuple[bool, ...]:
        """Which outputs carry derivatives: inexact dtype, and the entry's `output_differentiability`."""
        flags = []
        for i, y in enumerate(ys):
            ok = _inexact(y)
            conds = self.op.rules.output_conditions
            if conds and not self.list_return:
                c = conds[i]
                ok = ok and (bool(c(self.bound)) if callable(c) else bool(c))
            if self.op.rules.grad_only and i > 0:
                ok = False
            flags.append(ok)
        return tuple(flags)

    # reverse mode: the backward formulas -------------------------------------------------------
    def cotangent_map(self, xs, ys, cts, wanted):
        """Input cotangents from output cotangents: the backward formulas (None: zero, not wanted)."""
        if not self.op.rules.backward:
            return self._transpose_tangent_map(xs, ys, cts, wanted)
        # An output that received no cotangent is an undefined grad (None), as PyTorch's engine
        # hands its formulas: helpers such as svd_backward then skip that output's terms.
        diff = iter(cts)
        grads = [_conj(next(diff)) if d else None for d in self.flags]
        return self.backward_formulas(xs, ys, grads, wanted)

    def backward_formulas(self, xs, ys, grads, wanted):
        """Evaluate the backward formulas the wanted inputs need, with each output's grad (None: undefined)."""
        op, rules = self.op, self.op.rules
        static = op.entry.output_differentiability
        returns = list(op.schema.returns)
        if static and all(isinstance(c, bool) for c in static):
            # PyTorch's autograd node holds only the outputs the spec marks differentiable:
            # slogdet's `grad` ([false, true]) is logabsdet's.
            grads = [g for g, c in zip(grads, static) if c]
            returns = [r for r, c in zip(returns, static) if c]
        env = {**self.inputs(xs), **self.outputs(ys), "grads": grads, "grad": grads[0], "retain_variables": False}
        env.update({f"grad_{r.name}": g for r, g in zip(returns, grads) if r.name})
        want_arg = {}
        for s, w in zip(self.slots, wanted):
            want_arg[s.arg] = want_arg.get(s.arg, False) or w
        values = {}
        for f, fn in rules.backward:
            mask = tuple(want_arg.get(n, False) and n not in rules.non_differentiable for n in f.names)
            if not any(mask):
                continue
            if rules.foreach:  # element i's gradients, gathered into one list per input
                # PyTorch's generated loop evaluates element i's formula only where grads[i] is
                # defined; elsewhere that element's gradient is undefined too.
                none = None if len(f.names) == 1 else (None,) * len(f.names)
                per = [
                    fn({**env, "grad_input_mask": mask, "i": i}) if grads[i] is not None else none
                    for i in range(len(ys))
                ]
                result = per if len(f.names) == 1 else tuple(map(list, zip(*per)))
            else:
                result = fn({**env, "grad_input_mask": mask})
            if len(f.names) == 1:
                values[f.names[0]] = result
            else:
                if not isinstance(result, (tuple, list)) or len(result) != len(f.names):
                    raise TranslationError(
                        f"formula for {f.key!r} must give {len(f.names)} gradients, gave {type(result).__name__}",
                        f.location,
                    )
                values.update(zip(f.names, result))
        out = []
        for s, w in zip(self.slots, wanted):
            if not w:
                out.append(None)
                continue
            if s.arg in rules.non_differentiable or op.entry.formula_for(s.arg) is None:
                raise NotImplementedDerivative(
                    f"the derivative of aten::{op.name} for input {s.arg!r} is not given by the spec", op.entry.location
                )
            g = values.get(s.arg)
            if s.index is not None and g is not None:
                g = g[s.index]
            out.append(_conj(g))
        return out

    # forward mode: the result formulas ------------------------------------------------------
    def tangent_map(self, xs, ys, ts):
        """Output tangents from input tangents (None: zero): the result formulas, and the backward
        formulas transposed for the outputs no result formula gives."""
        op, rules = self.op, self.op.rules
        missing = [i for i, d in enumerate(self.flags) if d and rules.forward_for(op.schema, i) is None]
        if not rules.forward or missing:
            fallback = self._transpose_cotangent_map(xs, ys, ts)
            if not rules.forward:
                return fallback
        env = {**self.inputs(xs), **self.outputs(ys)}
        tangents = self.inputs([t if t is not None else _zeros_like(x) for t, x in zip(ts, xs)])
        for a in op.schema.arguments:
            if is_tensor_arg(a):
                env[f"{a.name}_p"] = env[f"original_{a.name}_p"] = env[a.name]
                env[f"{a.name}_t"] = env[f"{a.name}_t_raw"] = env[f"original_{a.name}_t"] = tangents[a.name]
                if a.is_tensor_list:  # helpers like cat_jvp read each element's tangent (`_fw_grad`)
                    env[a.name] = _TangentList(env[a.name], tangents[a.name])
        values: dict[int, Any] = {}
        for names, (d, fn) in rules.forward.items():
            idx = [output_index(op.schema, n) for n in names]
            if d.kind is Kind.AUTO_ELEMENT_WISE:
                result = self._auto_element_wise(env, ts, fn)
            elif d.kind is Kind.AUTO_LINEAR:
                # PyTorch's auto_linear: the op itself on the tangents of its differentiable inputs.
                linear = [
                    (t if t is not None else _zeros_like(x)) if s.arg in rules.differentiable_inputs else x
                    for s, t, x in zip(self.slots, ts, xs)
                ]
                result = self.primal(*linear)
                result = result if len(idx) > 1 else result[idx[0]]
            elif rules.foreach:  # one tangent per element, from that element's primals and tangents
                values.update((i, fn(self._element_env(env, i))) for i in range(len(ys)))
                continue
            else:
                result = fn(env)
            if len(idx) == 1:
                values[idx[0]] = result
            else:
                values.update(zip(idx, result))
        out = []
        fb = iter(fallback) if missing else None
        for i, d in enumerate(self.flags):
            if not d:
                continue
            v = values.get(i)
            if i in missing:
                v = next(fb)
            elif fb is not None:
                next(fb)
            out.append(v)
        return out

    def _element_env(self, env: dict, i: int) -> dict:
        """A `_foreach_*` result formula's variables for element i: `self_p`, `self_t` of
        each Tensor[] argument are its i-th primal and tangent; `self`, `result` stay lists."""
        out = {**env, "i": i}
        for a in self.op.schema.arguments:
            if a.is_tensor_list:
                for v in (
                    f"{a.name}_p",
                    f"original_{a.name}_p",
                    f"{a.name}_t",
                    f"{a.name}_t_raw",
                    f"original_{a.name}_t",
                ):
                    out[v] = env[v][i]
        return out

    def _auto_element_wise(self, env, ts, terms):
        """PyTorch's auto_element_wise: the sum of the rewritten terms (normalize.py) of the
        inputs that carry a tangent; an input without one adds nothing."""
        total = None
        for name, fn in terms:
            if any(s.arg == name and t is not None for s, t in zip(self.slots, ts)):
                value = fn(env)
                total = value if total is None else total + value
        return total

    # a missing mode from the other formula, by linear transposition ---------------------------
    def _transpose_cotangent_map(self, xs, ys, ts):
        """Forward mode where the entry has no result formula: transpose the backward formula."""
        wanted = tuple(t is not None for t in ts)
        diff_ys = [y for y, d in zip(ys, self.flags) if d]

        def vjp(*cts):
            gs = self.cotangent_map(xs, ys, list(cts), wanted)
            return [shaped_like(g, x) for g, x, w in zip(gs, xs, wanted) if w]  # as the engine: summed to x's shape

        return _transpose(vjp, [_zeros_like(y) for y in diff_ys], [t for t in ts if t is not None])

    def _transpose_tangent_map(self, xs, ys, cts, wanted):
        """Reverse mode where the entry has no backward formula: transpose the result formula."""
        idx = [i for i, w in enumerate(wanted) if w]

        def jvp(*ts_wanted):
            full = [None] * len(xs)
            for i, t in zip(idx, ts_wanted):
                full[i] = t
            return self.tangent_map(xs, ys, full)

        diff_ys = [y for y, d in zip(ys, self.flags) if d]
        cts = [c if c is not None else _zeros_like(y) for c, y in zip(cts, diff_ys)]
        grads = iter(_transpose(jvp, [_zeros_like(xs[i]) for i in idx], cts))
        return [next(grads) if w else None for w in wanted]

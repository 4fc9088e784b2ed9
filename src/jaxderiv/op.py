"""One spec entry as a JAX function: ATen forward, both derivative modes from the YAML text."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp

from .errors import JaxderivError, Location, NotImplementedDerivative, TranslationError
from .expr import Index, Name, Num, iter_nodes
from .grammar import parse_formula
from .normalize import Derivative, Kind, derivative, normalize
from .rules import LinearRule, _like, differentiable_call
from .schema import Argument, FunctionSchema
from .spec import Entry, Formula
from .translate import Compiled, real_only_inputs, translate

__all__ = ["Op", "compile_formula", "RealOnlyDerivative"]


class RealOnlyDerivative(JaxderivError, TypeError):
    """A derivative was asked, with complex values, of formulas their release wrote for real
    tensors only: the result would be silently wrong (see `translate.real_only_inputs`)."""


def _is_complex(v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_is_complex(x) for x in v)
    return isinstance(v, complex) or (hasattr(v, "dtype") and jnp.issubdtype(v.dtype, jnp.complexfloating))


def compile_formula(
    formula: Derivative | Formula | str,
    variables: Sequence[str],
    location: Location | None = None,
    calls=None,
    version: tuple[int, ...] | None = None,
) -> Compiled:
    """Translate one formula, with errors located at its file, line, entry and key: a record's
    tree (normalize.py; a spec Formula is normalized alone), or text, parsed first.
    `calls`, `version`: see `translate`."""
    if isinstance(formula, str):
        try:
            tree = parse_formula(formula)
        except JaxderivError as e:
            raise e.located(location or Location()) from None
        return _translate_at(tree, variables, location, calls, version)
    d = formula if isinstance(formula, Derivative) else derivative(formula)
    return _translate_at(d.tree if d.tree is not None else d.require_parsed(), variables, d.location, calls, version)


def _translate_at(tree, variables: Sequence[str], location: Location | None, calls, version) -> Compiled:
    """`translate`, its errors located at `location`."""
    try:
        return translate(tree, variables, location, calls, version)
    except JaxderivError as e:
        raise e.located(location or Location()) from None


def _check_grads_indices(d: Derivative, n_out: int) -> None:
    """Reject `grads[i]` past the last output when the op is built, not when a gradient is asked."""
    for node in iter_nodes(d.require_parsed()):
        if (
            isinstance(node, Index)
            and node.obj == Name("grads")
            and isinstance(node.index, Num)
            and not 0 <= node.index.value < n_out
        ):
            raise TranslationError(
                f"grads[{node.index.text}] names no output: the op has {n_out} output(s)", d.location, column=node.col
            )


def _reads_any(d: Derivative, names: set[str]) -> bool:
    """Whether the formula's tree reads a variable of `names` (`grads`, `grad_R`)."""
    return d.parsed is not None and any(isinstance(node, Name) and node.name in names for node in iter_nodes(d.parsed))


def _is_tensor_arg(a: Argument) -> bool:
    return a.is_tensor or a.is_tensor_list


def _conj(x):
    return jnp.conj(x) if x is not None and jnp.iscomplexobj(x) else x


def _zeros_like(x):
    return jnp.zeros(jnp.shape(x), jnp.result_type(x))


@dataclasses.dataclass(frozen=True)
class _Slot:
    """Where one array input sits among the schema's arguments."""

    arg: str  # argument name
    index: int | None  # position inside a Tensor[] argument, else None


class Op:
    """An ATen op whose derivatives are its spec entry's formulas.

    Calling it runs the forward implementation; `jax.grad`/`jax.vjp` evaluate the backward
    formulas and `jax.jvp` the `result:` formulas. `formulas` says which text each mode uses.
    """

    def __init__(self, entry: Entry, impl: Callable | None, calls=None):
        self.entry = entry
        # The entry's formulas with their kinds resolved and their trees (normalize.py).
        self.derivatives = normalize(entry)
        self.schema: FunctionSchema = entry.schema
        self.name = entry.name
        self.impl = impl
        self.__doc__ = (
            f"aten::{self.name}: {self.schema}\n\nDerivatives from {entry.location.file}:{entry.location.line}."
        )
        args = [a.name for a in self.schema.arguments]
        outs = self._output_names()
        n_out = len(self.schema.returns)
        results = ["result"] + [f"result{i}" for i in range(n_out)]
        # Newer files name an output's gradient by the output: `grad_solution` for `solution`.
        grad_names = [f"grad_{r.name}" for r in self.schema.returns if r.name]
        # `_foreach_*` entries state each element's derivative: `i` indexes the lists
        # (`grads[i]`, `self[i]`), and in result formulas `self_p`/`self_t` are element i's.
        self.foreach = self.schema.name.startswith("_foreach_")
        loop = ["i"] if self.foreach else []
        self._bwd_vars = (
            args + outs + results + grad_names + ["grad", "grads", "grad_input_mask", "retain_variables"] + loop
        )
        tensors = [a.name for a in self.schema.arguments if _is_tensor_arg(a)]
        self._fwd_vars = (
            args
            + outs
            + results
            + [f"{t}_p" for t in tensors]
            + [f"{t}_t" for t in tensors]
            + [f"{t}_t_raw" for t in tensors]
            + [f"original_{t}_p" for t in tensors]
            + [f"original_{t}_t" for t in tensors]
            + loop
        )
        self.non_differentiable = set(entry.non_differentiable)
        # (why, variables whose complex value the formulas get wrong), for a pre-complex release's entry
        self.real_only = real_only_inputs(entry)
        # `calls`: a formula's call of another entry's op runs that op (see `translate`).
        release = entry.version.release if entry.version is not None else None
        backward, forward = self.derivatives.backward, self.derivatives.forward
        self._backward = [(d, compile_formula(d, self._bwd_vars, calls=calls, version=release)) for d in backward]
        for d in backward:
            _check_grads_indices(d, n_out)
        # names -> (record, what evaluates it): a compiled formula; for auto_element_wise its
        # terms compiled, as (input, fn); for auto_linear None (the op runs on the tangents).
        self._forward = {}
        for d in forward:
            fn: tuple[tuple[str, Compiled], ...] | Compiled | None
            if d.kind is Kind.AUTO_ELEMENT_WISE:
                fn = tuple(
                    (t.input, _translate_at(t.tree, self._fwd_vars, t.source.location, calls, release)) for t in d.terms
                )
            elif d.kind is Kind.AUTO_LINEAR:
                fn = None
            else:
                fn = compile_formula(d, self._fwd_vars, calls=calls, version=release)
            self._forward[d.names] = (d, fn)
        self._out_conditions = [
            compile_formula(c, args, dataclasses.replace(entry.location, key="output_differentiability"))
            if isinstance(c, str)
            else c
            for c in (entry.output_differentiability or ())
        ]
        # PyTorch: a multi-output entry whose formulas use only `grad` differentiates output 0
        # only; `grads` or a later output's `grad_<name>` (linalg_qr's grad_R) reads the others.
        others = {"grads"} | {f"grad_{r.name}" for r in self.schema.returns[1:] if r.name}
        self._grad_only = (
            n_out > 1 and entry.output_differentiability is None and not any(_reads_any(d, others) for d in backward)
        )
        # An entry with result formulas but no backward formula at all gets reverse mode by
        # transposing them: every Tensor input is then differentiable (an unused tangent is zero).
        transposed = not entry.backward and bool(entry.forward)
        self.differentiable_inputs = tuple(
            a.name
            for a in self.schema.arguments
            if _is_tensor_arg(a)
            and a.name not in self.non_differentiable
            and (transposed or entry.formula_for(a.name) is not None)
        )

    # -- description -----------------------------------------------------------------------
    def _output_names(self) -> list[str]:
        return [self._output_name(r.name) for r in self.schema.returns if r.name]

    def _output_name(self, name: str) -> str:
        """An output named like an argument (eig's `eigenvectors`) is `<name>_return` in formulas."""
        return name + "_return" if any(a.name == name for a in self.schema.arguments) else name

    @property
    def formulas(self) -> dict[str, str]:
        """Which formula text each mode evaluates: {'vjp': ..., 'jvp': ...}."""
        e = self.entry
        if self._backward:
            vjp = "backward formula (" + "; ".join(f"{f.key}: line {f.location.line}" for f in e.backward) + ")"
        elif self._forward:
            vjp = "transpose of the result formula"
        else:
            vjp = "none"
        autos = (Kind.AUTO_ELEMENT_WISE, Kind.AUTO_LINEAR)
        kinds = {d.kind.value if d.kind in autos else "formula" for d in self.derivatives.forward}
        if not e.forward:
            jvp = "transpose of the backward formula" if self._backward else "none"
        elif kinds == {"formula"}:
            jvp = "result formula (line " + ", ".join(str(f.location.line) for f in e.forward) + ")"
        elif kinds == {"auto_element_wise"}:
            jvp = "auto_element_wise: the backward formula, conjugated"
        elif kinds == {"auto_linear"}:
            jvp = "auto_linear: the op applied to the tangents"
        else:
            jvp = "result formulas (" + ", ".join(sorted(kinds)) + ")"
        return {"vjp": vjp, "jvp": jvp}

    def __repr__(self) -> str:
        return f"<jaxderiv op aten::{self.name}>"

    def complex_refusal(self, bound: dict, ys: Sequence | None = None) -> str | None:
        """Why this call's derivative is refused (its real-only formulas would read complex values), or None.

        `real_only` names the values; outputs count as complex when `ys` are (or, before they
        are known, when an input is)."""
        if self.real_only is None:
            return None
        why, names = self.real_only
        outputs_complex = (
            any(_is_complex(y) for y in ys) if ys is not None else any(_is_complex(v) for v in bound.values())
        )
        bad = sorted(n for n in names if (_is_complex(bound[n]) if n in bound else outputs_complex))
        if not bad:
            return None
        return f"{why}. Here {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} complex, for which these formulas give wrong derivatives; load a newer release's file, or pass real values"

    def accepts_complex(self, args: tuple, kwargs: dict) -> bool:
        """Whether derivatives of this call (a checker sample) may be taken (see complex_refusal)."""
        return self.complex_refusal(self.bind(args, kwargs)) is None

    # -- calling ---------------------------------------------------------------------------
    def bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """Map a call's arguments onto the schema, with its defaults; raise TypeError as Python would."""
        params = self.schema.arguments
        positional = [a for a in params if not a.kwarg_only]
        if len(args) > len(positional):
            raise TypeError(
                f"aten::{self.name}() takes {len(positional)} positional arguments but {len(args)} were given; schema: {self.schema}"
            )
        bound = {a.name: v for a, v in zip(positional, args)}
        for k, v in kwargs.items():
            if k not in {a.name for a in params}:
                raise TypeError(f"aten::{self.name}() got an unexpected keyword argument {k!r}; schema: {self.schema}")
            if k in bound:
                raise TypeError(f"aten::{self.name}() got multiple values for argument {k!r}")
            bound[k] = v
        for a in params:
            if a.name not in bound:
                if a.default is None:
                    raise TypeError(f"aten::{self.name}() missing required argument {a.name!r}; schema: {self.schema}")
                bound[a.name] = a.default_value()
        return {a.name: bound[a.name] for a in params}

    def _prepare(self, args: tuple, kwargs: dict) -> tuple["_Call", list]:
        if self.impl is None:
            raise NotImplementedError(f"aten::{self.name} has no forward implementation in jaxderiv yet")
        bound = self.bind(args, kwargs)
        slots, xs = [], []
        for a in self.schema.arguments:
            value = bound[a.name]
            if a.is_tensor and value is not None:
                bound[a.name] = value = jnp.asarray(value)
                slots.append(_Slot(a.name, None))
                xs.append(value)
            elif a.is_tensor_list:
                bound[a.name] = value = [None if v is None else jnp.asarray(v) for v in value]
                for i, v in enumerate(value):
                    if v is not None:
                        slots.append(_Slot(a.name, i))
                        xs.append(v)
        return _Call(self, bound, tuple(slots), xs), xs

    def output_differentiable(self, /, *args, **kwargs) -> tuple[bool, ...]:
        """Which outputs of this call carry derivatives (dtype and `output_differentiability`)."""
        return self._prepare(args, kwargs)[0].flags

    def __call__(self, /, *args, **kwargs):  # positional-only: ATen arguments are often named `self`
        call, xs = self._prepare(args, kwargs)
        if not any(s.arg in self.differentiable_inputs for s in call.slots):
            return call.pack([jax.lax.stop_gradient(y) if _inexact(y) else y for y in call.primal(*xs)])
        return call.pack(differentiable_call(call.rule, call.primal, xs))


def _inexact(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


class _TangentList(list):
    """A Tensor[] primal in a result formula, carrying its elements' tangents."""

    def __init__(self, primals, tangents):
        super().__init__(primals)
        self.tangents = list(tangents)


class _Call:
    """One application of an Op: the bound arguments and both linear maps over its arrays."""

    def __init__(self, op: Op, bound: dict[str, Any], slots: tuple[_Slot, ...], xs: Sequence = ()):
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
                env[self.op._output_name(name)] = y
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
            conds = self.op._out_conditions
            if conds and not self.list_return:
                c = conds[i]
                ok = ok and (bool(c(self.bound)) if callable(c) else bool(c))
            if self.op._grad_only and i > 0:
                ok = False
            flags.append(ok)
        return tuple(flags)

    # reverse mode: the backward formulas -------------------------------------------------------
    def cotangent_map(self, xs, ys, cts, wanted):
        op = self.op
        if not op._backward:
            return self._transpose_tangent_map(xs, ys, cts, wanted)
        diff = iter(cts)
        grads = [_conj(next(diff)) if d else None for d in self.flags]
        if any(d and g is None for g, d in zip(grads, self.flags)):
            # Like PyTorch's engine, first hand the formula an undefined grad for each output
            # that received none: helpers such as svd_backward then skip that output's terms
            # instead of computing them on zeros. A formula that needs every grad defined
            # fails here and gets zeros, the same value.
            try:
                return self._backward_formulas(xs, ys, grads, wanted)
            except Exception:  # noqa: BLE001 - retried with zeros; an error of the retry chains to this one
                zeros = [_zeros_like(y) if d and g is None else g for g, d, y in zip(grads, self.flags, ys)]
                return self._backward_formulas(xs, ys, zeros, wanted)
        return self._backward_formulas(xs, ys, grads, wanted)

    def _backward_formulas(self, xs, ys, grads, wanted):
        op = self.op
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
        for f, fn in op._backward:
            mask = tuple(want_arg.get(n, False) and n not in op.non_differentiable for n in f.names)
            if not any(mask):
                continue
            if op.foreach:  # element i's gradients, gathered into one list per input
                per = [fn({**env, "grad_input_mask": mask, "i": i}) for i in range(len(ys))]
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
            if s.arg in op.non_differentiable or op.entry.formula_for(s.arg) is None:
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
        op = self.op
        missing = [i for i, d in enumerate(self.flags) if d and self._forward_for(i) is None]
        if not op._forward or missing:
            fallback = self._transpose_cotangent_map(xs, ys, ts)
            if not op._forward:
                return fallback
        env = {**self.inputs(xs), **self.outputs(ys)}
        tangents = self.inputs([t if t is not None else _zeros_like(x) for t, x in zip(ts, xs)])
        for a in op.schema.arguments:
            if _is_tensor_arg(a):
                env[f"{a.name}_p"] = env[f"original_{a.name}_p"] = env[a.name]
                env[f"{a.name}_t"] = env[f"{a.name}_t_raw"] = env[f"original_{a.name}_t"] = tangents[a.name]
                if a.is_tensor_list:  # helpers like cat_jvp read each element's tangent (`_fw_grad`)
                    env[a.name] = _TangentList(env[a.name], tangents[a.name])
        values: dict[int, Any] = {}
        for names, (d, fn) in op._forward.items():
            idx = [self._output_index(n) for n in names]
            if d.kind is Kind.AUTO_ELEMENT_WISE:
                result = self._auto_element_wise(env, ts, fn)
            elif d.kind is Kind.AUTO_LINEAR:
                # PyTorch's auto_linear: the op itself on the tangents of its differentiable inputs.
                linear = [
                    (t if t is not None else _zeros_like(x)) if s.arg in op.differentiable_inputs else x
                    for s, t, x in zip(self.slots, ts, xs)
                ]
                result = self.primal(*linear)
                result = result if len(idx) > 1 else result[idx[0]]
            elif op.foreach:  # one tangent per element, from that element's primals and tangents
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

    def _forward_for(self, i: int):
        if self.op.foreach:
            return next(iter(self.op._forward), None)
        for names in self.op._forward:
            if any(self._output_index(n) == i for n in names):
                return names
        return None

    def _output_index(self, name: str) -> int:
        if name == "result":
            return 0
        if name.startswith("result") and name[6:].isdigit():
            return int(name[6:])
        return [r.name for r in self.op.schema.returns].index(name)

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
            return [_like(g, x) for g, x, w in zip(gs, xs, wanted) if w]  # as the engine: summed to x's shape

        transposed = jax.linear_transpose(
            vjp, *[jax.ShapeDtypeStruct(jnp.shape(y), jnp.result_type(y)) for y in diff_ys]
        )
        return list(transposed([t for t in ts if t is not None]))

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
        transposed = jax.linear_transpose(
            jvp, *[jax.ShapeDtypeStruct(jnp.shape(xs[i]), jnp.result_type(xs[i])) for i in idx]
        )
        grads = iter(transposed(cts))
        return [next(grads) if w else None for w in wanted]

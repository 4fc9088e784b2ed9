"""One spec entry as a JAX function: ATen forward, both derivative modes from the YAML text.

An `Op` binds a call's arguments to its schema and evaluates: the forward implementation for
values; for derivatives, its compiled formulas (`EntryRules`, entry_rules.py) through one
`Application` of the call (application.py) handed to the linear primitive of rules.py.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp

from .application import Application, Slot
from .entry_rules import EntryRules, compile_entry, compile_formula, output_variable
from .errors import RealOnlyDerivative
from .normalize import Kind, normalize
from .rules import differentiable_call
from .schema import FunctionSchema
from .spec import Entry

__all__ = ["Op", "compile_formula", "RealOnlyDerivative"]


def _inexact(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _is_complex(v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_is_complex(x) for x in v)
    return isinstance(v, complex) or (hasattr(v, "dtype") and jnp.issubdtype(v.dtype, jnp.complexfloating))


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
        # `calls`: a formula's call of another entry's op runs that op (see `translate`).
        self.calls = calls
        self.rules: EntryRules = compile_entry(entry, calls)

    # -- what the rules decided, by name ------------------------------------------------------
    @property
    def differentiable_inputs(self) -> tuple[str, ...]:
        """The Tensor arguments the entry gives a derivative for."""
        return self.rules.differentiable_inputs

    @property
    def non_differentiable(self) -> frozenset[str]:
        """The arguments the entry declares `non_differentiable`."""
        return self.rules.non_differentiable

    @property
    def real_only(self) -> tuple[str, frozenset[str]] | None:
        """(why, variables) where the entry's release wrote its formulas for real tensors only."""
        return self.rules.real_only

    @property
    def foreach(self) -> bool:
        """A `_foreach_*` entry: its formulas state each list element's derivative."""
        return self.rules.foreach

    # -- description -----------------------------------------------------------------------
    def _output_names(self) -> list[str]:
        return [output_variable(self.schema, r.name) for r in self.schema.returns if r.name]

    @property
    def formulas(self) -> dict[str, str]:
        """Which formula text each mode evaluates: {'vjp': ..., 'jvp': ...}."""
        e = self.entry
        if self.rules.backward:
            vjp = "backward formula (" + "; ".join(f"{f.key}: line {f.location.line}" for f in e.backward) + ")"
        elif self.rules.forward:
            vjp = "transpose of the result formula"
        else:
            vjp = "none"
        autos = (Kind.AUTO_ELEMENT_WISE, Kind.AUTO_LINEAR)
        kinds = {d.kind.value if d.kind in autos else "formula" for d in self.derivatives.forward}
        if not e.forward:
            jvp = "transpose of the backward formula" if self.rules.backward else "none"
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

    def apply(self, args: tuple, kwargs: dict) -> tuple[Application, list]:
        """This call's Application and its arrays (Tensor arguments, then Tensor[] elements, as jnp arrays)."""
        if self.impl is None:
            raise NotImplementedError(f"aten::{self.name} has no forward implementation in jaxderiv yet")
        bound = self.bind(args, kwargs)
        slots, xs = [], []
        for a in self.schema.arguments:
            value = bound[a.name]
            if a.is_tensor and value is not None:
                bound[a.name] = value = jnp.asarray(value)
                slots.append(Slot(a.name, None))
                xs.append(value)
            elif a.is_tensor_list:
                bound[a.name] = value = [None if v is None else jnp.asarray(v) for v in value]
                for i, v in enumerate(value):
                    if v is not None:
                        slots.append(Slot(a.name, i))
                        xs.append(v)
            elif a.type.base == "Generator" and isinstance(value, jax.Array):
                # A key is an operand like a tensor, never a value the rules close over: JAX may
                # run them after the trace that made the key has ended (`grad` of a jitted step).
                slots.append(Slot(a.name, None))
                xs.append(value)
        return Application(self, bound, tuple(slots), xs), xs

    def output_differentiable(self, /, *args, **kwargs) -> tuple[bool, ...]:
        """Which outputs of this call carry derivatives (dtype and `output_differentiability`)."""
        return self.apply(args, kwargs)[0].flags

    def __call__(self, /, *args, **kwargs):  # positional-only: ATen arguments are often named `self`
        return self._call(args, kwargs, hold_undifferentiated=False)

    def call_in_formula(self, /, *args, **kwargs):
        """This op as another entry's formula calls it, as PyTorch's graph holds it: no
        derivative flows into the inputs it gives no formula for (softmax's double backward
        reaches `self`, not `output`), but its own formulas read their traced values, so
        differentiating those formulas again reaches them (the formula code is differentiable
        in PyTorch too). Called directly, such an input's derivative is refused instead."""
        return self._call(args, kwargs, hold_undifferentiated=True)

    def _call(self, args: tuple, kwargs: dict, hold_undifferentiated: bool):
        call, xs = self.apply(args, kwargs)
        if not any(s.arg in self.differentiable_inputs for s in call.slots):
            return call.pack([jax.lax.stop_gradient(y) if _inexact(y) else y for y in call.primal(*xs)])
        held = [hold_undifferentiated and s.arg not in self.differentiable_inputs for s in call.slots]
        return call.pack(differentiable_call(call.rule, call.primal, xs, held))

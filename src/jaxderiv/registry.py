"""A Registry turns a Spec into ops, built on first use; `aten` mirrors torch.ops.aten naming."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import keyword
import math
import threading
from typing import Any, Callable

import jax

from . import forward as _forward
from . import helpers as _helpers
from .errors import JaxderivError, SchemaError
from .normalize import Kind, normalize
from .op import Op
from .schema import Argument, Type
from .spec import Entry, Spec, load_seed_spec, load_spec

__all__ = [
    "Registry",
    "default_registry",
    "seed_registry",
    "op",
    "ForwardSignatureError",
    "check_forward_signature",
    "forward_signature_mismatches",
]


class Registry:
    """The ops of one spec: `Registry(spec).op("add.Tensor")`, or `.aten.add.Tensor`."""

    def __init__(self, spec: Spec | None = None):
        _helpers.load()
        self.spec = spec if spec is not None else load_spec()
        self._ops: dict[str, Op] = {}
        self._extended: dict[tuple, Op] = {}
        self._lock = threading.Lock()
        self.aten = _AtenNamespace(self)

    def op(self, name: str) -> Op:
        """The op for an entry, by its ATen name: `add.Tensor`, `abs` (also `abs.default`)."""
        if name.endswith(".default"):
            name = name[: -len(".default")]
        with self._lock:
            found = self._ops.get(name)
            if found is None:
                entry = self.spec[name]
                impl = _forward.implementation(name)
                if impl is not None:
                    check_forward_signature(entry, impl)  # against this registry's spec, as torchgen checks at load
                found = self._ops[name] = Op(entry, impl, calls=self._entry_call)
            return found

    def op_with_keyword_tensors(self, name: str, forward: Callable, *extra: str) -> Op:
        """Entry `name`'s op (its formulas) over `forward`, which takes the keyword-only Tensor
        arguments `extra` beyond the schema's: what a variant draws for itself (dropout's mask).
        They must be arguments, not values the forward closes over: JAX may run an op's rule
        after the trace that drew them has ended (`grad` of a jitted step), and a closed-over
        traced value would then be stale. They are never differentiated."""
        with self._lock:
            found = self._extended.get((name, forward, extra))
            if found is None:
                entry = self.spec[name]
                added = tuple(Argument(n, Type.parse("Tensor"), kwarg_only=True) for n in extra)
                schema = dataclasses.replace(entry.schema, arguments=entry.schema.arguments + added)
                found = Op(dataclasses.replace(entry, schema=schema), forward, calls=self._entry_call)
                self._extended[(name, forward, extra)] = found
            return found

    def _entry_call(self, name: str):
        """What a formula's call of the backward op `name` runs when this spec has an entry
        for it with formulas: that op, resolved when called (an entry may call itself), so
        that differentiating a backward formula applies the called entry's double-backward
        formulas, as PyTorch does (batch norm's, softmax's, the losses' and poolings').
        A call of an entry whose every formula is `not_implemented` runs that op too, so that
        differentiating it raises the spec's NotImplementedDerivative.
        Other calls (`exp`, `.rsqrt()`) stay plain JAX code of the formula: their derivatives
        are the elementary ones, which 1.7's real-only formulas would get wrong on complex."""
        impl = _forward.implementation(name)
        if impl is None or name not in self.spec:
            return None
        stated = any(d.kind is not Kind.NOT_IMPLEMENTED for d in normalize(self.spec[name]).backward)
        if "_backward" not in name:
            # A helper op whose own derivative the spec declares not implemented
            # (`_standard_gamma_grad`): differentiating the call says so, as PyTorch does.
            if stated or not self.spec[name].backward:
                return None
        elif not stated:
            return None  # no double-backward formula: differentiating the call is all there is

        arguments = self.spec[name].schema.arguments

        @functools.wraps(impl)  # the forward's signature: the translator checks arities against it
        def call(*args):
            op = self.op(name)
            # An output a mask left undefined (None, as ATen's backward ops return) has no
            # array to differentiate: such a call runs the forward itself.
            if any(
                y is None for y in jax.tree.leaves(_output_shapes(impl, arguments, args), is_leaf=lambda y: y is None)
            ):
                given = op.differentiable_inputs  # the others carry no gradient in PyTorch's graph
                return impl(
                    *[
                        v if a.name in given or not a.is_tensor or v is None else jax.lax.stop_gradient(v)
                        for a, v in zip(arguments, args)
                    ]
                )
            # C++ passes every argument by position; the op takes kwarg-only ones by name.
            positional = [v for a, v in zip(arguments, args) if not a.kwarg_only]
            named = {a.name: v for a, v in zip(arguments, args) if a.kwarg_only}
            return op.call_in_formula(*positional, **named)

        return call

    def names(self) -> list[str]:
        """The ATen names of every entry of the spec, in file order."""
        return [e.name for e in self.spec]

    def __repr__(self) -> str:
        return f"Registry({len(self.spec)} entries from {', '.join(self.spec.files)})"


# -- the forward's signature against the schema ---------------------------------------------


class ForwardSignatureError(JaxderivError, TypeError):
    """A forward implementation cannot take its entry's schema arguments as the registry passes
    them (positionally, in schema order), or names or defaults them otherwise than the schema."""


# Forwards shared by releases whose schemas name an argument differently: (entry, the argument
# as an older schema names it) -> the forward's parameter, named as the newest schema names it.
# Each registry checks against its own spec; these are the older specs' accepted names.
RENAMED_ARGUMENTS: dict[tuple[str, str], str] = {
    # 1.7: (..., Scalar input_scale, Tensor output); 2.14: (..., bool is_result, Tensor
    # self_or_result). The forward tells the two apart by the number of arguments.
    ("elu_backward", "output"): "is_result",
    ("linalg_inv_ex", "self"): "A",  # 1.10's schema names it self; 2.14's A
    ("_cdist_backward", "grad"): "grad_output",  # 1.7's schema names it grad; 2.14's grad_output
    ("_pdist_backward", "grad"): "grad_output",  # 1.7's schema names it grad; 2.14's grad_output
    # 1.7 passes the forward's input (`Tensor self`) where 2.14 passes its dtype: the forward takes either
    ("_softmax_backward_data", "self"): "input_dtype",
    ("_log_softmax_backward_data", "self"): "input_dtype",
}

# Parameters whose Python default stands for what another release's schema writes otherwise:
# (entry, argument) -> why the default check does not apply there.
DEFAULTS_OF_OTHER_RELEASES: dict[tuple[str, str], str] = {
    ("slice.Tensor", "start"): "1.7's `int start=0`; 2.14's `SymInt? start=None` means 0",
    ("slice.Tensor", "end"): "1.7's `int end=9223372036854775807`; 2.14's `SymInt? end=None` means the size",
}


def _where(forward: Callable) -> str:
    """`module:line` of a forward (of the function a `functools.wraps` wrapper wraps)."""
    fn = inspect.unwrap(forward)
    code = getattr(fn, "__code__", None)
    line = f":{code.co_firstlineno}" if code is not None else ""
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))} ({_source_file(fn)}{line})"


def _source_file(fn: Callable) -> str:
    try:
        return inspect.getsourcefile(fn) or "?"
    except TypeError:  # a builtin or a callable object without source
        return "?"


def _expected_name(entry: Entry, argument: Argument) -> tuple[str, ...]:
    """The parameter names that may take `argument`: its name (`from_` for a Python keyword),
    and the newer name RENAMED_ARGUMENTS gives an argument an older release named otherwise."""
    names = (argument.name + "_",) if keyword.iskeyword(argument.name) else (argument.name,)
    renamed = RENAMED_ARGUMENTS.get((entry.name, argument.name))
    return names + ((renamed,) if renamed is not None else ())


def _same_default(python: Any, schema: Any) -> bool:
    """Whether a Python default means the schema's: equal values (2 is 2.0), a list default given
    as its repeated element (`int[2] padding=0` as 0); bools only as bools, None only as None."""
    if isinstance(schema, tuple):
        if isinstance(python, (tuple, list)):
            return len(python) == len(schema) and all(_same_default(p, s) for p, s in zip(python, schema))
        return len(schema) > 0 and all(_same_default(python, s) for s in schema)
    if isinstance(python, (tuple, list)) or python is None or schema is None:
        return python is schema
    if isinstance(python, bool) or isinstance(schema, bool):
        return isinstance(python, bool) and isinstance(schema, bool) and python == schema
    if isinstance(python, (int, float)) and isinstance(schema, (int, float)):
        return python == schema or (math.isnan(python) and math.isnan(schema))
    return type(python) is type(schema) and python == schema


def forward_signature_mismatches(entry: Entry, forward: Callable) -> list[str]:
    """What keeps `forward` from taking `entry`'s schema arguments positionally, in schema
    order, under the schema's names and defaults: one line per differing parameter, [] if none.

    - arity: at least as many positional parameters as the schema has arguments, or `*args`
      for the rest; parameters past the schema's, and keyword-only ones, need defaults;
    - names: each positional parameter is named as the schema's argument at its position
      (`from_` for `from`; RENAMED_ARGUMENTS for a forward shared with an older release);
    - defaults: a parameter with a Python default agrees with the schema's default, where
      the schema has one (DEFAULTS_OF_OTHER_RELEASES lists the deliberate exceptions)."""
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError) as e:  # no signature to read (a builtin without text)
        return [f"its signature cannot be read: {e}"]
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    arguments = entry.schema.arguments
    out: list[str] = []
    if len(positional) < len(arguments) and not variadic:
        missing = ", ".join(a.name for a in arguments[len(positional) :])
        out.append(
            f"takes {len(positional)} positional parameter(s), the schema passes {len(arguments)} arguments "
            f"(no parameter for {missing})"
        )
    for i, (param, argument) in enumerate(zip(positional, arguments)):
        accepted = _expected_name(entry, argument)
        if param.name not in accepted:
            out.append(
                f"parameter {i} is named {param.name!r}, the schema's argument {i} is {accepted[0]!r} ({argument})"
            )
        if param.default is param.empty or argument.default is None:
            continue
        if (entry.name, argument.name) in DEFAULTS_OF_OTHER_RELEASES:
            continue
        try:
            schema_default = argument.default_value()
        except SchemaError as e:
            out.append(f"parameter {param.name!r}: the schema's default {argument.default!r} cannot be read: {e}")
            continue
        if not _same_default(param.default, schema_default):
            out.append(
                f"parameter {param.name!r} defaults to {param.default!r}, the schema's argument {argument} "
                f"to {schema_default!r}"
            )
    for param in positional[len(arguments) :]:
        if param.default is param.empty:
            out.append(f"parameter {param.name!r}, past the schema's {len(arguments)} arguments, has no default")
    for param in params:
        if param.kind is param.KEYWORD_ONLY and param.default is param.empty:
            out.append(f"keyword-only parameter {param.name!r} has no default: the schema's arguments come by position")
    return out


def check_forward_signature(entry: Entry, forward: Callable) -> None:
    """ForwardSignatureError, naming the entry (file:line), the forward (module:line) and each
    differing parameter, where `forward` cannot take `entry`'s schema arguments as its
    parameters (`forward_signature_mismatches`)."""
    problems = forward_signature_mismatches(entry, forward)
    if problems:
        raise ForwardSignatureError(
            f"the forward of {entry.name!r}, {_where(forward)}, does not match its schema "
            f"{entry.schema}: " + "; ".join(problems),
            entry.location,
        )


def _output_shapes(impl, arguments, args):
    """The forward's outputs as shapes, tracing only its Tensor arguments (masks stay static)."""
    traced = [i for i, a in enumerate(arguments[: len(args)]) if a.is_tensor or a.is_tensor_list]

    def run(*xs):
        full = list(args)
        for i, x in zip(traced, xs):
            full[i] = x
        return impl(*full)

    return jax.eval_shape(run, *[args[i] for i in traced])


class _AtenNamespace:
    """`aten.add.Tensor`, `aten.abs.default`: packets of overloads, like torch.ops.aten."""

    def __init__(self, registry: Registry):
        self._registry = registry

    def __getattr__(self, base: str) -> "_OverloadPacket":
        if base.startswith("__"):
            raise AttributeError(base)
        overloads = [e.name for e in self._registry.spec if e.schema.name == base]
        if not overloads:
            raise AttributeError(f"no ATen op {base!r} in {self._registry!r}")
        return _OverloadPacket(self._registry, base)

    def __dir__(self):
        return sorted({e.schema.name for e in self._registry.spec})


class _OverloadPacket:
    def __init__(self, registry: Registry, base: str):
        self._registry, self._base = registry, base

    def __getattr__(self, overload: str) -> Op:
        if overload.startswith("__"):
            raise AttributeError(overload)
        name = self._base if overload == "default" else f"{self._base}.{overload}"
        try:
            return self._registry.op(name)
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def __call__(self, /, *args, **kwargs):
        return self.default(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<aten packet {self._base}>"


_default: Registry | None = None
_seeds: Registry | None = None


def default_registry() -> Registry:
    """The registry of the default spec (built once): torch 2.14.1's schemas and formulas, with
    the seed files' entries for the ops it no longer has. `jaxderiv.aten` is its namespace."""
    global _default
    if _default is None:
        _default = Registry()
    return _default


def seed_registry() -> Registry:
    """The registry of the seed files' union (PyTorch 1.7's and 1.10's, built once): what
    `python -m jaxderiv check` verifies by default."""
    global _seeds
    if _seeds is None:
        _seeds = Registry(load_seed_spec())
    return _seeds


def op(name: str) -> Op:
    """`jaxderiv.op("add.Tensor")`: an op of the default registry."""
    return default_registry().op(name)

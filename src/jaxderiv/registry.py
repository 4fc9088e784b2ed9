"""A Registry turns a Spec into ops, built on first use; `aten` mirrors torch.ops.aten naming."""

from __future__ import annotations

import functools
import threading

import jax

from . import forward as _forward
from . import helpers as _helpers
from .normalize import Kind, normalize
from .op import Op
from .spec import Spec, load_seed_spec, load_spec

__all__ = ["Registry", "default_registry", "seed_registry", "op"]


class Registry:
    """The ops of one spec: `Registry(spec).op("add.Tensor")`, or `.aten.add.Tensor`."""

    def __init__(self, spec: Spec | None = None):
        _helpers.load()
        self.spec = spec if spec is not None else load_spec()
        self._ops: dict[str, Op] = {}
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
                found = self._ops[name] = Op(entry, _forward.implementation(name), calls=self._entry_call)
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

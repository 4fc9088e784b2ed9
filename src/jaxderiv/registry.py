"""A Registry turns a Spec into ops, built on first use; `aten` mirrors torch.ops.aten naming."""

from __future__ import annotations

import threading

from . import forward as _forward
from . import helpers as _helpers
from .op import Op
from .spec import Spec, load_spec

__all__ = ["Registry", "default_registry", "op"]


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
                found = self._ops[name] = Op(entry, _forward.implementation(name))
            return found

    def names(self) -> list[str]:
        """The ATen names of every entry of the spec, in file order."""
        return [e.name for e in self.spec]

    def __repr__(self) -> str:
        return f"Registry({len(self.spec)} entries from {', '.join(self.spec.files)})"


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


def default_registry() -> Registry:
    """The registry of the shipped spec files (built once)."""
    global _default
    if _default is None:
        _default = Registry()
    return _default


def op(name: str) -> Op:
    """`jaxderiv.op("add.Tensor")`: an op of the default registry."""
    return default_registry().op(name)

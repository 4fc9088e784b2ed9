"""`to_nnx`: an imported torch model as a Flax NNX module (needs the `flax` extra).

The weights become NNX variables named as torch names them, so the module composes with
`nnx.Optimizer`, `nnx.jit`, `nnx.split`/`merge` and sits inside a bigger NNX model; each call
runs the imported graph (`ImportedModel.apply`) and writes its buffer updates back, as NNX
layers do. A torch.export graph is traced in one mode: `.train()`/`.eval()` choose between a
training-mode import and an eval-mode one (`eval_model=`), they cannot change a graph.
"""

from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from ._model import ImportedModel
from .resolve import NodeKind

__all__ = ["ImportedNNX", "to_nnx"]


def _mode_steps(model: ImportedModel) -> list[str]:
    """What makes the graph's result depend on torch's training flag: random nodes and buffer writes."""
    random = [f"{s.name} ({s.op})" for s in model.program.steps if s.kind is NodeKind.RANDOM]
    writes = [f"buffer {t!r} updated" for _, role, t in model.program.outputs if role == "buffer"]
    return random + writes


def _written_buffers(model: ImportedModel) -> set[str]:
    return {t for _, role, t in model.program.outputs if role == "buffer" and t is not None}


def _same_state(a: ImportedModel, b: ImportedModel) -> None:
    for kind, x, y in (("parameter", a.params, b.params), ("buffer", a.buffers, b.buffers)):
        if set(x) != set(y):
            raise ValueError(
                f"eval_model holds other {kind}s than the model: only in the model {sorted(set(x) - set(y))}, "
                f"only in eval_model {sorted(set(y) - set(x))}"
            )
        for name in x:
            if (x[name].shape, x[name].dtype) != (y[name].shape, y[name].dtype):
                raise ValueError(
                    f"{kind} {name!r}: the model has {x[name].dtype}{list(x[name].shape)}, "
                    f"eval_model {y[name].dtype}{list(y[name].shape)}"
                )
    if a.aliases != b.aliases:
        raise ValueError(f"tied weights differ: the model ties {a.aliases}, eval_model {b.aliases}")


class ImportedNNX(nnx.Module):
    """An ImportedModel as an NNX module: `nnx.Param` per parameter, `nnx.BatchStat` per buffer
    the graph updates (running statistics), `nnx.Variable` per other buffer.

    Variables sit at the torch name's path (`module.classifier["weight"]` for "classifier.weight";
    `nnx.state(module)` mirrors the state_dict); a tied weight is one Param under its first name.
    Calling it runs the training graph, or `eval_model`'s graph after `.eval()`, and writes the
    updated buffers back. Build it with `to_nnx`.

    >>> module = to_nnx(jt.from_module(torch.nn.Linear(3, 2), torch.randn(4, 3)))
    >>> module(jnp.ones((4, 3))).shape, module.weight.shape
    ((4, 2), (2, 3))

    Attributes:
      deterministic, use_running_average: eval mode when True (set together by `.train()`/`.eval()`).
    """

    def __init__(
        self,
        model: ImportedModel,
        *,
        eval_model: ImportedModel | None = None,
        rngs: nnx.Rngs | None = None,
        rng_collection: str = "dropout",
    ):
        if eval_model is not None:
            _same_state(model, eval_model)
        self._graphs = nnx.static((model, eval_model))
        self._mode_steps = nnx.static(tuple(_mode_steps(model)))
        self._random = nnx.static(
            any(s.kind is NodeKind.RANDOM for g in (model, eval_model) if g for s in g.program.steps)
        )
        self._names = nnx.static((tuple(model.params), tuple(model.buffers)))
        writes = (_written_buffers(model), _written_buffers(eval_model) if eval_model is not None else set())
        self._writes = nnx.static(tuple(frozenset(w) for w in writes))
        written = writes[0] | writes[1]
        for name, value in model.params.items():
            self._place(name, nnx.Param(jnp.asarray(value)))
        for name, value in model.buffers.items():
            kind = nnx.BatchStat if name in written else nnx.Variable
            self._place(name, kind(jnp.asarray(value)))
        self.rngs = rngs[rng_collection].fork() if rngs is not None else nnx.data(None)
        self.deterministic = False
        self.use_running_average = False

    _OWN = ("rngs", "deterministic", "use_running_average", "_graphs", "_mode_steps", "_random", "_names", "_writes")

    def _place(self, name: str, variable: nnx.Variable) -> None:
        """Put variable at name's path: the root's attribute, then nnx.Dicts by name part."""
        first, *rest = name.split(".")
        if hasattr(ImportedNNX, first) or first in self._OWN:
            raise ValueError(f"state_dict name {name!r}: {first!r} is a name of ImportedNNX itself")
        if not rest:
            setattr(self, first, variable)
            return
        if not hasattr(self, first):
            setattr(self, first, nnx.Dict())
        node = getattr(self, first)
        for part in rest[:-1]:
            if part not in node:
                node[part] = nnx.Dict()
            node = node[part]
        node[rest[-1]] = variable

    def variable(self, name: str) -> nnx.Variable:
        """The NNX variable of a state_dict name (a tied name gives its shared Param).

        >>> module.variable("weight")[...].shape  # torch.nn.Linear(3, 2)'s
        (2, 3)
        """
        model = self._graphs[0]
        parts = model.aliases.get(name, name).split(".")
        node: Any = self
        try:
            for part in parts:
                node = getattr(node, part) if node is self else node[part]
        except (AttributeError, KeyError):
            raise KeyError(f"no variable named {name!r} in the imported model") from None
        return node

    def weights(self) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
        """`(params, buffers)` keyed by state_dict name, as `ImportedModel.apply` takes them: for
        `jt.save_safetensors`, `jt.save_checkpoint`, `jt.export_inference`.

        >>> jt.save_safetensors(imported, "model.safetensors", *module.weights())
        """
        params, buffers = self._names
        return {n: self.variable(n)[...] for n in params}, {n: self.variable(n)[...] for n in buffers}

    def __call__(self, *inputs, key: jax.Array | None = None, **kwinputs):
        """The graph's outputs; its buffer updates are written into the BatchStats. `key` overrides
        the rngs for this call's dropout."""
        model, eval_model = self._graphs
        if self.deterministic != self.use_running_average:
            raise ValueError(
                f"deterministic={self.deterministic} with use_running_average={self.use_running_average}: "
                "an imported graph runs in one torch mode, set both with .train() or .eval()"
            )
        if self.deterministic:
            if eval_model is None and self._mode_steps:
                raise RuntimeError(
                    "eval mode, but the graph was exported in training mode ("
                    + ", ".join(self._mode_steps[:3])
                    + "): import the module again after module.eval() and pass it as to_nnx(..., eval_model=)"
                )
            model = eval_model or model
        writes = self._writes[1] if model is eval_model else self._writes[0]
        if key is None and self._random and not self.deterministic:
            if self.rngs is None:
                raise ValueError("the graph draws random numbers (dropout): give to_nnx rngs=nnx.Rngs(dropout=0)")
            key = self.rngs()
        params, buffers = self.weights()
        out, new_buffers = model.apply(params, buffers, *inputs, key=key, **kwinputs)
        for name in writes:
            var, value = self.variable(name), new_buffers[name]
            var[...] = jnp.asarray(value, var.dtype)
        return out

    def state_dict(self) -> dict[str, np.ndarray]:
        """The current weights as a torch state_dict of NumPy arrays, tied names included:
        `torch_module.load_state_dict({k: torch.from_numpy(v) for k, v in module.state_dict().items()})`."""
        params, buffers = self.weights()
        return self._graphs[0].state_dict(params, buffers)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> ImportedNNX:
        """Set the variables from a state_dict (NumPy or JAX arrays, e.g. a safetensors file's),
        checking each tensor's shape and dtype; with strict, missing and unexpected names raise.

        >>> module.load_state_dict(safetensors.numpy.load_file("model.safetensors"))
        """
        from ._checkpoint import match_state

        params, buffers = match_state(self._graphs[0], state_dict, strict=strict, source="the state_dict")
        for name, value in {**params, **buffers}.items():
            self.variable(name)[...] = value
        return self


def to_nnx(
    model: ImportedModel,
    *,
    eval_model: ImportedModel | None = None,
    rngs: nnx.Rngs | None = None,
    rng_collection: str = "dropout",
) -> ImportedNNX:
    """An imported model as a Flax NNX module (see `ImportedNNX`): train it with `nnx.Optimizer`
    under `nnx.jit`, `nnx.split`/`merge` it, put it inside a bigger NNX model.

    torch.export traces one mode. `model` runs in train mode; `eval_model`, the same module
    imported after `module.eval()`, runs after `.eval()` (without it, `.eval()` refuses a graph
    with dropout or BatchNorm updates, and runs any other graph unchanged). `rngs` feed the
    graph's dropout (`rngs[rng_collection]`, as `nnx.Dropout`).

    >>> module = jt.to_nnx(jt.from_module(net.train(), x), eval_model=jt.from_module(net.eval(), x),
    ...                    rngs=nnx.Rngs(dropout=0))
    >>> optimizer = nnx.Optimizer(module, optax.adam(1e-3), wrt=nnx.Param)
    """
    return ImportedNNX(model, eval_model=eval_model, rngs=rngs, rng_collection=rng_collection)

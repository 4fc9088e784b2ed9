"""`from_exported` / `from_module`: a torch model as a pure JAX function over its state."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.utils._pytree as torch_pytree

from ..registry import Registry
from ._loops import find_loops
from ._program import Program, UnsupportedGraphError, UnsupportedNode, build_program, decompose
from .resolve import torch_registry
from ._export import export_module
from ._shapes import InputShapes
from ._values import to_jax_array

__all__ = ["ImportedModel", "export", "from_exported", "from_module", "unsupported"]


@dataclasses.dataclass(frozen=True, eq=False)
class ImportedModel:
    """A torch model whose every ATen node runs a jaxderiv op.

    `apply(params, buffers, *inputs, key=None) -> (outputs, new_buffers)` is pure: it works
    under `jit`, `grad`, `jvp`, `vmap` and `hessian`, and its gradients are the formulas of
    the installed torch's derivatives.yaml. `params` and `buffers` are keyed by the module's
    `state_dict` names; a tied weight (GPT-2's `lm_head.weight` is `transformer.wte.weight`)
    is one parameter, under its first name, and `aliases` maps the other names to it.

    Attributes:
      params: trainable tensors, name -> jax array.
      buffers: running statistics and other persistent state, name -> jax array; parameters
        torch does not train (`requires_grad=False`) are here too, so no optimizer moves them.
      constants: non-persistent buffers and lifted constants; not trained, not returned.
      aliases: tied state_dict names -> the name they share a tensor with.
      program: the resolved graph (`program.steps`: node, op, how it runs, user's line).
      shapes: the input shapes the graph runs (`shapes.describe()`); others are refused.
    """

    params: dict[str, jax.Array]
    buffers: dict[str, jax.Array]
    constants: dict[str, jax.Array]
    aliases: dict[str, str]
    program: Program
    exported: Any  # the decomposed torch.export.ExportedProgram
    _in_spec: Any
    _out_spec: Any
    shapes: InputShapes | None = None

    def apply(self, params, buffers, /, *inputs, key=None, **kwinputs):
        """Run the graph: `(outputs, new_buffers)`; outputs keep the module's structure
        (tuples, lists, dicts; a transformers ModelOutput becomes a dict)."""
        values = self._placeholder_values(params, buffers, inputs, kwinputs)
        env = self.program.run(values, key=key)
        user, new_buffers = [], dict(buffers)
        for value, role, target in self.program.outputs:
            value = env[value.name] if hasattr(value, "name") else value
            if role == "user":
                user.append(value)
            elif role == "buffer":
                new_buffers[target] = value
            elif role == "user_input_mutation":
                continue  # torch writes it into the caller's tensor; a pure function cannot
            elif role not in ("token",):
                raise NotImplementedError(f"exported output of kind {role!r} is not supported")
        return _unflatten(self._out_spec, iter(user)), new_buffers

    def __call__(self, *inputs, key=None, **kwinputs):
        """The outputs with the imported weights (the buffers' updates are dropped)."""
        return self.apply(self.params, self.buffers, *inputs, key=key, **kwinputs)[0]

    def with_remat(self, policy: Any = True) -> ImportedModel:
        """The same model with activation checkpointing of its rolled loops (`program.loops`: a
        decoder's layers, an RNN's time steps): the backward pass recomputes each copy's
        activations from its carry instead of keeping them, so the temporary memory of a train
        step stays flat in depth. policy: True (save only the carry between copies), a
        `jax.checkpoint_policies` member (`dots_with_no_batch_dims_saveable` keeps the matmuls),
        or None to turn it off. Gradients are the same formulas, evaluated again.

        >>> deep = jt.from_module(llama, ids).with_remat()
        """
        return dataclasses.replace(self, program=dataclasses.replace(self.program, remat=policy))

    def _placeholder_values(self, params, buffers, inputs, kwinputs) -> dict[str, Any]:
        leaves = _user_leaves(self._in_spec, inputs, kwinputs)
        if self.shapes is not None:
            arrays = [x for x in leaves if hasattr(x, "shape")]
            self.shapes.check([(name, tuple(x.shape)) for (name, _), x in zip(self.shapes.inputs, arrays)])
        values, user = {}, iter(leaves)
        for node, role, target in self.program.inputs:
            state = cast(str, target)  # the state_dict name: None only for the roles that do not read it (user, token)
            if role == "parameter":
                state = self.aliases.get(state, state)
                values[node] = params[state] if state in params else buffers[state]  # frozen: a buffer
            elif role == "buffer":
                values[node] = buffers[state] if state in buffers else self.constants[state]
            elif role == "constant":
                values[node] = self.constants[state]
            elif role == "user":
                try:
                    values[node] = next(user)
                except StopIteration:
                    raise TypeError(f"the exported program takes {len(leaves)}+ inputs; too few were given") from None
            elif role == "token":
                values[node] = jnp.zeros((0,))
            else:
                raise NotImplementedError(f"exported input of kind {role!r} is not supported")
        return values

    def state_dict(self, params=None, buffers=None) -> dict[str, np.ndarray]:
        """Weights back as a torch-style state_dict of NumPy arrays, tied names included:
        `module.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})`."""
        params = self.params if params is None else params
        buffers = self.buffers if buffers is None else buffers
        out = {}
        for name in self._state_names:
            if name in params or name in self.aliases:
                out[name] = np.asarray(params[self.aliases.get(name, name)])
            elif name in buffers:
                out[name] = np.asarray(buffers[name])
        return out

    def load_state_dict(self, state_dict) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
        """`(params, buffers)` from a state_dict of torch tensors or arrays (e.g. a checkpoint)."""

        def conv(v):
            return to_jax_array(v) if isinstance(v, torch.Tensor) else jnp.asarray(v)

        params = {k: conv(state_dict[k]) for k in self.params}
        buffers = {k: conv(state_dict[k]) if k in state_dict else v for k, v in self.buffers.items()}
        return params, buffers

    @property
    def _state_names(self) -> list[str]:
        return [t for _, role, t in self.program.inputs if role in ("parameter", "buffer") and t is not None]


def _user_leaves(in_spec, inputs, kwinputs) -> list:
    """The user inputs flattened as torch flattened them at export (kwargs in export order)."""
    if in_spec is not None and kwinputs:
        kw_spec = in_spec.child(1)
        order = list(kw_spec.context) if kw_spec.context else []
        missing = set(kwinputs) - set(order)
        if missing:
            raise TypeError(f"unexpected keyword input(s) {sorted(missing)}; the program was exported with {order}")
        kwinputs = {k: kwinputs[k] for k in order if k in kwinputs}
    leaves, spec = torch_pytree.tree_flatten((tuple(inputs), dict(kwinputs)))
    if in_spec is not None and spec != in_spec:
        raise TypeError(
            f"inputs do not match the exported program's structure:\n  given    {spec}\n  exported {in_spec}"
        )
    return [jnp.asarray(x) if isinstance(x, (np.ndarray, jax.Array)) else x for x in leaves if x is not None]


def _unflatten(spec, leaves):
    """Torch's output structure with JAX containers (a ModelOutput -> dict)."""
    if spec is None or spec.is_leaf():
        return next(leaves)
    children = [_unflatten(c, leaves) for c in spec.children()]
    if spec.type in (tuple, list):
        return spec.type(children)
    if (
        spec.type is dict
        or isinstance(spec.context, (list, tuple))
        and len(spec.context) == len(children)
        and all(isinstance(k, str) for k in spec.context)
    ):
        return dict(zip(spec.context, children))
    if hasattr(spec.type, "_fields"):  # namedtuple
        return spec.type(*children)
    return tuple(children)


def _tie_groups(ep: torch.export.ExportedProgram) -> dict[str, str]:
    """state_dict names that hold one tensor -> the first of them."""
    first: dict[tuple, str] = {}
    aliases = {}
    for spec in ep.graph_signature.input_specs:
        if spec.target is None or spec.target not in ep.state_dict:
            continue
        t = ep.state_dict[spec.target]
        ident = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if ident in first and first[ident] != spec.target:
            aliases[spec.target] = first[ident]
        else:
            first.setdefault(ident, spec.target)
    return aliases


def _require_x64(tensors) -> None:
    wide = sorted({str(t.dtype) for t in tensors if t.dtype in (torch.float64, torch.complex128)})
    if wide and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]  # each flag is a Config attribute set at run time
        raise TypeError(
            f"the model holds {', '.join(wide)} tensors, but JAX runs in 32 bits: "
            "call jax.config.update('jax_enable_x64', True) before importing it"
        )


def from_exported(
    ep: torch.export.ExportedProgram, *, registry: Registry | None = None, roll_loops: bool = True
) -> ImportedModel:
    """An ImportedModel of a `torch.export.ExportedProgram` (training or inference IR).

    Every ATen node runs the jaxderiv op of that overload from `registry` (default: the
    installed torch's own derivatives.yaml). Raises UnsupportedGraphError listing every node
    that cannot run, each with the user's source line. roll_loops: run the loops torch.export
    unrolled (an RNN's time steps) as `jax.lax.scan`s of the same steps, so that compile time
    does not grow with their length (`program.loops`; see `jaxderiv.torch._loops`)."""
    registry = registry or torch_registry()
    ep = decompose(ep, registry)
    program, bad = build_program(ep, registry)
    if bad:
        raise UnsupportedGraphError(bad)
    if roll_loops:
        program = dataclasses.replace(program, loops=find_loops(program.steps, [r for r, _, _ in program.outputs]))
    _require_x64(list(ep.state_dict.values()) + [t for t in ep.constants.values() if isinstance(t, torch.Tensor)])
    aliases = _tie_groups(ep)
    sig = ep.graph_signature
    # A parameter torch does not train (`requires_grad=False`: Whisper's sinusoidal positions, a
    # frozen backbone) is state, not a parameter: an optimizer over `params` leaves it as torch's does.
    frozen = [t for t in sig.parameters if t not in aliases and not ep.state_dict[t].requires_grad]
    params = {t: to_jax_array(ep.state_dict[t], t) for t in sig.parameters if t not in aliases and t not in frozen}
    buffers = {t: to_jax_array(ep.state_dict[t], t) for t in [*frozen, *sig.buffers] if t in ep.state_dict}
    constants = {k: to_jax_array(v, k) for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}
    return ImportedModel(
        params,
        buffers,
        constants,
        aliases,
        program,
        ep,
        ep.call_spec.in_spec,
        ep.call_spec.out_spec,
        InputShapes.of(ep),
    )


def export(
    module: torch.nn.Module, *args, dynamic_shapes=None, branches: str = "example", **kwargs
) -> torch.export.ExportedProgram:
    """torch.export's training IR (BatchNorm in training mode, dropout, buffer updates kept);
    `dynamic_shapes` and `branches` as in `from_module`."""
    return export_module(module, tuple(args), kwargs, dynamic_shapes, branches)


def from_module(
    module: torch.nn.Module,
    /,
    *example_args,
    registry: Registry | None = None,
    roll_loops: bool = True,
    dynamic_shapes: Any = "auto",
    branches: str = "example",
    **example_kwargs,
) -> ImportedModel:
    """Export `module` on the example inputs (torch tensors) and import it: see `from_exported`.

    dynamic_shapes: which input sizes the import runs besides the example's. "auto" (the
    default): the first two dimensions of every tensor input (batch, a sequence's length) are
    dynamic wherever the model allows it (torch.export's `Dim.AUTO`; it keeps static what the
    model fixes, and a dimension whose example size is 0 or 1); None: the example's shapes
    only; or torch.export's own spec, e.g. `({0: Dim("batch", max=64), 1: Dim.AUTO},)`.
    One import then serves every allowed shape (one compiled program per shape under jit);
    `model.shapes.describe()` says which, and any other shape is refused before it runs.

    branches: where the model branches in Python on a tensor's value (LayerDrop's
    `if torch.rand([]) < p`), which torch.export cannot record: "example" (the default) fixes
    each such branch to the path the example inputs take, with a warning naming its line;
    "error" raises DataDependentBranchError instead.

    >>> model = from_module(torch.nn.Linear(3, 2), torch.randn(4, 3))
    >>> model(jnp.ones((7, 3))).shape  # a batch of 7 from an import on a batch of 4
    (7, 2)
    """
    ep = export(module, *example_args, dynamic_shapes=dynamic_shapes, branches=branches, **example_kwargs)
    return from_exported(ep, registry=registry, roll_loops=roll_loops)


def unsupported(
    ep_or_module, /, *example_args, registry: Registry | None = None, **example_kwargs
) -> list[UnsupportedNode]:
    """Every node of the graph that cannot run on jaxderiv ops, with why and the user's line
    (an empty list when the whole graph runs). Takes an ExportedProgram, or a module and inputs."""
    registry = registry or torch_registry()
    ep = (
        ep_or_module
        if isinstance(ep_or_module, torch.export.ExportedProgram)
        else export(ep_or_module, *example_args, **example_kwargs)
    )
    return build_program(decompose(ep, registry), registry)[1]

"""Sharding plans: an imported model's state placed on a `jax.sharding.Mesh` by state_dict name.

A plan is data: `(regex, PartitionSpec)` rules over state_dict names, an optional FSDP axis
(ZeRO-3: each parameter split along its largest dimension that axis divides) and the spec of
the batch. `shard(model, mesh, plan)` places the parameters with `NamedSharding`s and returns
them with the shardings to give `jax.jit`; XLA's SPMD partitioner inserts every collective.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

__all__ = ["ShardedState", "ShardingPlan", "data_parallel", "fsdp", "shard", "tensor_parallel", "torch_plan"]


@dataclasses.dataclass(frozen=True)
class ShardingPlan:
    """Where each tensor of an imported model lives on a mesh: rules as data.

    rules: `(regex, PartitionSpec)` pairs; a parameter takes the spec of the first rule whose
      regex is found (`re.search`) in its state_dict name or in a name tied to it
      (`model.aliases`); no rule: replicated. A spec shorter than the tensor is padded with
      None (torch's Linear weight is `(out_features, in_features)`).
    fsdp_axis: afterwards, split each parameter along its largest dimension that is not split
      yet and that this mesh axis divides (ZeRO-3); where none divides, it stays as it is.
    batch: the spec of the inputs' leading dimensions (`ShardedState.shard_batch`).
    Buffers (BatchNorm's running statistics) are replicated.

    >>> plan = ShardingPlan(rules=((r"\\.q_proj\\.weight$", P("model")),), batch=P("data"))
    """

    rules: tuple[tuple[str, P], ...] = ()
    fsdp_axis: str | None = None
    batch: P = P()
    name: str = "custom"

    def spec(self, name: str, shape: Sequence[int], mesh: Mesh, aliases: Sequence[str] = ()) -> P:
        """The PartitionSpec of parameter `name` of `shape` on `mesh`; raises ValueError naming the
        parameter, its shape and the mesh axis where a rule splits a dimension the axis does not divide.

        >>> fsdp().spec("fc.weight", (16, 8), jax.make_mesh((4,), ("data",)))  # PartitionSpec('data', None)
        """
        shape = tuple(shape)
        entries: list[Any] = [None] * len(shape)
        for pattern, spec in self.rules:
            if any(re.search(pattern, n) for n in (name, *aliases)):
                if len(spec) > len(shape):
                    raise ValueError(
                        f"parameter {name!r} of shape {shape}: rule {pattern!r} gives {spec}, "
                        f"{len(spec)} dimensions for a tensor of {len(shape)}"
                    )
                entries[: len(spec)] = list(spec)
                _check_divisible(name, shape, entries, mesh, f"rule {pattern!r}")
                break
        axis = self.fsdp_axis
        if axis is not None and axis not in _used_axes(entries):
            size = _axis_size(mesh, axis, name)
            free = [d for d in range(len(shape)) if entries[d] is None and shape[d] >= size and shape[d] % size == 0]
            if free:
                entries[max(free, key=lambda d: (shape[d], -d))] = axis
        return P(*entries)


def _used_axes(entries) -> set[str]:
    used: set[str] = set()
    for e in entries:
        used.update((e,) if isinstance(e, str) else e or ())
    return used


def _axis_size(mesh: Mesh, axis: str, name: str) -> int:
    if axis not in mesh.shape:
        raise ValueError(f"parameter {name!r}: mesh axis {axis!r} is not an axis of the mesh {dict(mesh.shape)}")
    return int(mesh.shape[axis])


def _check_divisible(name: str, shape: tuple, entries: Sequence[Any], mesh: Mesh, source: str) -> None:
    for dim, e in enumerate(entries):
        axes = (e,) if isinstance(e, str) else tuple(e or ())
        size = int(np.prod([_axis_size(mesh, a, name) for a in axes])) if axes else 1
        if shape[dim] % size:
            raise ValueError(
                f"parameter {name!r} of shape {shape}: {source} splits dimension {dim} (size {shape[dim]}) "
                f"over mesh axis {e!r} of size {size}, which does not divide it"
            )


# --- ready plans -------------------------------------------------------------------------------


def data_parallel(axis: str = "data") -> ShardingPlan:
    """Parameters replicated on every device, the batch split along `axis`.

    >>> state = shard(model, jax.make_mesh((8,), ("data",)), data_parallel())
    """
    return ShardingPlan(batch=P(axis), name="data_parallel")


def fsdp(axis: str = "data") -> ShardingPlan:
    """ZeRO-3 / FSDP: every parameter split along its largest dimension that `axis` divides
    (else replicated), the batch split along `axis`. XLA all-gathers each weight where it is used
    and reduce-scatters its gradient.

    >>> state = shard(model, jax.make_mesh((8,), ("data",)), fsdp())
    """
    return ShardingPlan(fsdp_axis=axis, batch=P(axis), name="fsdp")


# Megatron's layout, by the names transformers and torch.nn give the layers. Column-parallel:
# the output features are split (torch Linear weight rows, bias too); row-parallel: the input
# features (weight columns; the bias is added after the all-reduce, replicated).
_COLWISE = (
    r"q_proj",
    r"k_proj",
    r"v_proj",
    r"gate_proj",
    r"up_proj",
    r"fc1",
    r"attention\.self\.(query|key|value)",
    r"intermediate\.dense",
    r"(SelfAttention|EncDecAttention)\.[qkv]",
    r"DenseReluDense\.wi(_0|_1)?",
    r"lm_head",
)
_ROWWISE = (
    r"o_proj",
    r"down_proj",
    r"fc2",
    r"output\.dense",
    r"out_proj",
    r"(SelfAttention|EncDecAttention)\.o",
    r"DenseReluDense\.wo",
)
# GPT-2's Conv1D holds its weight as (in_features, out_features): the other way round.
_CONV1D_COLWISE = (r"c_attn", r"c_fc")
_CONV1D_ROWWISE = (r"c_proj",)
_EMBEDDINGS = (r"embed_tokens", r"wte", r"word_embeddings", r"shared", r"embed_in")


def _names(alternatives: Sequence[str], leaf: str) -> str:
    return rf"(^|\.)({'|'.join(alternatives)})\.{leaf}$"


def tensor_parallel(
    axis: str = "model", *, data_axis: str | None = None, fsdp: bool = False, embedding: str = "vocab"
) -> ShardingPlan:
    """Megatron tensor parallelism over mesh axis `axis`, by transformers' layer names.

    Column-parallel (output features split): Llama `q_proj, k_proj, v_proj, gate_proj, up_proj`,
    BERT `query, key, value, intermediate.dense`, `fc1`, T5 `q, k, v, wi`, `lm_head`, GPT-2's
    Conv1D `c_attn, c_fc` (weights stored `(in, out)`). Row-parallel (input features split, bias
    replicated): `o_proj, down_proj, fc2, output.dense, out_proj`, T5 `o, wo`, GPT-2 `c_proj`.
    Token embeddings (`embed_tokens, wte, word_embeddings, shared`) split along the vocabulary
    (`embedding="vocab"`) or the hidden size (`"hidden"`); norms and everything else replicated.
    `data_axis` of a 2-D mesh splits the batch (data x model); with `fsdp=True` each parameter is
    also split along `data_axis` (ZeRO-3 on top of Megatron).

    >>> mesh = jax.make_mesh((2, 4), ("data", "model"))
    >>> state = shard(model, mesh, tensor_parallel("model", data_axis="data", fsdp=True))
    """
    if embedding not in ("vocab", "hidden"):
        raise ValueError(f"embedding={embedding!r}: 'vocab' or 'hidden'")
    if fsdp and data_axis is None:
        raise ValueError("fsdp=True shards along data_axis: name it (tensor_parallel('model', data_axis='data'))")
    rules = (
        (_names(_COLWISE, "weight"), P(axis, None)),
        (_names(_COLWISE, "bias"), P(axis)),
        (_names(_ROWWISE, "weight"), P(None, axis)),
        (_names(_CONV1D_COLWISE, "weight"), P(None, axis)),
        (_names(_CONV1D_COLWISE, "bias"), P(axis)),
        (_names(_CONV1D_ROWWISE, "weight"), P(axis, None)),
        (_names(_EMBEDDINGS, "weight"), P(axis, None) if embedding == "vocab" else P(None, axis)),
        (r"(^|\.)in_proj_weight$", P(axis, None)),  # nn.MultiheadAttention's packed q, k, v
        (r"(^|\.)in_proj_bias$", P(axis)),
    )
    name = "tensor_parallel" + ("+fsdp" if fsdp else "")
    return ShardingPlan(rules, fsdp_axis=data_axis if fsdp else None, batch=P(data_axis), name=name)


def torch_plan(plan: Mapping[str, Any], model, *, axis: str = "model", data_axis: str | None = None) -> ShardingPlan:
    """A ShardingPlan from torch's `parallelize_module` spelling: fnmatch patterns of module names
    to `"colwise"`, `"rowwise"`, `"replicate"`/`"sequence"` or torch's `ColwiseParallel()`,
    `RowwiseParallel()`, `SequenceParallel()` objects, as torch reads them: a Linear's
    colwise splits its weight's rows and its bias, rowwise its weight's columns; an Embedding's
    colwise splits the embedding dimension, rowwise the vocabulary. `model` tells embeddings apart.

    >>> plan = torch_plan({"*.q_proj": "colwise", "*.o_proj": "rowwise"}, model)
    """
    embeddings = _embedding_params(model)
    names = list(model.params)
    rules: list[tuple[str, P]] = []
    for pattern, style in plan.items():
        kind = _style(style, pattern)
        regex = re.compile(fnmatch.translate(pattern).removesuffix(r"\Z") + r"\.(?P<leaf>weight|bias)\Z")
        for name in names:
            m = regex.match(name)
            if not m:
                continue
            leaf, emb = m.group("leaf"), name in embeddings
            if kind == "colwise":
                spec = P(None, axis) if emb else P(axis, None) if leaf == "weight" else P(axis)
            elif kind == "rowwise":
                spec = P(axis, None) if emb else P(None, axis) if leaf == "weight" else P()
            else:
                spec = P()
            rules.append((rf"^{re.escape(name)}$", spec))
    return ShardingPlan(tuple(rules), batch=P(data_axis), name="torch_plan")


def _style(style: Any, pattern: str) -> str:
    text = style if isinstance(style, str) else type(style).__name__
    kind = {
        "colwise": "colwise",
        "ColwiseParallel": "colwise",
        "rowwise": "rowwise",
        "RowwiseParallel": "rowwise",
        "replicate": "replicate",
        "sequence": "replicate",
        "sequence_parallel": "replicate",
        "SequenceParallel": "replicate",
    }.get(text)
    if kind is None:
        raise ValueError(f"{pattern!r}: unknown parallel style {style!r} (colwise, rowwise, replicate, sequence)")
    return kind


def _embedding_params(model) -> set[str]:
    """The parameters an `aten.embedding` reads as its table."""
    ep = model.exported
    by_node = ep.graph_signature.inputs_to_parameters
    out = set()
    for node in ep.graph.nodes:
        if node.op == "call_function" and "embedding" in str(node.target) and node.args:
            table = node.args[0]
            name = by_node.get(getattr(table, "name", None))
            if name is not None:
                out.add(model.aliases.get(name, name))
    return out


# --- placing state -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class ShardedState:
    """An imported model's params and buffers placed on a mesh by a plan, with the shardings to
    give `jax.jit`. `params, buffers = state` unpacks the arrays.

    Attributes:
      mesh, plan: where and how.
      params: name -> a global `jax.Array` with `NamedSharding(mesh, specs[name])`.
      buffers: name -> a replicated `jax.Array`.
      specs: name -> the parameter's PartitionSpec.

    >>> state = shard(model, mesh, fsdp())
    >>> opt_state = state.put(optimizer.init(state.params))
    >>> step = jax.jit(train_step, out_shardings=state.shardings((state.params, state.buffers, opt_state)))
    """

    mesh: Mesh
    plan: ShardingPlan
    params: dict[str, jax.Array]
    buffers: dict[str, jax.Array]
    specs: dict[str, P]

    def __iter__(self):
        return iter((self.params, self.buffers))

    @property
    def replicated(self) -> NamedSharding:
        """`NamedSharding(mesh, P())`: on every device (a loss, a step counter)."""
        return NamedSharding(self.mesh, P())

    def shardings(self, tree):
        """A pytree of NamedShardings for `tree`: a leaf under a dict key that names a parameter,
        of that parameter's shape, takes its sharding (params, gradients, optax's moments);
        every other leaf (a step count, buffers, a loss) is replicated.

        >>> jax.jit(step, out_shardings=state.shardings((params, opt_state)))
        """

        def one(path, leaf):
            for entry in reversed(path):
                key = getattr(entry, "key", None)
                if isinstance(key, str) and key in self.specs:
                    if tuple(np.shape(leaf)) == tuple(self.params[key].shape):
                        return NamedSharding(self.mesh, self.specs[key])
                    break
            return self.replicated

        return jax.tree_util.tree_map_with_path(one, tree)

    def put(self, tree):
        """`tree` placed with `shardings(tree)` (e.g. `optimizer.init(params)`'s state).

        >>> opt_state = state.put(optax.adam(1e-3).init(state.params))
        """
        return jax.tree.map(_place, tree, self.shardings(tree))

    def constrain(self, tree):
        """`jax.lax.with_sharding_constraint(tree, shardings(tree))`, inside `jax.jit`.

        >>> new_params = state.constrain(optax.apply_updates(params, updates))
        """
        return jax.lax.with_sharding_constraint(tree, self.shardings(tree))

    def batch_sharding(self, ndim: int) -> NamedSharding:
        """The sharding of an input of `ndim` dimensions: the plan's batch spec on its leading ones.

        >>> jax.make_array_from_process_local_data(state.batch_sharding(2), local_ids)
        """
        spec = tuple(self.plan.batch)[:ndim]
        return NamedSharding(self.mesh, P(*spec, *([None] * (ndim - len(spec)))))

    def shard_batch(self, *arrays):
        """Global inputs (the same on every process) split by the plan's batch spec; a tuple.

        >>> ids, labels = state.shard_batch(ids, labels)
        """
        out = []
        for i, a in enumerate(arrays):
            sharding = self.batch_sharding(np.ndim(a))
            _check_divisible(f"input {i}", tuple(np.shape(a)), sharding.spec, self.mesh, "the batch spec")
            out.append(_place(a, sharding))
        return tuple(out)

    def device_bytes(self, tree=None) -> dict[Any, int]:
        """Bytes of `tree` (default: the params) held on each of this process's devices.

        >>> max(state.device_bytes().values())
        """
        tree = self.params if tree is None else tree
        out: dict[Any, int] = {d: 0 for d in self.mesh.devices.flat if d.process_index == jax.process_index()}
        for leaf in jax.tree.leaves(tree):
            for s in leaf.addressable_shards:
                out[s.device] += s.data.nbytes
        return out

    def summary(self) -> str:
        """One line per parameter: its name, shape, spec and bytes per device.

        >>> print(state.summary())
        """
        rows = [f"{self.plan.name} on mesh {dict(self.mesh.shape)}"]
        for name, spec in self.specs.items():
            a = self.params[name]
            local = a.addressable_shards[0].data.nbytes
            rows.append(f"  {name:60s} {str(tuple(a.shape)):14s} {str(spec):28s} {local:>10d} B/device")
        return "\n".join(rows)


def _place(value, sharding: NamedSharding) -> jax.Array:
    """`value` as a global array with `sharding`, on one process or several."""
    if isinstance(value, jax.Array) and not value.is_fully_addressable:
        return jax.jit(lambda a: a, out_shardings=sharding)(value)
    if jax.process_count() == 1:
        return jax.device_put(value, sharding)
    host = np.asarray(value)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def _auto_axes(mesh: Mesh) -> Mesh:
    if all(t == AxisType.Auto for t in mesh.axis_types):
        return mesh
    return Mesh(mesh.devices, mesh.axis_names, axis_types=(AxisType.Auto,) * len(mesh.axis_names))


def shard(model, mesh: Mesh, plan: ShardingPlan | Mapping[str, Any], *, params=None, buffers=None) -> ShardedState:
    """Place an ImportedModel's params (or the given `params`, e.g. a checkpoint's) on `mesh` by
    `plan`; buffers replicated. `plan` is a ShardingPlan, a `{regex: PartitionSpec}` dict, or
    torch's `{module pattern: "colwise" | "rowwise"}` spelling (see `torch_plan`; the mesh's last
    axis). Tied weights are one parameter: a rule may name it by any of its names. The mesh's axes
    are used as `AxisType.Auto` (`jax.make_mesh` makes Explicit ones): XLA's partitioner lays out
    the activations of the imported graph, whose ops name no output sharding.

    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> params, buffers = state = shard(model, mesh, fsdp())
    >>> loss, grads = jax.jit(jax.value_and_grad(loss_fn), out_shardings=(state.replicated, state.shardings(params)))(
    ...     params, buffers, *state.shard_batch(ids))
    """
    mesh = _auto_axes(mesh)
    if isinstance(plan, Mapping):
        if all(isinstance(v, P) for v in plan.values()):
            plan = ShardingPlan(tuple(plan.items()))
        else:
            plan = torch_plan(plan, model, axis=mesh.axis_names[-1])
    params = model.params if params is None else params
    buffers = model.buffers if buffers is None else buffers
    tied: dict[str, list[str]] = {}
    for alias, name in model.aliases.items():
        tied.setdefault(name, []).append(alias)
    specs = {name: plan.spec(name, np.shape(v), mesh, tied.get(name, ())) for name, v in params.items()}
    placed = {name: _place(v, NamedSharding(mesh, specs[name])) for name, v in params.items()}
    replicated = NamedSharding(mesh, P())
    return ShardedState(mesh, plan, placed, {k: _place(v, replicated) for k, v in buffers.items()}, specs)

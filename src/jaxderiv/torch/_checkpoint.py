"""An imported model's weights on disk without torch: safetensors files by state_dict name, and
Orbax checkpoints of params, buffers and optimizer state.

safetensors (`pip install safetensors`) is the format of transformers' `save_pretrained`; Orbax
(`pip install orbax-checkpoint`) is JAX's own. Both are imported on first use. Every tensor is
checked against the model before it is used: a wrong shape or dtype raises, naming the tensor.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ._model import ImportedModel

__all__ = ["load_safetensors", "match_state", "restore_checkpoint", "save_checkpoint", "save_safetensors"]


def _describe(dtype, shape) -> str:
    return f"{np.dtype(dtype).name}{list(shape)}"


def _check(name: str, dtype, shape, like, source: str, cast: bool) -> None:
    """Raise unless (dtype, shape) fits the model's tensor `like` (dtypes as JAX holds them)."""
    if tuple(shape) != tuple(like.shape):
        raise ValueError(
            f"tensor {name!r} in {source} has shape {list(shape)}, the model's is {list(like.shape)} "
            f"({_describe(dtype, shape)} vs {_describe(like.dtype, like.shape)})"
        )
    if not cast and jax.dtypes.canonicalize_dtype(dtype) != like.dtype:
        raise ValueError(
            f"tensor {name!r} in {source} is {np.dtype(dtype).name}, the model's is {np.dtype(like.dtype).name} "
            "(cast=True converts it)"
        )


def _names(model: ImportedModel) -> dict[str, list[str]]:
    """Each param and buffer -> every state_dict name that holds it (the tied ones after the first)."""
    out: dict[str, list[str]] = {name: [name] for name in (*model.params, *model.buffers)}
    for alias, name in model.aliases.items():
        out[name].append(alias)
    return out


def match_state(
    model: ImportedModel,
    tensors: Mapping[str, Any],
    *,
    strict: bool = True,
    cast: bool = False,
    source: str = "the state_dict",
) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """`(params, buffers)` of `model` from tensors keyed by state_dict name, each checked.

    A tied weight is read under any of its names. Names of the model's non-persistent buffers
    and constants are ignored (old checkpoints hold them). With strict, a missing or unexpected
    name raises, listing them; otherwise what is missing keeps the model's value. A shape, or
    (unless cast) a dtype, that differs from the model's raises naming the tensor.

    >>> params, buffers = match_state(model, {k: v.numpy() for k, v in torch_module.state_dict().items()})
    """
    names = _names(model)
    known = {n for group in names.values() for n in group} | set(model.constants)
    unexpected = sorted(k for k in tensors if k not in known)
    missing = [name for name, group in names.items() if not any(n in tensors for n in group)]
    if strict and (missing or unexpected):
        raise KeyError(f"{source} does not match the model: missing {missing}, unexpected {unexpected}")
    out: dict[str, jax.Array] = {}
    for name, group in names.items():
        found = [n for n in group if n in tensors]
        if not found:
            continue
        like = model.params[name] if name in model.params else model.buffers[name]
        for n in found:
            value = tensors[n]
            _check(n, value.dtype, value.shape, like, source, cast)
        out[name] = jnp.array(np.asarray(tensors[found[0]]), dtype=like.dtype, copy=True)  # no view of torch's memory
    params = {k: out.get(k, v) for k, v in model.params.items()}
    buffers = {k: out.get(k, v) for k, v in model.buffers.items()}
    return params, buffers


def _safetensors_files(path: Path) -> list[Path]:
    """A file, or a save_pretrained directory's model.safetensors or its shards' index."""
    if not path.is_dir():
        return [path]
    if (path / "model.safetensors").exists():
        return [path / "model.safetensors"]
    index = path / "model.safetensors.index.json"
    if index.exists():
        return [path / f for f in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
    raise FileNotFoundError(f"{path} holds neither model.safetensors nor model.safetensors.index.json")


def load_safetensors(
    model: ImportedModel, path: str | os.PathLike, *, strict: bool = True, cast: bool = False
) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """`(params, buffers)` from a safetensors file, or a `save_pretrained` directory (one file or
    shards), read by state_dict name without torch; bfloat16 and every other dtype as stored.

    Shapes and dtypes are checked from the file's header before any tensor is read; names are
    matched as by `match_state` (a tied weight under any of its names).

    >>> params, buffers = jt.load_safetensors(model, "checkpoint_dir")  # from save_pretrained
    """
    from safetensors import safe_open

    files = _safetensors_files(Path(path))
    tensors: dict[str, Any] = {}
    names = {n for group in _names(model).values() for n in group}
    for file in files:
        with safe_open(str(file), framework="np") as f:
            for k in f.keys():
                if k not in names:
                    tensors[k] = None  # an unexpected (or ignored) name: reported by match_state
                    continue
                view = f.get_slice(k)
                name = model.aliases.get(k, k)
                like = model.params[name] if name in model.params else model.buffers[name]
                dtype = _SAFETENSORS_DTYPES.get(view.get_dtype())
                if dtype is None:
                    raise ValueError(f"tensor {k!r} in {file} has dtype {view.get_dtype()}, which NumPy cannot hold")
                _check(k, dtype, view.get_shape(), like, str(file), cast)
                tensors[k] = f.get_tensor(k)
    read = {k: v for k, v in tensors.items() if v is not None}
    if strict:  # names the model lacks, found without reading them
        extra = sorted(k for k, v in tensors.items() if v is None and k not in model.constants)
        if extra:
            missing = [n for n, group in _names(model).items() if not any(g in read for g in group)]
            raise KeyError(f"{path} does not match the model: missing {missing}, unexpected {extra}")
    return match_state(model, read, strict=strict, cast=cast, source=str(path))


_SAFETENSORS_DTYPES: dict[str, Any] = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "BF16": jnp.bfloat16,
    "I64": np.int64,
    "U64": np.uint64,
    "I32": np.int32,
    "U32": np.uint32,
    "I16": np.int16,
    "U16": np.uint16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
    "C64": np.complex64,
    "F8_E4M3": jnp.float8_e4m3fn,
    "F8_E5M2": jnp.float8_e5m2,
}


def save_safetensors(
    model: ImportedModel,
    path: str | os.PathLike,
    params: Mapping[str, Any] | None = None,
    buffers: Mapping[str, Any] | None = None,
    *,
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write params and buffers (default: the model's) to a safetensors file by state_dict name,
    without torch; a directory gets `model.safetensors`. Returns the file's path.

    A tied weight is written once, under its first name, as transformers' `save_pretrained` and
    safetensors' `save_model` write shared tensors; torch's and transformers' loaders fill the
    others. The header says `format: pt`, which `from_pretrained` requires.

    >>> jt.save_safetensors(model, pretrained_dir, params)  # then AutoModel.from_pretrained(pretrained_dir)
    """
    from safetensors.numpy import save_file

    params = model.params if params is None else params
    buffers = model.buffers if buffers is None else buffers
    tensors = {}
    for kind, given, own in (("parameter", params, model.params), ("buffer", buffers, model.buffers)):
        missing = sorted(set(own) - set(given))
        if missing:
            raise KeyError(f"the {kind}s to save lack {missing}")
        for name, like in own.items():
            value = np.ascontiguousarray(np.asarray(given[name]))
            _check(name, value.dtype, value.shape, like, f"the {kind}s to save", cast=False)
            tensors[name] = value
    file = Path(path)
    if file.is_dir():
        file = file / "model.safetensors"
    save_file(tensors, str(file), metadata={"format": "pt", **(metadata or {})})
    return file


def _abstract(tree):
    """Shapes, dtypes and, for placed arrays, shardings: Orbax restores each array where its
    template lies (a sharded template from `jt.shard` restores sharded)."""

    def one(x):
        sharding = x.sharding if isinstance(x, jax.Array) else None
        return jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x), sharding=sharding)

    return jax.tree.map(one, tree)


def save_checkpoint(
    path: str | os.PathLike,
    params: Mapping[str, Any],
    buffers: Mapping[str, Any],
    opt_state: Any = None,
    *,
    overwrite: bool = False,
) -> None:
    """Save params, buffers and an optax state (any pytree, or None) as one Orbax checkpoint.

    >>> jt.save_checkpoint("ckpt/step_100", params, buffers, opt_state)
    """
    import orbax.checkpoint as ocp

    tree = {"params": dict(params), "buffers": dict(buffers)}
    if opt_state is not None:
        tree["opt_state"] = opt_state
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(Path(path).absolute(), tree, force=overwrite)
        checkpointer.wait_until_finished()


def restore_checkpoint(
    path: str | os.PathLike,
    model: ImportedModel,
    opt_state: Any = None,
    *,
    params: Mapping[str, Any] | None = None,
    buffers: Mapping[str, Any] | None = None,
) -> tuple[dict[str, jax.Array], dict[str, jax.Array], Any]:
    """`(params, buffers, opt_state)` from a `save_checkpoint` directory, checked against `model`.

    `opt_state` is a template of the optimizer state (`opt.init(model.params)`): its structure
    and shapes say what to restore (None: the checkpoint's optimizer state is not read). A
    tensor whose name, shape or dtype differs from the model's raises, naming it. Each array is
    restored where its template lies: `params`/`buffers` (default: the model's own) and
    `opt_state` placed by `jt.shard` restore sharded, each device reading its shards.

    >>> params, buffers, opt_state = jt.restore_checkpoint("ckpt/step_100", model, opt.init(model.params))
    """
    import orbax.checkpoint as ocp

    path = Path(path).absolute()
    with ocp.StandardCheckpointer() as checkpointer:
        meta = checkpointer.metadata(path)
        meta = getattr(meta, "item_metadata", meta)
        params = model.params if params is None else params
        buffers = model.buffers if buffers is None else buffers
        for kind, own in (("params", params), ("buffers", buffers)):
            saved = meta[kind] if kind in meta.keys() else {}
            if set(saved) != set(own):
                raise KeyError(
                    f"checkpoint {path} does not match the model's {kind}: missing {sorted(set(own) - set(saved))}, "
                    f"unexpected {sorted(set(saved) - set(own))}"
                )
            for name, m in saved.items():
                _check(name, m.dtype, m.shape, own[name], f"checkpoint {path}", cast=False)
        target = {"params": _abstract(params), "buffers": _abstract(buffers)}
        if opt_state is not None:
            if "opt_state" not in meta.keys():
                raise KeyError(f"checkpoint {path} holds no optimizer state")
            target["opt_state"] = _abstract(opt_state)
        elif "opt_state" in meta.keys():  # read as stored and dropped: Orbax restores whole trees
            target["opt_state"] = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype), meta["opt_state"])
        try:
            tree = checkpointer.restore(path, target)
        except ValueError as e:  # the optimizer state's structure or shapes
            raise ValueError(f"checkpoint {path} does not fit the optimizer state given: {e}") from e
    return tree["params"], tree["buffers"], tree.get("opt_state") if opt_state is not None else None

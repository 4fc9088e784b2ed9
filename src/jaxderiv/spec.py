"""Loading derivatives.yaml of any PyTorch version, canonical or flattened, with file:line provenance."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import Iterable, Mapping

import yaml

from .errors import Location, SchemaError, SpecError
from .schema import FunctionSchema

__all__ = ["Formula", "Entry", "Spec", "load_spec", "read_spec_text", "shipped_spec_files", "torch_spec_file"]

# libyaml's parser when PyYAML has it (same nodes and marks, several times faster), else PyYAML's own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Keys of an entry that are not formulas.
_META_KEYS = {"name", "output_differentiability", "non_differentiable", "dispatch", "autogen"}
# Forward formulas are keyed by the outputs: `result`, `result0`..`resultN`, or return names.
_RESULT_KEY = re.compile(r"result\d*$")
# Keys whose value is not a formula but a marker telling how to derive one.
AUTO_FORMULAS = ("auto_element_wise", "auto_linear")


@dataclasses.dataclass(frozen=True)
class Formula:
    """One `key: formula` line of an entry."""

    names: tuple[str, ...]  # the inputs (backward) or outputs (forward) the key names, in key order
    text: str  # the formula as written
    location: Location  # file, line, entry and key of the formula

    @property
    def key(self) -> str:
        """The key as written: the input or output names joined by ', '."""
        return ", ".join(self.names)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One op's derivatives, as written in one spec file."""

    schema: FunctionSchema  # the parsed `name:` signature
    backward: tuple[Formula, ...]  # formulas keyed by inputs: gradients
    forward: tuple[Formula, ...]  # formulas keyed by outputs: `result:` tangents
    output_differentiability: tuple[bool | str, ...] | None  # per output; strings are C++ conditions
    non_differentiable: tuple[str, ...]  # inputs flagged as never differentiable
    location: Location  # file and line of `- name:`
    dispatch: str | None = None  # the dispatch key the formulas were taken from, if any
    ignored: tuple[Formula, ...] = ()  # not_implemented formulas keyed to names the schema lacks

    @property
    def name(self) -> str:
        """The ATen name with overload, as `torch.ops.aten` spells it: `add.Tensor`, `abs`."""
        return self.schema.full_name

    def formula_for(self, name: str) -> Formula | None:
        """The backward formula whose key names input `name`, or None."""
        for f in self.backward:
            if name in f.names:
                return f
        return None


@dataclasses.dataclass(frozen=True)
class Spec:
    """The entries of one or more spec files, by op name; later files win."""

    entries: Mapping[str, Entry]
    files: tuple[str, ...]

    def __getitem__(self, name: str) -> Entry:
        try:
            return self.entries[name]
        except KeyError:
            close = sorted(n for n in self.entries if n.split(".")[0] == name.split(".")[0])
            hint = f" Entries with that base name: {', '.join(close)}." if close else ""
            raise KeyError(f"no entry {name!r} in spec {', '.join(self.files)}.{hint}") from None

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def __iter__(self):
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    def union(self, newer: "Spec") -> "Spec":
        """This spec with `newer`'s entries added, replacing those of the same name."""
        return Spec({**self.entries, **newer.entries}, self.files + newer.files)


def _formulas_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "formulas", here.parent.parent / "formulas"):
        if candidate.is_dir():
            return candidate
    raise SpecError(f"the shipped formulas/ folder is missing next to {here}")


def _version(path: Path) -> tuple[int, ...]:
    """(1, 10) from `derivatives_v1_10_flat.yaml`: shipped files are named by PyTorch version."""
    m = re.search(r"v(\d+)_(\d+)", path.name)
    return (int(m.group(1)), int(m.group(2))) if m else (0,)


@functools.lru_cache(maxsize=None)
def pytorch_version(file: str | os.PathLike) -> tuple[int, ...] | None:
    """The PyTorch (major, minor) a spec file comes from: a shipped file's name
    (`derivatives_v1_7.yaml`), or for torchgen's packaged file the `torch/version.py` installed
    beside it (read as text); None when unknown."""
    path = Path(file)
    if re.search(r"v(\d+)_(\d+)", path.name):
        return _version(path)
    if path.parent.parts[-3:] == ("torchgen", "packaged", "autograd"):
        version_py = path.parents[3] / "torch" / "version.py"
        m = re.search(r"""__version__\s*=\s*['"](\d+)\.(\d+)""", version_py.read_text()) if version_py.is_file() else None
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def shipped_spec_files() -> list[Path]:
    """The spec files shipped with jaxderiv, oldest first."""
    return sorted((p for p in _formulas_dir().iterdir() if p.suffix == ".yaml"), key=_version)


def torch_spec_file() -> Path:
    """The derivatives.yaml packaged with the installed torch (found without importing torch)."""
    import importlib.util

    found = importlib.util.find_spec("torchgen")
    path = Path(found.origin).parent / "packaged" / "autograd" / "derivatives.yaml" if found and found.origin else None
    if path is None or not path.is_file():
        raise SpecError("loading torch's spec needs PyTorch installed (torchgen/packaged/autograd/derivatives.yaml not found)")
    return path


def load_spec(path: str | os.PathLike | None = None, *, from_torch: bool = False) -> Spec:
    """Load one spec file, the installed torch's (`from_torch=True`), or with no path the union
    of the shipped files (newest wins)."""
    if from_torch:
        if path is not None:
            raise ValueError("give either a path or from_torch=True, not both")
        path = torch_spec_file()
    if path is None:
        files = shipped_spec_files()
        spec = read_spec_text(files[0].read_text(), str(files[0]))
        for f in files[1:]:
            spec = spec.union(read_spec_text(f.read_text(), str(f)))
        return spec
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"cannot read spec file: {e.strerror}", Location(file=str(path))) from None
    return read_spec_text(text, str(path))


# -- text forms ---------------------------------------------------------------------------

_ENTRY_START = re.compile(r"- name:")
_KEY_LINE = re.compile(r"[A-Za-z_][\w, ]*:(\s|$)")
_DISPATCH_KEY = re.compile(r"[A-Z]\w*:\s*$")


def _is_flattened(lines: list[str]) -> bool:
    """True when a key line follows `- name:` without indentation (seed 001's form)."""
    after_name = False
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if _ENTRY_START.match(line):
            after_name = True
            continue
        if after_name:
            return bool(_KEY_LINE.match(line))
    return False


def _unflatten(lines: list[str]) -> list[str]:
    """Restore the indentation of a flattened file, keeping every line on its own number."""
    out, in_entry, in_dispatch = [], False, False
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            out.append(stripped)
        elif _ENTRY_START.match(stripped):
            in_entry, in_dispatch = True, False
            out.append(stripped)
        elif in_entry and stripped.startswith("dispatch:"):
            in_dispatch = True
            out.append("  " + stripped)
        elif in_dispatch and _DISPATCH_KEY.match(stripped):
            out.append("    " + stripped)
        elif in_entry:
            out.append(("      " if in_dispatch else "  ") + stripped)
        else:
            out.append(stripped)
    return out


def _drop_title_line(lines: list[str]) -> list[str]:
    """Blank out a bare title line before the list (seed 000 starts with `derivatives.yaml`)."""
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if re.fullmatch(r"[\w.\-/]+", s):
            return lines[:i] + [""] + lines[i + 1:]
        break
    return lines


def read_spec_text(text: str, file: str | None = None) -> Spec:
    """Parse the text of a derivatives.yaml (canonical or flattened) into a Spec."""
    lines = _drop_title_line(text.splitlines())
    if _is_flattened(lines):
        lines = _unflatten(lines)
    try:
        root = yaml.compose("\n".join(lines), Loader=_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise SpecError(f"not valid YAML: {getattr(e, 'problem', e)}", Location(file=file, line=line)) from None
    if root is None:
        return Spec({}, (file or "<text>",))
    if not isinstance(root, yaml.SequenceNode):
        raise SpecError("a spec file must be a YAML list of entries ('- name: ...')", Location(file=file, line=root.start_mark.line + 1))
    entries: dict[str, Entry] = {}
    for node in root.value:
        entry = _read_entry(node, file)
        if entry.name in entries:
            first = entries[entry.name].location.line
            raise SpecError(f"duplicate entry {entry.name!r} (first defined at line {first})", entry.location)
        entries[entry.name] = entry
    return Spec(entries, (file or "<text>",))


def _scalar(node, where: Location) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise SpecError("expected a single-line text value", where)
    return node.value


def _read_entry(node, file: str | None) -> Entry:
    where = Location(file=file, line=node.start_mark.line + 1)
    if not isinstance(node, yaml.MappingNode):
        raise SpecError("each entry must be a mapping starting with 'name:'", where)
    pairs: dict[str, tuple[yaml.Node, int]] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node, where)
        line = key_node.start_mark.line + 1
        if key in pairs:
            raise SpecError(f"key {key!r} given twice in one entry", dataclasses.replace(where, line=line))
        pairs[key] = (value_node, line)
    if "name" not in pairs:
        raise SpecError("entry has no 'name:'", where)
    name_text = _scalar(pairs["name"][0], where)
    try:
        schema = FunctionSchema.parse(name_text)
    except SchemaError as e:
        raise e.located(dataclasses.replace(where, entry=name_text)) from None
    where = dataclasses.replace(where, entry=schema.full_name)

    dispatch = None
    formula_pairs = {k: v for k, v in pairs.items() if k not in _META_KEYS}
    if "dispatch" in pairs:
        block, line = pairs["dispatch"]
        if not isinstance(block, yaml.MappingNode):
            raise SpecError("'dispatch:' must map dispatch keys to formulas", dataclasses.replace(where, line=line))
        chosen = {_scalar(k, where): v for k, v in block.value}
        dispatch = "Default" if "Default" in chosen else next(iter(chosen), None)
        if dispatch is not None:
            sub = chosen[dispatch]
            if not isinstance(sub, yaml.MappingNode):
                raise SpecError(f"'dispatch: {dispatch}:' must map keys to formulas", dataclasses.replace(where, line=sub.start_mark.line + 1))
            for k, v in sub.value:
                formula_pairs[_scalar(k, where)] = (v, k.start_mark.line + 1)

    inputs = {a.name for a in schema.arguments}
    outputs = {r.name for r in schema.returns if r.name}
    backward, forward, marked_non_diff, ignored = [], [], [], []
    for key, (value_node, line) in formula_pairs.items():
        loc = dataclasses.replace(where, line=line, key=key)
        text = _scalar(value_node, loc).strip()
        names = tuple(n.strip() for n in key.split(","))
        if text == "non_differentiable" and all(n in inputs for n in names):
            marked_non_diff.extend(names)
        elif all(n in inputs for n in names):
            backward.append(Formula(names, text, loc))
        elif all(_RESULT_KEY.match(n) or n in outputs for n in names):
            forward.append(Formula(names, text, loc))
        elif text.startswith("not_implemented("):
            # PyTorch 1.7's fbgemm entries key not_implemented to a `self` they do not have:
            # harmless, since no gradient can be asked of a missing input; kept for reports.
            ignored.append(Formula(names, text, loc))
        else:
            bad = [n for n in names if n not in inputs and n not in outputs and not _RESULT_KEY.match(n)]
            raise SpecError(
                f"key names {', '.join(map(repr, bad))}, which is neither an input of the schema "
                f"({', '.join(sorted(inputs)) or 'none'}) nor an output (result, result0.., "
                f"{', '.join(sorted(outputs)) or 'no named outputs'})",
                loc,
            )

    out_diff = None
    if "output_differentiability" in pairs:
        value, line = pairs["output_differentiability"]
        loc = dataclasses.replace(where, line=line, key="output_differentiability")
        if not isinstance(value, yaml.SequenceNode):
            raise SpecError("'output_differentiability' must be a list", loc)
        items = [_scalar(v, loc) for v in value.value]
        out_diff = tuple({"True": True, "true": True, "False": False, "false": False}.get(i, i) for i in items)
        if len(out_diff) > len(schema.returns):
            raise SpecError(f"'output_differentiability' has {len(out_diff)} items but the op returns {len(schema.returns)}", loc)
        # Older files list only the leading outputs (linalg_lstsq in 1.10): the rest are not differentiable.
        out_diff += (False,) * (len(schema.returns) - len(out_diff))

    non_diff = tuple(marked_non_diff)
    if "non_differentiable" in pairs:
        value, line = pairs["non_differentiable"]
        loc = dataclasses.replace(where, line=line, key="non_differentiable")
        raw = value.value if isinstance(value, yaml.SequenceNode) else [value]
        non_diff += tuple(n.strip() for v in raw for n in _scalar(v, loc).split(","))
        unknown = [n for n in non_diff if n not in inputs]
        if unknown:
            raise SpecError(f"'non_differentiable' names {', '.join(unknown)}, not an input of the schema", loc)

    return Entry(schema, tuple(backward), tuple(forward), out_diff, non_diff, where, dispatch, tuple(ignored))


def entries_with_formulas(spec: Spec) -> Iterable[Formula]:
    """Every formula of every entry, in file order."""
    for entry in spec:
        yield from entry.backward
        yield from entry.forward

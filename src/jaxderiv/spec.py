"""Loading derivatives.yaml of any PyTorch version, canonical or flattened, with file:line provenance."""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from pathlib import Path
from typing import Iterable, Mapping

import yaml

from .errors import JaxderivError, Location, SchemaError, SpecError
from .schema import FunctionSchema, Return, Type

__all__ = [
    "Formula",
    "Entry",
    "Spec",
    "Version",
    "SpecWarning",
    "load_spec",
    "read_spec_text",
    "detect_version",
    "Content",
    "parse_version",
    "shipped_spec_files",
    "newest_spec_file",
    "load_seed_spec",
    "torch_spec_file",
]


class SpecWarning(UserWarning):
    """Something in a spec file was ignored (an unknown key); the message names file:line."""


# libyaml's parser when PyYAML has it (same nodes and marks, several times faster), else PyYAML's own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Keys of an entry that are not formulas.
_META_KEYS = {"name", "output_differentiability", "non_differentiable", "dispatch", "autogen"}
# Forward formulas are keyed by the outputs: `result`, `result0`..`resultN`, or return names.
_RESULT_KEY = re.compile(r"result\d*$")


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
    version: Version | None = None  # the release of the file the entry comes from

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
    versions: tuple[Version, ...] = ()  # per file, in the order of `files`
    warnings: tuple[str, ...] = ()  # what loading ignored, each naming file:line
    # Entries that could not be read (`strict=False`): each error names file:line and why;
    # the other entries of the file are loaded.
    rejected: tuple[JaxderivError, ...] = ()

    @property
    def version(self) -> Version:
        """The release of the file (of the newest file, whose entries win, for a union)."""
        return self.versions[-1] if self.versions else Version(None, UNDETERMINABLE)

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
        return Spec(
            {**self.entries, **newer.entries},
            self.files + newer.files,
            self.versions + newer.versions,
            self.warnings + newer.warnings,
            self.rejected + newer.rejected,
        )


def _formulas_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "formulas", here.parent.parent / "formulas"):
        if candidate.is_dir():
            return candidate
    raise SpecError(f"the shipped formulas/ folder is missing next to {here}")


# -- the PyTorch release a file comes from, as data ---------------------------------------------

# PyTorch releases before this one wrote most formulas for real tensors (no `.conj()`).
COMPLEX_AUTOGRAD = (1, 8)


@dataclasses.dataclass(frozen=True)
class Version:
    """The PyTorch release a spec file's formulas come from, and how that was found out. It
    picks the meaning of helpers PyTorch revised (namespace.resolve) and whether complex
    inputs are accepted (releases before complex autograd are real-only)."""

    release: tuple[int, ...] | None  # (1, 7); None: undeterminable, the newest meanings apply
    how: str  # "given", "detected from content: <fingerprint>", "undeterminable: ..."

    @property
    def text(self) -> str:
        return ".".join(map(str, self.release)) if self.release else "unknown"

    @property
    def complex_autograd(self) -> bool:
        """False for a release before complex autograd: its formulas are for real tensors."""
        return self.release is None or self.release >= COMPLEX_AUTOGRAD

    def __str__(self) -> str:
        return f"PyTorch {self.text} ({self.how})"


UNDETERMINABLE = "undeterminable: newest assumed; pass --torch-version"

# Content fingerprints, newest release first: a file is of the newest release one of whose
# markers it holds. Each marker is in that release's file and in none of the older ones: the
# table was built from the release files themselves (docs/releases.md says where each comes from;
# 1.11 to 2.0 from the main branch at each release's cut), and tests/spec/test_spec_version.py
# checks it against an index of those files' contents (`Content`, kept under tests/spec/data).
# Markers sit early in the files where they can (1.10's shipped file stops after mul.Scalar).
# A marker is ("entry", name), ("formula", identifier written in some formula) or
# ("argument", entry, "Type name") for an entry whose schema has that argument. 0.4.0, the
# oldest, is told by entries gone from every later file.
FINGERPRINTS: tuple[tuple[tuple[int, ...], tuple[tuple[str, ...], ...]], ...] = (
    ((2, 14, 1), (("entry", "linalg_polar"), ("entry", "linalg_matrix_sqrth"), ("formula", "M_2_SQRTPI"))),
    ((2, 13), (("entry", "_foreach_mm"),)),
    ((2, 12), (("entry", "aminmax"), ("entry", "grid_sampler_2d_backward"))),
    ((2, 11), (("entry", "ldexp.Tensor"), ("entry", "miopen_ctc_loss"))),
    ((2, 10), (("argument", "tril", "SymInt diagonal"), ("formula", "tril_symint"))),
    ((2, 9), (("entry", "_fused_rms_norm"), ("entry", "hash_tensor"))),
    ((2, 8), (("entry", "_grouped_mm"),)),
    ((2, 7), (("formula", "linalg_lstsq_solution_jvp"),)),
    ((2, 6), (("entry", "rrelu_with_noise_functional"), ("entry", "_nested_from_padded_tensor"))),
    ((2, 5), (("entry", "chunk"), ("entry", "_unsafe_masked_index"))),
    ((2, 4), (("entry", "_batch_norm_with_update"), ("entry", "_batch_norm_no_update"))),
    ((2, 3), (("entry", "_lazy_clone"), ("entry", "slice_inverse"))),
    ((2, 2), (("entry", "any.dims"), ("entry", "all.dims"))),
    ((2, 1), (("entry", "crow_indices"), ("entry", "_unsafe_index.Tensor"))),
    ((2, 0), (("entry", "squeeze.dims"), ("entry", "_native_batch_norm_legit"))),
    ((1, 13), (("entry", "matmul"), ("entry", "_linalg_det"))),
    ((1, 12), (("entry", "linalg_lu"), ("entry", "index_reduce"))),
    # 1.11 revised softmax_double_backward together with this schema change
    ((1, 11), (("argument", "_softmax_backward_data", "ScalarType input_dtype"), ("entry", "native_dropout"))),
    ((1, 10), (("entry", "_neg_view"), ("entry", "_conj_physical"), ("entry", "_to_copy"))),
    ((1, 9), (("entry", "linalg_cholesky_ex"), ("entry", "clamp.Tensor"))),
    ((1, 8), (("entry", "igamma"), ("entry", "div.Tensor_mode"))),
    ((1, 7), (("entry", "complex"), ("entry", "polar"))),
    ((1, 6), (("entry", "acosh"), ("entry", "asinh"))),
    ((1, 5), (("entry", "cummax"), ("entry", "_cdist_forward"))),
    ((1, 4), (("entry", "angle"), ("entry", "slow_conv3d_forward"))),
    ((1, 3), (("entry", "index.Tensor"), ("entry", "norm.Scalar"))),
    ((1, 2), (("entry", "native_layer_norm"), ("entry", "gelu"))),
    ((1, 1), (("entry", "cholesky_solve"), ("entry", "cholesky_inverse"))),
    ((1, 0), (("entry", "addmv"), ("entry", "affine_grid_generator"))),
    ((0, 4, 1), (("entry", "diagonal"), ("entry", "logsumexp"))),
    ((0, 4, 0), (("entry", "softmax_forward"), ("entry", "log_softmax_forward"))),
)


@dataclasses.dataclass(frozen=True)
class Content:
    """What release detection reads of a file: its entry names, each entry's schema arguments
    (`entry(Type name)`) and the identifiers its formulas write. Small enough to keep an index
    of every release's file for the tests."""

    entries: frozenset[str]
    arguments: frozenset[str]
    words: frozenset[str]

    @classmethod
    def of(cls, entries: Mapping[str, "Entry"]) -> "Content":
        arguments = {f"{e.name}({a.type} {a.name})" for e in entries.values() for a in e.schema.arguments}
        words = {w for e in entries.values() for f in e.backward + e.forward for w in _WORD.findall(f.text)}
        return cls(frozenset(entries), frozenset(arguments), frozenset(words))


_WORD = re.compile(r"(?<![\w:])[A-Za-z_]\w*(?!\w)")


def _marker_text(marker: tuple[str, ...]) -> str:
    kind, *what = marker
    return f"{kind} `{what[0]}`" if len(what) == 1 else f"{kind} `{what[1]}` of `{what[0]}`"


def has_marker(content: Content, marker: tuple[str, ...]) -> bool:
    kind = marker[0]
    if kind == "entry":
        return marker[1] in content.entries
    if kind == "argument":
        return f"{marker[1]}({marker[2]})" in content.arguments
    if kind == "formula":
        return marker[1] in content.words
    raise ValueError(f"unknown fingerprint kind {kind!r}")


def detect_version(content: "Mapping[str, Entry] | Content") -> Version:
    """The release of a file from its content alone (never its name): see FINGERPRINTS."""
    if not isinstance(content, Content):
        content = Content.of(content)
    for release, markers in FINGERPRINTS:
        for m in markers:
            if has_marker(content, m):
                return Version(release, f"detected from content: {_marker_text(m)}")
    return Version(None, UNDETERMINABLE)


def parse_version(text: "str | tuple[int, ...] | Version") -> Version:
    """A user-given release: "1.7", "2.14.1", (1, 7), or a Version (kept as it is)."""
    if isinstance(text, Version):
        return text
    if isinstance(text, tuple) and text and all(isinstance(n, int) for n in text):
        return Version(text, "given")
    m = re.fullmatch(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?\s*", str(text))
    if not m:
        raise SpecError(f"torch version {text!r}: expected MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 1.7 or 2.14.1")
    return Version(tuple(int(g) for g in m.groups() if g is not None), "given")


# The seed files, oldest first (newer win): what `python -m jaxderiv check` verifies by default.
_SEED_FILES = ("derivatives_v1_7.yaml", "derivatives_v1_10_flat.yaml")
# The newest release's file: the default spec's, with the seeds' entries for the ops it lacks.
_NEWEST_FILE = "derivatives_v2_14_1.yaml"


def shipped_spec_files() -> list[Path]:
    """The seed files (PyTorch 1.7's and 1.10's), oldest first: `load_seed_spec` is their union."""
    return [_formulas_dir() / name for name in _SEED_FILES]


def newest_spec_file() -> Path:
    """The newest release's file shipped (torch 2.14.1's): the default spec's."""
    return _formulas_dir() / _NEWEST_FILE


def load_seed_spec(*, strict: bool = True) -> Spec:
    """The union of the seed files, newer entries winning: PyTorch 1.7's schemas and formulas
    where 1.10's file has no entry. `python -m jaxderiv check` verifies every formula of both."""
    files = shipped_spec_files()
    spec = read_spec_text(files[0].read_text(), str(files[0]), strict=strict)
    for f in files[1:]:
        spec = spec.union(read_spec_text(f.read_text(), str(f), strict=strict))
    return spec


def torch_spec_file() -> Path:
    """The derivatives.yaml packaged with the installed torch (found without importing torch)."""
    import importlib.util

    found = importlib.util.find_spec("torchgen")
    path = Path(found.origin).parent / "packaged" / "autograd" / "derivatives.yaml" if found and found.origin else None
    if path is None or not path.is_file():
        raise SpecError(
            "loading torch's spec needs PyTorch installed (torchgen/packaged/autograd/derivatives.yaml not found)"
        )
    return path


def load_spec(
    path: str | os.PathLike | None = None, *, from_torch: bool = False, torch_version=None, strict: bool = True
) -> Spec:
    """Load one spec file, the installed torch's (`from_torch=True`), or with no path the default
    spec: the newest release's shipped file (torch 2.14.1's, today's schemas and formulas) with
    the seed files' entries for the ops it no longer has (`cholesky`, `std`, `_bmm`, ...; see
    `load_seed_spec`). `torch_version` ("1.7") states the release
    instead of detecting it from the content (for a file with no fingerprint, or to override).
    With `strict=False` an entry that cannot be read is reported (a SpecWarning naming
    file:line and why; kept in `Spec.rejected`) and the rest of the file loads; with the
    default `strict=True` the first such entry raises. A file that is not YAML, or not a
    list, is rejected whole either way."""
    if from_torch:
        if path is not None:
            raise ValueError("give either a path or from_torch=True, not both")
        path = torch_spec_file()
    if path is None:
        if torch_version is not None:
            raise ValueError("torch_version applies to one file; the default spec's files each have their own")
        newest = newest_spec_file()
        return load_seed_spec(strict=strict).union(read_spec_text(newest.read_text(), str(newest), strict=strict))
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"cannot read spec file: {e.strerror}", Location(file=str(path))) from None
    return read_spec_text(text, str(path), torch_version=torch_version, strict=strict)


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
            return lines[:i] + [""] + lines[i + 1 :]
        break
    return lines


def read_spec_text(text: str, file: str | None = None, torch_version=None, strict: bool = True) -> Spec:
    """Parse the text of a derivatives.yaml (canonical or flattened) into a Spec. Its release
    is `torch_version` if given ("1.7"), else detected from the content (`detect_version`).
    `strict=False` reports an entry that cannot be read and loads the others (see load_spec)."""
    lines = _drop_title_line(text.splitlines())
    if _is_flattened(lines):
        lines = _unflatten(lines)
    try:
        root = yaml.compose("\n".join(lines), Loader=_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise SpecError(f"not valid YAML: {getattr(e, 'problem', e)}", Location(file=file, line=line)) from None
    try:
        given = parse_version(torch_version) if torch_version is not None else None
    except SpecError as e:
        raise e.located(Location(file=file)) from None
    if root is None:
        return Spec({}, (file or "<text>",), (given or Version(None, UNDETERMINABLE),))
    if not isinstance(root, yaml.SequenceNode):
        raise SpecError(
            "a spec file must be a YAML list of entries ('- name: ...')",
            Location(file=file, line=root.start_mark.line + 1),
        )
    reported: list[str] = []
    rejected: list[JaxderivError] = []

    def reject(error: JaxderivError) -> None:
        if strict:
            raise error
        rejected.append(error)
        message = f"{error}; the entry is not loaded"
        reported.append(message)
        warnings.warn(message, SpecWarning, stacklevel=4)

    read: list[Entry] = []
    for node in root.value:
        try:
            read.append(_read_entry(node, file, reported))
        except JaxderivError as e:
            reject(e)
    entries: dict[str, Entry] = {}
    for entry in _name_unnamed_overloads(read, reported):
        if entry.name in entries:
            first = entries[entry.name].location.line
            reject(SpecError(f"duplicate entry {entry.name!r} (first defined at line {first})", entry.location))
            continue
        entries[entry.name] = entry
    version = given or detect_version(entries)
    entries = {n: dataclasses.replace(e, version=version) for n, e in entries.items()}
    return Spec(entries, (file or "<text>",), (version,), tuple(reported), tuple(rejected))


def _arg_key(arg) -> tuple:
    return (arg.name, str(arg.type))


def _overload_names(group: list[FunctionSchema]) -> list[str]:
    """Names for overloads written under one name without an overload name (files before 1.3:
    `add(Tensor self, Scalar other, ...)` and `add(Tensor self, Tensor other, ...)`), in ATen's
    later manner: the types where the overloads' arguments differ, joined by `_` (`Scalar`,
    `Tensor_float`), else the first argument only this overload has (`dim`); '' for the one
    with nothing of its own. Where those clash, the names of the arguments not all overloads
    share (`dim_keepdim_dtype`), then a count."""
    width = max(len(g.arguments) for g in group)

    def at(g: FunctionSchema, i: int):
        return g.arguments[i] if i < len(g.arguments) else None

    shared = {i for i in range(width) if len({None if at(g, i) is None else _arg_key(at(g, i)) for g in group}) == 1}
    names = []
    for g in group:
        types, extra = [], None
        for i, mine in enumerate(g.arguments):
            theirs = [at(o, i) for o in group if o is not g]
            if any(t is not None and t.type.base != mine.type.base for t in theirs):
                types.append(mine.type.base)
            elif extra is None and any(t is None for t in theirs):
                extra = mine.name
        names.append("_".join(types) if types else extra or "")
    for i, n in enumerate(names):
        if names.count(n) > 1:
            names[i] = "_".join(a.name for j, a in enumerate(group[i].arguments) if j not in shared) or n
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        seen[n] = seen.get(n, 0) + 1
        if seen[n] > 1:
            names[i] = f"{n}_{seen[n]}" if n else str(seen[n])
    return names


def _name_unnamed_overloads(read: list[Entry], reported: list[str]) -> list[Entry]:
    """The entries, with overloads written under one name without an overload name told
    apart by a derived one (`_overload_names`); identical schemas stay duplicates."""
    groups: dict[str, list[Entry]] = {}
    for e in read:
        groups.setdefault(e.name, []).append(e)
    taken = set(groups)
    renamed: dict[int, Entry] = {}
    for name, group in groups.items():
        distinct = {tuple(map(_arg_key, e.schema.arguments)) for e in group}
        if len(group) < 2 or group[0].schema.overload_name or len(distinct) < 2:
            continue
        unique: list[Entry] = []
        for e in group:
            if all(
                tuple(map(_arg_key, e.schema.arguments)) != tuple(map(_arg_key, u.schema.arguments)) for u in unique
            ):
                unique.append(e)
        for e, overload in zip(unique, _overload_names([u.schema for u in unique])):
            if not overload:
                continue  # the overload with nothing of its own keeps the name as written
            full = f"{name}.{overload}"
            if full in taken:
                continue  # the derived name is taken: left as written (a duplicate if it clashes)
            taken.add(full)
            schema = dataclasses.replace(e.schema, overload_name=overload)

            def relocate(f: Formula) -> Formula:
                return dataclasses.replace(f, location=dataclasses.replace(f.location, entry=full))

            renamed[id(e)] = dataclasses.replace(
                e,
                schema=schema,
                location=dataclasses.replace(e.location, entry=full),
                backward=tuple(map(relocate, e.backward)),
                forward=tuple(map(relocate, e.forward)),
                ignored=tuple(map(relocate, e.ignored)),
            )
            reported.append(
                f"{e.location.file or '<text>'}:{e.location.line}: '{name}' is one of {len(unique)} "
                f"overloads written without an overload name; read as {full!r}"
            )
    return [renamed.get(id(e), e) for e in read]


# How formulas of the old form name the outputs they use: `result1`, `grads[2]`.
_OUTPUT_USE = re.compile(r"(?<![\w.])(?:result(\d+)|grads\s*\[\s*(\d+)\s*\])")


# Outputs that formulas of 0.4 to 1.1 name as Declarations.cwrap and native_functions.yaml
# did, by their position in the returns: `max(Tensor self, int64_t dim, bool keepdim)` returns
# (max, max_indices), the THNN forwards (output, finput, fgrad_input), (output, total_weight),
# svd (res1, res2, res3), later (U, S, V); slogdet (sign, logabsdet); solve (solution, LU);
# symeig (eigenvalues, eigenvectors_return).
LEGACY_OUTPUT_NAMES: dict[str, int] = {
    "output": 0,
    "indices": 1,
    "max_indices": 1,
    "min_indices": 1,
    "total_weight": 1,
    "is_target": 1,
    "buffer": 1,
    "finput": 1,
    "fgrad_input": 2,
    "res1": 0,
    "res2": 1,
    "res3": 2,
    "U": 0,
    "S": 1,
    "V": 2,
    "sign": 0,
    "logabsdet": 1,
    "solution": 0,
    "eigenvalues": 0,
    "eigenvectors_return": 1,
}
_BARE_NAME = re.compile(r"(?<![\w.:>])([A-Za-z_]\w*)(?![\w(])")


def _with_inferred_returns(schema: FunctionSchema, pairs: dict) -> FunctionSchema:
    """A legacy schema (no `-> returns` written) with the returns its entry uses: one more
    than the highest `resultN`/`grads[N]`, or the length of its `output_differentiability`
    list, and at least one, named where a formula uses an old output name (LEGACY_OUTPUT_NAMES)
    that is no input of the schema and no key of the entry."""
    n = 1
    inputs = {a.name for a in schema.arguments}
    keys = {k.strip() for key in pairs for k in key.split(",")}
    named: dict[int, str] = {}
    for key, (value, _) in pairs.items():
        if key == "output_differentiability" and isinstance(value, yaml.SequenceNode):
            n = max(n, len(value.value))
        elif key != "name" and isinstance(value, yaml.ScalarNode):
            for m in _OUTPUT_USE.finditer(value.value):
                n = max(n, int(m.group(1) or m.group(2)) + 1)
            for m in _BARE_NAME.finditer(value.value):
                word = m.group(1)
                if word in LEGACY_OUTPUT_NAMES and word not in inputs and word not in keys:
                    named.setdefault(LEGACY_OUTPUT_NAMES[word], word)
    if named:
        n = max(n, max(named) + 1)
    if n == 1 and not named:
        return schema
    returns = tuple(Return(Type("Tensor"), named.get(i)) for i in range(n))
    return dataclasses.replace(schema, returns=returns, returns_tuple=n != 1)


def _scalar(node, where: Location) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise SpecError("expected a single-line text value", where)
    return node.value


def _read_entry(node, file: str | None, reported: list[str]) -> Entry:
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
        try:
            # PyTorch before 1.2 wrote C++ types and no returns: `abs(Tensor self)`.
            schema = FunctionSchema.parse_legacy(name_text)
        except SchemaError:
            raise e.located(dataclasses.replace(where, entry=name_text)) from None
    where = dataclasses.replace(where, entry=schema.full_name)
    if schema.legacy:
        schema = _with_inferred_returns(schema, pairs)

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
                raise SpecError(
                    f"'dispatch: {dispatch}:' must map keys to formulas",
                    dataclasses.replace(where, line=sub.start_mark.line + 1),
                )
            for k, v in sub.value:
                formula_pairs[_scalar(k, where)] = (v, k.start_mark.line + 1)

    inputs = {a.name for a in schema.arguments}
    outputs = {r.name for r in schema.returns if r.name}
    backward: list[Formula] = []
    forward: list[Formula] = []
    marked_non_diff: list[str] = []
    ignored: list[Formula] = []
    # Loading routes a key by its value's text, as torchgen's loader does (this layer sits below
    # the grammar); what each formula states is resolved from its tree later, in normalize.py.
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
            # Reported, not fatal: one odd key (a newer file's new meta key, a typo) should not
            # reject a whole file; the warning names file:line so a lost formula is found.
            bad = [n for n in names if n not in inputs and n not in outputs and not _RESULT_KEY.match(n)]
            message = (
                f"{loc}: unknown key: {', '.join(map(repr, bad))} is neither an input of the schema "
                f"({', '.join(sorted(inputs)) or 'none'}) nor an output (result, result0.., "
                f"{', '.join(sorted(outputs)) or 'no named outputs'}); its formula is ignored"
            )
            reported.append(message)
            warnings.warn(message, SpecWarning, stacklevel=4)

    out_diff = None
    if "output_differentiability" in pairs:
        value, line = pairs["output_differentiability"]
        loc = dataclasses.replace(where, line=line, key="output_differentiability")
        if not isinstance(value, yaml.SequenceNode):
            raise SpecError("'output_differentiability' must be a list", loc)
        items = [_scalar(v, loc) for v in value.value]
        out_diff = tuple({"True": True, "true": True, "False": False, "false": False}.get(i, i) for i in items)
        if len(out_diff) > len(schema.returns):
            raise SpecError(
                f"'output_differentiability' has {len(out_diff)} items but the op returns {len(schema.returns)}", loc
            )
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

"""Each forward takes its entry's schema arguments as the registry passes them: positionally, in
schema order, under the schema's names (`from_` for `from`), with Python defaults that agree with
the schema's. `Registry.op` checks it when it builds an op, against its own spec; here the check
runs over every spec jaxderiv ships or reads (the seed files, their union, the default spec, the
installed torch's file), and a wrong name, arity or default is shown to be caught."""

from __future__ import annotations

import functools
import inspect

import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import forward as F
from jaxderiv.errors import SpecError
from jaxderiv.registry import (
    DEFAULTS_OF_OTHER_RELEASES,
    RENAMED_ARGUMENTS,
    ForwardSignatureError,
    Registry,
    check_forward_signature,
    forward_signature_mismatches,
)
from jaxderiv.spec import (
    load_seed_spec,
    load_spec,
    newest_spec_file,
    read_spec_text,
    shipped_spec_files,
    torch_spec_file,
)

# Mismatches whose fix is under way in files of other changes: each names its file and why.
# The test below asserts this is exactly what remains, so that a fixed entry must leave it
# and a new mismatch cannot hide in it.
PENDING: set[str] = set()

SPECS = ["v1_7", "v1_10_flat", "seed", "newest", "default", "torch"]


@functools.cache
def _spec(which: str):
    if which == "seed":
        return load_seed_spec()
    if which == "default":
        return load_spec()
    if which == "newest":
        return load_spec(newest_spec_file())
    if which == "torch":
        try:
            return load_spec(torch_spec_file())
        except SpecError as e:
            pytest.skip(str(e))
    (path,) = [p for p in shipped_spec_files() if p.stem == f"derivatives_{which}"]
    return load_spec(path)


def _mismatches(which: str) -> dict[str, list[str]]:
    F.load()
    out = {}
    for entry in _spec(which):
        impl = F.implementation(entry.name)
        if impl is not None:
            found = forward_signature_mismatches(entry, impl)
            if found:
                out[entry.name] = found
    return out


def test_the_specs_are_found():
    assert [p.stem for p in shipped_spec_files()] == ["derivatives_v1_7", "derivatives_v1_10_flat"]


@pytest.mark.parametrize("which", SPECS)
def test_every_forward_takes_its_schema_arguments(which):
    bad = {name: found for name, found in _mismatches(which).items() if name not in PENDING}
    assert not bad, "\n".join(f"{name}: {'; '.join(found)}" for name, found in sorted(bad.items()))


def test_pending_is_exactly_what_remains():
    remaining: set[str] = set()
    for which in SPECS:
        try:
            remaining |= set(_mismatches(which))
        except pytest.skip.Exception:
            continue
    assert remaining == PENDING, (
        f"fixed, remove from PENDING: {sorted(PENDING - remaining)}; new mismatches: {sorted(remaining - PENDING)}"
    )


def _all_loaded():
    for which in SPECS:
        try:
            yield _spec(which)
        except pytest.skip.Exception:
            continue


def _position(entry, name: str) -> int | None:
    names = [a.name for a in entry.schema.arguments]
    return names.index(name) if name in names else None


def test_each_rename_is_of_a_shipped_schema_and_the_forward_takes_the_newer_name():
    F.load()
    for (entry_name, older), param in RENAMED_ARGUMENTS.items():
        entries = [s[entry_name] for s in _all_loaded() if entry_name in s]
        positions = {_position(e, older) for e in entries} - {None}
        assert len(positions) == 1, f"{entry_name}: no shipped schema has an argument {older!r} (stale rename)"
        (i,) = positions
        assert any(_position(e, param) == i for e in entries), f"{entry_name}: no schema names argument {i} {param!r}"
        impl = F.implementation(entry_name)
        assert impl is not None, entry_name
        assert list(inspect.signature(impl).parameters)[i] == param, entry_name


def test_each_default_exception_is_needed():
    F.load()
    for entry_name, argument in DEFAULTS_OF_OTHER_RELEASES:
        param = inspect.signature(F.IMPLS[entry_name]).parameters[argument]
        defaults = {
            s[entry_name].schema.arguments[i].default
            for s in _all_loaded()
            if entry_name in s and (i := _position(s[entry_name], argument)) is not None
        }
        assert param.default is not inspect.Parameter.empty and len(defaults) > 1, (entry_name, argument, defaults)


# -- the check catches what it should ---------------------------------------------------------

SCHEMA = "fake_op(Tensor self, Scalar alpha=1, int[2] padding=0, *, bool flag=False) -> Tensor"


@pytest.fixture
def build(monkeypatch):
    """`build(forward, schema=SCHEMA)`: the op of a one-entry spec whose forward is `forward`."""
    F.load()

    def make(forward, schema=SCHEMA):
        spec = read_spec_text(f"- name: {schema}\n  self: grad\n", "fake.yaml")
        (entry,) = spec
        monkeypatch.setitem(F.IMPLS, entry.name, forward)
        return Registry(spec).op(entry.name)

    return make


def _line(fn) -> str:
    return f"{__name__}.{fn.__qualname__} ({__file__}:{fn.__code__.co_firstlineno})"


def test_a_wrong_name_is_caught(build):
    def fake(x, alpha=1, padding=0, flag=False):
        return x

    with pytest.raises(ForwardSignatureError) as e:
        build(fake)
    message = str(e.value)
    assert message.startswith("fake.yaml:1, entry 'fake_op': the forward of 'fake_op', ")
    assert _line(fake) in message
    assert "parameter 0 is named 'x', the schema's argument 0 is 'self' (Tensor self)" in message


def test_a_missing_parameter_is_caught(build):
    def fake(self, alpha=1):
        return self

    with pytest.raises(ForwardSignatureError, match=r"takes 2 positional parameter\(s\), the schema passes 4 "):
        build(fake)
    with pytest.raises(ForwardSignatureError, match=r"no parameter for padding, flag"):
        build(fake)


def test_a_wrong_default_is_caught(build):
    def fake(self, alpha=2, padding=(0, 1), flag=0):
        return self

    with pytest.raises(ForwardSignatureError) as e:
        build(fake)
    message = str(e.value)
    assert "parameter 'alpha' defaults to 2, the schema's argument Scalar alpha=1 to 1" in message
    assert "parameter 'padding' defaults to (0, 1)" in message
    assert "parameter 'flag' defaults to 0, the schema's argument bool flag=False to False" in message


def test_parameters_the_schema_cannot_fill_are_caught(build):
    def extra(self, alpha, padding, flag, more):
        return self

    def keyword(self, alpha, padding, flag, *, more):
        return self

    with pytest.raises(ForwardSignatureError, match=r"parameter 'more', past the schema's 4 arguments, has no default"):
        build(extra)
    with pytest.raises(ForwardSignatureError, match=r"keyword-only parameter 'more' has no default"):
        build(keyword)


def test_what_the_schema_allows_is_accepted(build):
    def same(self, alpha=1.0, padding=(0, 0), flag=False, more=None):
        return self * alpha

    def without_defaults(self, alpha, padding, flag):
        return self * alpha

    def variadic(self, *rest):
        return self * rest[0]

    @functools.wraps(same)
    def wrapped(*args):
        return same(*args)

    for forward in (same, without_defaults, variadic, wrapped):
        op = build(forward)
        np.testing.assert_allclose(op(jnp.arange(3.0), 2.0), [0.0, 2.0, 4.0])

    def keyword_named(self, from_=0, to=1):  # `from` is a Python keyword
        return self

    build(keyword_named, "fake_op(Tensor self, float from=0, float to=1) -> Tensor")


def test_renamed_arguments_are_accepted_only_where_listed():
    spec = read_spec_text(
        "- name: linalg_inv_ex(Tensor self, *, bool check_errors=False) -> (Tensor inverse, Tensor info)\n  self: grad\n",
        "old.yaml",
    )
    (entry,) = spec

    def linalg_inv_ex(A, check_errors=False):
        return A

    check_forward_signature(entry, linalg_inv_ex)  # 1.10's `self`, RENAMED_ARGUMENTS' `A`
    other = read_spec_text("- name: other_op(Tensor self) -> Tensor\n  self: grad\n", "old.yaml")
    (entry,) = other
    with pytest.raises(ForwardSignatureError, match=r"parameter 0 is named 'A'"):
        check_forward_signature(entry, linalg_inv_ex)

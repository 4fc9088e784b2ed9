"""Formula syntax trees become JAX callables, by closures over registered names: no exec.

`translate(tree, variables)` resolves every name at translation time (unknown helpers,
methods and variables, and wrong arities, are errors then) and returns `fn(env) -> value`,
where `env` maps the formula's variables (`grad`, `self`, `result`, `self_t`, ...) to values.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, Concatenate, Iterable, Mapping

from . import expr as E
from .cxx import BINARY, UNARY, truth
from .errors import JaxderivError, Location, TranslationError
from .forward import callable_named
from .namespace import CONSTANTS, HELPERS, METHODS, TEMPLATES, lookup, plain, resolve, unqualified
from .normalize import Kind, normalize

__all__ = ["translate", "Compiled", "names_called"]

Compiled = Callable[[Mapping[str, Any]], Any]
# run(env, *args): a call wrapped by _Translator._located, its failures naming the formula's location.
_Located = Callable[Concatenate[Mapping[str, Any], ...], Any]


# calls(name) -> the callable a formula's call of the ATen op `name` should run, or None.
OpCalls = Callable[[str], "Callable | None"]


def translate(
    tree: E.Node,
    variables: Iterable[str],
    location: Location | None = None,
    calls: OpCalls | None = None,
    version: tuple[int, ...] | None = None,
) -> Compiled:
    """Compile `tree` into `fn(env)`; `variables` are the names `env` will provide.

    `version` is the release the formula's file comes from (`Spec.version.release`): it picks
    the meaning of helpers PyTorch revised; None (unknown) gets the newest.

    `calls` resolves a call of an op that has its own entry in the spec being built (a registry
    passes its ops): differentiating the formula then applies that entry's formulas, as
    PyTorch's double backward does, instead of differentiating the op's forward implementation.
    """
    return _Translator(frozenset(variables), location or Location(), calls, version).compile(tree)


def names_called(tree: E.Node) -> set[str]:
    """Helper and method names a formula calls (methods as `.name`): for coverage reports."""
    out = set()
    for node in E.iter_nodes(tree):
        if isinstance(node, E.Call):
            f = node.func
            if isinstance(f, E.Attr):
                out.add("." + f.name)
            elif isinstance(f, E.Name):
                out.add(f.name)
            elif isinstance(f, E.Template):
                out.add(f.base.name + "<>")
    return out


def _arity_error(fn: Callable, n: int) -> str | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*range(n))
    except TypeError:
        params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = sum(p.default is p.empty for p in params)
        if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
            return f"takes at least {required} arguments"
        return (
            f"takes {required} arguments" if required == len(params) else f"takes {required} to {len(params)} arguments"
        )
    return None


class _Translator:
    def __init__(
        self,
        variables: frozenset[str],
        location: Location,
        calls: OpCalls | None = None,
        version: tuple[int, ...] | None = None,
    ):
        self.variables = variables
        self.location = location
        self.calls = calls
        self.version = version  # picks revised helpers' meaning

    def _entry_op(self, name: str) -> Callable | None:
        """The spec's own op for a call `name(...)`, if the registry provides one."""
        if self.calls is None:
            return None
        for candidate in dict.fromkeys((unqualified(name), plain(unqualified(name)))):
            fn = self.calls(candidate)
            if fn is not None:
                return fn
        return None

    def error(self, node, message: str) -> TranslationError:
        return TranslationError(message, self.location, getattr(node, "col", None) or None)

    def compile(self, node) -> Compiled:
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} is not supported in formulas")
        return method(node)

    def _located(self, node, fn: Callable, describe: str) -> _Located:
        """Wrap a call so that a failure at run time names the formula and column."""
        location, col = self.location, getattr(node, "col", None) or None

        def run(env, *args):
            try:
                return fn(*args)
            except JaxderivError as e:
                raise e.located(location) from None
            except Exception as e:  # any failure of the call, re-raised naming the formula (chained)
                raise TranslationError(f"{describe} failed: {type(e).__name__}: {e}", location, col) from e

        return run

    # -- leaves ----------------------------------------------------------------------------
    def _num(self, node: E.Num):
        v = node.value
        return lambda env: v

    def _bool(self, node: E.Bool):
        v = node.value
        return lambda env: v

    def _str(self, node: E.Str):
        v = node.value
        return lambda env: v

    def _name(self, node: E.Name):
        name = node.name
        if name in self.variables:
            return lambda env: env[name]
        value = lookup(CONSTANTS, name)
        if value is not None or name in CONSTANTS:
            return lambda env: value
        if lookup(HELPERS, name) is not None:  # a function passed as a value: its variant chosen when called
            version = self.version

            def fn(*args):
                chosen = resolve(name, len(args), version)
                assert chosen is not None  # the name was found above
                return chosen(*args)

            return lambda env: fn
        known = ", ".join(sorted(self.variables))
        raise self.error(node, f"unknown name {name!r}: not a variable of this formula ({known}) nor a known constant")

    # -- operators -------------------------------------------------------------------------
    def _unary(self, node: E.Unary):
        operand, fn = self.compile(node.operand), UNARY[node.op]
        run = self._located(node, fn, f"operator {node.op!r}")
        return lambda env: run(env, operand(env))

    def _binary(self, node: E.Binary):
        left, right = self.compile(node.left), self.compile(node.right)
        if node.op == "&&":
            return lambda env: _logical_and(left(env), right, env)
        if node.op == "||":
            return lambda env: _logical_or(left(env), right, env)
        fn = BINARY.get(node.op)
        if fn is None:
            raise self.error(node, f"operator {node.op!r} is not supported")
        run = self._located(node, fn, f"operator {node.op!r}")
        return lambda env: run(env, left(env), right(env))

    def _ternary(self, node: E.Ternary):
        cond, then, other = self.compile(node.cond), self.compile(node.then), self.compile(node.other)
        return lambda env: then(env) if truth(cond(env)) else other(env)

    def _index(self, node: E.Index):
        obj, index = self.compile(node.obj), self.compile(node.index)
        run = self._located(node, lambda o, i: o[i], "indexing")
        return lambda env: run(env, obj(env), index(env))

    def _bracelist(self, node: E.BraceList):
        items = [self.compile(i) for i in node.items]
        if node.type is None:
            return lambda env: tuple(i(env) for i in items)
        build = self._callee(node.type, len(items))
        run = self._located(node, build, "brace initialisation")
        return lambda env: run(env, *(i(env) for i in items))

    def _lambda(self, node: E.Lambda):
        names = tuple(name for _, name in node.params)
        body = _Translator(self.variables | set(names), self.location, self.calls).compile(node.body)

        def make(env):
            return lambda *args: body({**env, **dict(zip(names, args))})

        return make

    def _attr(self, node: E.Attr):
        raise self.error(node, f"member {node.name!r} is read without a call; only method calls are supported")

    def _template(self, node: E.Template):
        value = self._callee(node, None)
        return lambda env: value

    # -- calls -----------------------------------------------------------------------------
    def _callee(self, func, n_args: int | None) -> Callable:
        """The Python callable a call's function expression names (resolved now)."""
        if isinstance(func, E.Name):
            try:
                fn = resolve(func.name, n_args, self.version)
            except TypeError as e:  # a helper none of whose variants takes n_args arguments
                # an older signature registered as a helper (helpers/older_releases.py) leaves
                # the other counts to the op or forward of that name, as before it was registered
                fn = self._entry_op(func.name) or _forward_named(func.name)
                if fn is None or n_args is None or _arity_error(fn, n_args):
                    raise self.error(func, f"helper {func.name!r} {e}, but the formula passes {n_args}") from None
            if fn is None:  # `at::sin(x)`: the ATen op, as the spec's op or its forward implementation
                fn = self._entry_op(func.name) or _forward_named(func.name)
            if fn is None:
                raise self.error(
                    func, f"unknown helper {func.name!r}: no function of that name is registered in jaxderiv.helpers"
                )
            what = f"helper {func.name!r}"
        elif isinstance(func, E.Template):
            builder = lookup(TEMPLATES, func.base.name)
            if builder is None:
                raise self.error(func, f"unknown template {func.base.name!r}")
            args = tuple(_template_arg(a) for a in func.args)
            try:
                fn = builder(*args)
            except (TypeError, ValueError) as e:
                raise self.error(func, f"template {func.base.name}<...>: {e}") from None
            what = f"template {func.base.name!r}"
        else:
            raise self.error(func, "only named functions can be called")
        if n_args is not None and callable(fn):
            problem = _arity_error(fn, n_args)
            if problem:
                raise self.error(func, f"{what} {problem}, but the formula passes {n_args}")
        return fn

    def _call(self, node: E.Call):
        args = [self.compile(a) for a in node.args]
        if isinstance(node.func, E.Attr):
            obj = self.compile(node.func.obj)
            fn = _method(node.func.name, self._entry_op)
            if fn is None:
                raise self.error(
                    node.func, f"unknown method '.{node.func.name}()': no tensor method of that name is registered"
                )
            problem = _arity_error(fn, len(args) + 1)
            if problem:
                raise self.error(
                    node.func,
                    f"method '.{node.func.name}()' {problem} including the object, but the formula passes {len(args) + 1}",
                )
            run = self._located(node, fn, f"method '.{node.func.name}()'")
            return lambda env: run(env, obj(env), *(a(env) for a in args))
        name = node.func.name if isinstance(node.func, E.Name) else None
        if name is not None and name in self.variables:  # calling a lambda held in a variable
            f = self.compile(node.func)
            return lambda env: f(env)(*(a(env) for a in args))
        fn = self._callee(node.func, len(args))
        label = name or getattr(getattr(node.func, "base", None), "name", "call")
        run = self._located(node, fn, f"{label!r}")
        return lambda env: run(env, *(a(env) for a in args))


def _method(name: str, entry_op: Callable[[str], Callable | None] = lambda _: None) -> Callable | None:
    """`x.name(...)`: a registered method, else the spec's own op `name` (see `translate`), else
    the forward named `name`; `_symint` spellings as plain."""
    for candidate in dict.fromkeys((name, plain(name))):
        fn = METHODS.get(candidate) or entry_op(candidate) or callable_named(candidate)
        if fn is not None:
            return fn
    return None


def _forward_named(name: str) -> Callable | None:
    """`at::sin(x)`, `sin_symint(x)`: the forward implementation of the ATen op named."""
    return callable_named(unqualified(name)) or callable_named(plain(unqualified(name)))


def _template_arg(node):
    """Template arguments are static: integers stay ints, type names become their text."""
    if isinstance(node, E.Num):
        return node.value
    return E.to_source(node)


def _logical_and(a, right, env):
    return truth(a) and truth(right(env))


def _logical_or(a, right, env):
    return truth(a) or truth(right(env))


def unresolved_names(tree: E.Node, version: tuple[int, ...] | None = None) -> set[str]:
    """Helpers (`name`) and methods (`.name`) a formula calls that nothing registered provides;
    a helper none of whose variants takes the call's arguments is `name/<count>` (resolved as
    the translator does: `namespace.resolve`)."""
    missing = set()
    for node in E.iter_nodes(tree):
        if not isinstance(node, E.Call):
            continue
        f = node.func
        if isinstance(f, E.Attr) and _method(f.name) is None:
            missing.add("." + f.name)
        elif isinstance(f, E.Name):
            try:
                found = resolve(f.name, len(node.args), version)
            except TypeError:
                fallback = _forward_named(f.name)
                if fallback is None or _arity_error(fallback, len(node.args)):
                    missing.add(f"{f.name}/{len(node.args)}")
                continue
            if found is None and _forward_named(f.name) is None:
                missing.add(f.name)
        elif isinstance(f, E.Template) and lookup(TEMPLATES, f.base.name) is None:
            missing.add(f.base.name + "<>")
    return missing


# -- formulas written for real tensors only ------------------------------------------------------

# Methods that read only a tensor's metadata, and calls that read only the shape and dtype of
# their tensor arguments: a complex value there changes nothing in the formula's math (check/mutate.py
# skips such reads too: detaching them changes nothing).
METADATA_METHODS = frozenset(
    {
        "sizes",
        "sym_sizes",
        "size",
        "sym_size",
        "dim",
        "numel",
        "sym_numel",
        "strides",
        "sym_strides",
        "stride",
        "scalar_type",
        "options",
        "dtype",
        "device",
        "layout",
        "is_contiguous",
        "suggest_memory_format",
        "defined",
        "is_complex",
        "is_floating_point",
    }
)
SHAPE_ONLY_METHODS = frozenset({"expand_as", "view_as", "reshape_as", "type_as"})
SHAPE_ONLY_CALLS = frozenset({"zeros_like", "ones_like", "empty_like"})


def _is_manual_helper(name: str) -> bool:
    """A FunctionsManual helper (`det_backward`, `pow_backward_self`, `cat_jvp`): jaxderiv
    implements these from the current math, which covers complex inputs."""
    n = plain(unqualified(name))
    return "_backward" in n or n.endswith("_jvp")


def _whole(node) -> bool:
    """A name passed as it is, or only cast or copied (`self.to(grad.scalar_type())`)."""
    while isinstance(node, E.Call) and isinstance(node.func, E.Attr) and node.func.name in _CASTS:
        node = node.func.obj
    return isinstance(node, E.Name)


_CASTS = frozenset({"to", "contiguous", "clone", "detach"})


def _value_reads(node, exempt_helpers: bool = True) -> set[str]:
    """Names the formula reads as values: not only their metadata, and (with `exempt_helpers`)
    not only as a whole argument of a FunctionsManual helper (inline algebra on them counts)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, E.Name):
            out.add(n.name)
        elif isinstance(n, E.Call) and isinstance(n.func, E.Attr):
            method, obj = n.func.name, n.func.obj
            if not (method in METADATA_METHODS and isinstance(obj, E.Name)):
                stack.append(obj)
            stack.extend(a for a in n.args if not (method in SHAPE_ONLY_METHODS and isinstance(a, E.Name)))
        elif isinstance(n, E.Call) and isinstance(n.func, E.Name):
            name = plain(unqualified(n.func.name))
            if name in SHAPE_ONLY_CALLS:
                stack.extend(a for a in n.args if not isinstance(a, E.Name))
            else:
                exempt = exempt_helpers and _is_manual_helper(name)
                stack.extend(a for a in n.args if not (exempt and _whole(a)))
        else:
            stack.extend(E.children(n))
    return out


def _writes_conj(tree) -> bool:
    return any(
        isinstance(n, (E.Attr, E.Name))
        and plain(unqualified(getattr(n, "name", ""))) in ("conj", "conj_physical", "_conj")
        for n in E.iter_nodes(tree)
    )


@functools.lru_cache(maxsize=1)
def _newest_entries():
    """The newest release's file shipped (torch 2.14.1's): where PyTorch later added `.conj()`."""
    from .spec import SpecWarning, load_spec, newest_spec_file

    try:
        return load_spec(newest_spec_file()).entries
    except JaxderivError as e:  # the shipped file missing or unreadable (SpecError): said, and the other test decides
        warnings.warn(f"real-only formulas judged without the newest release's file: {e}", SpecWarning, stacklevel=2)
        return {}


def real_only_inputs(entry) -> tuple[str, frozenset[str]] | None:
    """Why `entry`'s formulas are for real tensors only, and the variables whose complex value
    they get wrong; None where complex inputs are fine.

    Only entries of a release before complex autograd (`Version.complex_autograd` False: PyTorch
    1.7 and earlier) can be real-only. A formula of such an entry is real-only where it does not
    write `conj` and either (a) the newest shipped release's formula for the same entry and key
    conjugates some of the values it reads (PyTorch later fixed it for complex: 1.7's addmm
    `maybe_multiply(grad, beta)`, sqrt, mv): those values; or (b) it reads values that are
    complex for complex inputs (a differentiable Tensor input, a Scalar, an output) other than
    through their metadata (`.sizes()`, `zeros_like(x)`) or as whole arguments of a
    FunctionsManual `*_backward` helper, which jaxderiv writes from the current, complex-aware
    math: those values. So grad-only and index/mask formulas (`grad`, `grad.gather(dim,
    index)`) and helper calls (`det_backward(grad, self, result)`) stay complex-capable, and
    inline algebra (`grad / (2 * result)`) is refused only when the value it reads is complex.
    """
    version = entry.version
    if version is None or version.complex_autograd:
        return None
    schema = entry.schema
    capable = {
        a.name
        for a in schema.arguments
        if entry.formula_for(a.name) is not None and a.name not in entry.non_differentiable
    }
    capable |= {a.name for a in schema.arguments if a.type.base == "Scalar"}
    capable |= {"result"} | {f"result{i}" for i in range(len(schema.returns))}
    capable |= {r.name for r in schema.returns if r.name} | {r.name + "_return" for r in schema.returns if r.name}
    newest = _newest_entries().get(entry.name)
    newer = (normalize(newest).backward + normalize(newest).forward) if newest is not None else ()
    derivatives = normalize(entry)
    reasons, names = [], set()
    for d in derivatives.backward + derivatives.forward:
        if d.kind is not Kind.WRITTEN:
            continue
        tree = d.require_parsed()
        if _writes_conj(tree):
            continue
        reads = _value_reads(tree, exempt_helpers=False) & capable
        later = next((g for g in newer if g.key == d.key), None)
        # The newer formula as written (an auto_element_wise marker conjugates nothing itself).
        fixed = _conjugated(later.parsed) & reads if later is not None and later.parsed is not None else set()
        inline = _value_reads(tree) & capable
        if fixed:
            assert later is not None  # fixed is empty without a newer formula
            reasons.append(
                f"its formula for {d.key!r} ({d.text}) has no .conj(), which PyTorch's newer formula adds ({later.text})"
            )
        elif inline:
            reasons.append(f"its formula for {d.key!r} ({d.text}) reads {', '.join(sorted(inline))} without .conj()")
        names |= fixed | inline
    if not names:
        return None
    return (
        f"{entry.name!r} is from PyTorch {version.text}, written for real tensors (before complex autograd): "
        + "; ".join(reasons),
        frozenset(names),
    )


def _conjugated(tree) -> set[str]:
    """Names a formula conjugates: `x.conj()`, `conj(x)`, `(x * y).conj()`."""
    out = set()
    for n in E.iter_nodes(tree):
        if isinstance(n, E.Call) and isinstance(n.func, E.Attr) and n.func.name in ("conj", "conj_physical"):
            out |= {m.name for m in E.iter_nodes(n.func.obj) if isinstance(m, E.Name)}
        elif (
            isinstance(n, E.Call)
            and isinstance(n.func, E.Name)
            and plain(unqualified(n.func.name)) in ("conj", "conj_physical")
        ):
            out |= {m.name for a in n.args for m in E.iter_nodes(a) if isinstance(m, E.Name)}
    return out

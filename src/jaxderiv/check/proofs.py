"""Symbolic proofs that elementwise formulas are the derivatives of their ops, over the reals.

An entry's formula is translated into sympy by a small translator of its own (the names
elementwise formulas use, proof_definitions.FUNCTIONS and METHODS; any other name means no
proof), and compared with the derivative of the op's sympy definition, its op record's
`definition` (declared beside the forward in jaxderiv/forward): `sum_j grads[j] * d out_j / d input` for a backward
formula (each component of a tuple-returning one against its input), `sum_i d out / d input_i
* input_i_t` for a `result:` formula. Comparisons, masks and `where` become sympy Piecewise, so
an op with kinks is compared piece by piece. When the residual is not plainly zero it is
evaluated with mpmath at 50 digits at random points of the op's domain (on each side of its
kinks); where it vanishes there and `simplify` reaches zero the proof is "symbolic", else
"numerical". `python -m jaxderiv.check.proofs [FILE]` prints a table.
"""

from __future__ import annotations

import dataclasses
import random
import sys

import mpmath
import sympy as sp

from ..errors import SchemaError
from ..expr import Attr, Binary, Bool, Call, Index, Name, Node, Num, Str, Ternary, Unary, iter_nodes, to_source
from ..normalize import Kind, derivative
from ..spec import Entry, Formula, load_spec
from .opdb import record, traits
from ..namespace import lookup
from .proof_definitions import CONSTANTS, FUNCTIONS, METHODS, OPAQUE, as_condition, as_number
from ..records.symbolic import Definition

__all__ = [
    "Proof",
    "elementwise_entries",
    "mode_proofs",
    "prove_formula",
    "prove_entry",
    "to_sympy",
    "Unsupported",
]

_GRAD_MODE = "GradMode::is_enabled"


class Unsupported(Exception):
    """The formula uses something this translator does not model: no proof is attempted."""


_ARITHMETIC = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}
_COMPARISONS = {"<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge, "==": sp.Eq, "!=": sp.Ne}
_LOGIC = {"|": sp.Or, "||": sp.Or, "&": sp.And, "&&": sp.And}


def _number(text: str) -> sp.Rational:
    """A literal as written, exactly (`2.3025850929940456`, `1.`, `0.5f`)."""
    text = text.rstrip("fF")
    return sp.Rational(text + "0" if text.endswith(".") else text)


def _pick(cond, then, other, env):
    """C++'s `?:`: a known condition picks its branch (only that one is translated)."""
    c = as_condition(to_sympy(cond, env))
    if c is sp.true:
        return to_sympy(then, env)
    if c is sp.false:
        return to_sympy(other, env)
    return sp.Piecewise((as_number(to_sympy(then, env)), c), (as_number(to_sympy(other, env)), True))


def to_sympy(node: Node, env: dict):
    """The sympy value of an elementwise formula tree (an expression, a condition or a tuple
    of expressions); Unsupported for anything else."""
    match node:
        case Num():
            return _number(node.text) if isinstance(node.value, float) else sp.Integer(node.value)
        case Bool(value=v):
            return sp.true if v else sp.false
        case Str(value=v):
            return v
        case Name(name=n) if n in env:
            return env[n]
        case Name(name=n) if n.removeprefix("at::") in CONSTANTS:
            return CONSTANTS[n.removeprefix("at::")]
        case Unary(op="-"):
            return -as_number(to_sympy(node.operand, env))
        case Unary(op="!"):
            return sp.Not(as_condition(to_sympy(node.operand, env)))
        case Binary(op=op) if op in _ARITHMETIC:
            return _ARITHMETIC[op](as_number(to_sympy(node.left, env)), as_number(to_sympy(node.right, env)))
        case Binary(op=op) if op in _COMPARISONS:
            return _COMPARISONS[op](as_number(to_sympy(node.left, env)), as_number(to_sympy(node.right, env)))
        case Binary(op=op) if op in _LOGIC:
            return _LOGIC[op](as_condition(to_sympy(node.left, env)), as_condition(to_sympy(node.right, env)))
        case Ternary():
            return _pick(node.cond, node.then, node.other, env)
        case Index(obj=Name(name="grads"), index=Num(value=int(i))) if i < len(env["grads"]):
            return env["grads"][i]
        case Call(func=Name(name=n), args=()) if n == _GRAD_MODE and n in env:
            return env[n]
        case Call(func=Attr(obj=obj, name=name)) if name in METHODS or name in FUNCTIONS:
            fn = METHODS.get(name) or FUNCTIONS[name]
            return fn(to_sympy(obj, env), *[to_sympy(a, env) for a in node.args])
        case Call(func=Name(name=name)) if lookup(FUNCTIONS, name) is not None:
            # the translator's name resolution (namespace.lookup): qualifiers and `_symint` dropped
            return lookup(FUNCTIONS, name)(*[to_sympy(a, env) for a in node.args])
    raise Unsupported(f"no sympy meaning for `{to_source(node)[:60]}` at column {node.col}")


@dataclasses.dataclass(frozen=True)
class Proof:
    op: str
    key: str  # the formula's key
    status: str  # "symbolic", "numerical", "disproved" or "none"
    detail: str = ""  # why none, or the residual's size


_ORDER = ("symbolic", "numerical", "none", "disproved")  # a formula's status is its worst part's


def _real(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


def _default(arg):
    try:
        return arg.default_value()
    except SchemaError:  # no default, or one this model does not need
        return None


def _environment(entry: Entry, definition: Definition) -> dict:
    """Symbols for the entry's names: inputs, tangents, grads, results, GradMode."""
    fixed = dict(definition.fixed)
    env: dict = {}
    for a in entry.schema.arguments:
        if a.name in fixed:
            v = fixed[a.name]
            env[a.name] = sp.Integer(v) if isinstance(v, int) and not isinstance(v, bool) else v
        elif a.name in definition.booleans:
            env[a.name] = sp.Symbol(a.name)
        elif a.type.is_list:
            env[a.name] = _default(a)
        elif a.is_tensor or a.type.base in ("Scalar", "float", "int", "SymInt"):
            env[a.name] = _real(a.name)
        elif a.type.base == "bool":
            env[a.name] = bool(_default(a))
        else:
            env[a.name] = _default(a)
    for name in definition.args:
        env.setdefault(name, _real(name))  # a return used as a constant (frexp's exponent)
    for name, fn, args in definition.derived:
        env[name] = fn(*[env[a] for a in args])
    env["grad_input_mask"] = OPAQUE  # every input wanted
    for n, v in list(env.items()):
        if isinstance(v, sp.Symbol):
            env[f"{n}_p"] = v
            env[f"{n}_t"] = _real(f"{n}_t")
    env["original_self_p"] = env.get("self")
    value = definition.fn(*[env[a] for a in definition.args])
    outputs = value if isinstance(value, tuple) else (value,)
    env["grads"] = [_real("grad")] + [
        _real(f"grads_{i}") for i in range(1, max(len(outputs), len(entry.schema.returns)))
    ]
    env["grad"] = env["grads"][0]
    env["result"] = outputs[0]
    for i, out in enumerate(outputs):
        env[f"result{i}"] = out
    for i, r in enumerate(entry.schema.returns):
        if r.name:  # an output the definition leaves out (log_sigmoid_forward's buffer): a constant
            env.setdefault(r.name, outputs[i] if i < len(outputs) else _real(r.name))
    env["__outputs__"] = outputs
    return env


_JUMPS = (sp.floor, sp.ceiling, sp.sign, sp.frac)  # piecewise constant: derivative 0 off the jumps


def _smooth(expr: sp.Expr) -> sp.Expr:
    """Derivatives of floor, sign and the like, and Dirac deltas at jumps, are 0 away from the jumps."""

    def at_jump(e) -> bool:
        if isinstance(e, sp.Subs):
            e = e.expr
        return isinstance(e, sp.DiracDelta) or (isinstance(e, sp.Derivative) and isinstance(e.expr, _JUMPS))

    return expr.replace(at_jump, lambda *_: sp.Integer(0))


def _moving_inputs(entry: Entry, env: dict) -> list[str]:
    """Tensor inputs a tangent moves: real symbols (not masks, not fixed values)."""
    return [
        a.name
        for a in entry.schema.arguments
        if a.is_tensor and isinstance(env.get(a.name), sp.Symbol) and env[a.name].is_real
    ]


def _expected(entry: Entry, formula: Formula, env: dict, name: str, forward: bool) -> sp.Expr:
    outputs = env["__outputs__"]
    if forward:
        returns = [r.name for r in entry.schema.returns]
        k = (
            int(name.removeprefix("result") or 0)
            if name.startswith("result") and name not in returns
            else returns.index(name)
        )
        return _smooth(sum(sp.diff(outputs[k], env[t]) * env[f"{t}_t"] for t in _moving_inputs(entry, env)))
    return _smooth(sum(g * sp.diff(out, env[name]) for g, out in zip(env["grads"], outputs)))


def _sample(symbol: sp.Symbol, definition: Definition, tensors: set[str], rng: random.Random):
    if not symbol.is_real:
        return rng.random() < 0.5
    ranges = {n: (lo, hi) for n, lo, hi in definition.ranges}
    lo, hi = ranges.get(symbol.name) or (definition.domain if symbol.name in tensors else (0.5, 1.5))
    p = mpmath.mpf(rng.uniform(lo, hi))
    return p + mpmath.mpf("0.1") * mpmath.sign(p) if abs(p) < 0.1 and symbol.name not in ranges else p  # away from 0


def _judge(residual, definition: Definition, tensors: set[str], points: int, seed: int) -> tuple[str, str]:
    """(status, detail) of one residual: plainly zero, zero at 50 digits (then simplified), or not."""
    if residual == 0:
        return "symbolic", ""
    free = sorted(residual.free_symbols, key=str)
    try:
        f = sp.lambdify(free, residual, modules="mpmath")
    except (NotImplementedError, SyntaxError) as e:
        # sympy cannot print every function for mpmath (its PrintMethodNotImplementedError),
        # nor every printed text compile
        return "none", f"residual mpmath cannot evaluate: {type(e).__name__}"
    if residual.has(sp.Piecewise):
        points *= 4  # every piece gets points
    rng = random.Random(seed)
    worst = mpmath.mpf(0)
    with mpmath.workdps(50):
        for _ in range(points):
            try:
                value = f(*[_sample(s, definition, tensors, rng) for s in free])
            except (TypeError, ValueError, ZeroDivisionError) as e:
                return "none", f"residual mpmath cannot evaluate: {type(e).__name__}"
            worst = max(worst, abs(value))
    detail = f"max |residual| {mpmath.nstr(worst, 3)} at {points} points, 50 digits"
    # Evaluated first, so simplify (slow when it fails) only runs on residuals that vanish.
    if worst < mpmath.mpf(10) ** -40 and _simplifies_to_zero(residual):
        return "symbolic", ""
    # 1e-12: a formula may spell a constant as a double literal (log10: 2.3025850929940456).
    return ("numerical" if worst < 1e-12 else "disproved"), detail


def _simplifies_to_zero(residual) -> bool:
    """simplify reaches zero; with kinks, on every case of the conditions' truth values."""
    if not residual.has(sp.Piecewise):
        return sp.simplify(residual) == 0
    cases = _cases(residual)
    return cases is not None and all(c == 0 or sp.simplify(c) == 0 for c in cases)


def _cases(residual, most: int = 6):
    """The residual under every truth assignment of its conditions (None past `most` atoms).

    Each comparison a < b, a <= b, a > b, a >= b is the sign of a - b (ties, a kink, left
    out: equality is false), so `x > t` and `x <= t` are one atom. Impossible assignments
    are kept; a non-zero residual there only costs the symbolic verdict, never a false one.
    """
    signs: dict = {}  # difference -> the atom "difference < 0"
    table = {}
    for rel in residual.atoms(sp.core.relational.Relational):
        if isinstance(rel, (sp.Eq, sp.Ne)):
            table[rel] = sp.false if isinstance(rel, sp.Eq) else sp.true
            continue
        d = sp.expand(rel.lhs - rel.rhs)
        below = isinstance(rel, (sp.StrictLessThan, sp.LessThan))
        if d.could_extract_minus_sign():
            d, below = -d, not below
        atom = signs.setdefault(d, sp.Dummy())
        table[rel] = atom if below else sp.Not(atom)
    masks = [s for s in residual.free_symbols if not s.is_real]
    atoms = list(signs.values()) + masks
    if len(atoms) > most:
        return None
    general = residual.xreplace(table)
    out = []
    for bits in range(2 ** len(atoms)):
        values = {a: sp.true if bits >> i & 1 else sp.false for i, a in enumerate(atoms)}
        out.append(sp.piecewise_fold(general.xreplace(values)))
    return out


_CACHE: dict[tuple, Proof] = {}


def prove_formula(entry: Entry, formula: Formula, points: int = 5, seed: int = 0) -> Proof:
    """Prove one formula of an entry whose record has a sympy definition (real inputs, away from kinks)."""
    forward = formula in entry.forward
    key = (entry.name, str(entry.schema), formula.names, formula.text, forward, points, seed)
    if key not in _CACHE:
        _CACHE[key] = _prove(entry, formula, forward, points, seed)
    return _CACHE[key]


def _prove(entry: Entry, formula: Formula, forward: bool, points: int, seed: int) -> Proof:
    op, key = entry.name, formula.key
    definition = record(op).definition
    if definition is None:
        return Proof(op, key, "none", record(op).without_meaning or "no sympy definition in its op record")
    d = derivative(formula)
    tree = d.parsed
    if tree is None:  # the checker reports parse errors; here: no proof
        return Proof(op, key, "none", f"does not parse: {d.error}")
    reads_grad_mode = any(isinstance(n, Name) and n.name == _GRAD_MODE for n in iter_nodes(tree))
    modes = (sp.true, sp.false) if reads_grad_mode else (None,)
    results = []
    for mode in modes:
        try:
            env = _environment(entry, definition)
            env[_GRAD_MODE] = mode
            got = to_sympy(tree, env)
        except Unsupported as e:
            return Proof(op, key, "none", str(e))
        except (TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
            return Proof(op, key, "none", f"no sympy meaning: {type(e).__name__}: {e}")
        parts = got if isinstance(got, tuple) else (got,)
        if len(parts) < len(formula.names) or (isinstance(got, tuple) and len(formula.names) == 1):
            return Proof(op, key, "none", f"{len(parts)} values for {len(formula.names)} keys")
        tensors = set(_moving_inputs(entry, env))
        for name, part in zip(formula.names, parts):
            residual = as_number(part) - _expected(entry, formula, env, name, forward)
            status, detail = _judge(residual, definition, tensors, points, seed)
            where = (f"{name}: " if len(formula.names) > 1 else "") + (f"GradMode {mode}: " if mode is not None else "")
            results.append((status, where + detail if detail else ""))
    status = max((s for s, _ in results), key=_ORDER.index)
    return Proof(op, key, status, "; ".join(d for s, d in results if s == status and d))


def _written(formulas) -> list[Formula]:
    """The formulas that state a derivative as an expression (markers and refusals: nothing to prove)."""
    return [f for f in formulas if derivative(f).kind is Kind.WRITTEN]


def _formulas(entry: Entry) -> list[Formula]:
    return _written(entry.backward + entry.forward)


def prove_entry(entry: Entry) -> list[Proof]:
    """Proofs of every formula of an entry (backward and forward)."""
    return [prove_formula(entry, f) for f in _formulas(entry)]


def mode_proofs(entry: Entry) -> dict[str, str]:
    """Which check modes of an entry rest on proved formulas: mode -> "symbolic" or "numerical".

    vjp: every backward formula proved. jvp: every `result:` formula proved, or, where the
    entry has none (auto_element_wise, or the transposed backward formula), the backward ones.
    """
    if record(entry.name).definition is None:
        return {}

    def verdict(formulas) -> str:
        proofs = [prove_formula(entry, f) for f in formulas]
        if not proofs or any(p.status not in ("symbolic", "numerical") for p in proofs):
            return ""
        return "numerical" if any(p.status == "numerical" for p in proofs) else "symbolic"

    backward = verdict(_written(entry.backward))
    written = [f for f in entry.forward if derivative(f).kind not in (Kind.AUTO_ELEMENT_WISE, Kind.AUTO_LINEAR)]
    out = {"vjp": backward, "jvp": verdict(written) if written else backward}
    return {mode: v for mode, v in out.items() if v}


def _marker(formula: Formula) -> str:
    """What a formula that states no derivative says: `auto_linear`, `not_implemented_list`."""
    d = derivative(formula)
    if d.kind is Kind.NOT_IMPLEMENTED:
        assert isinstance(d.parsed, Call) and isinstance(d.parsed.func, Name)  # what normalize resolves the kind from
        return d.parsed.func.name
    return d.kind.value


def elementwise_entries(spec) -> list[Entry]:
    """The spec's elementwise entries: those with a definition or a reason for none, and every
    entry whose forward implementation is in an elementwise family."""
    from ..forward import implementation  # JAX: only for this listing

    def family(name):
        fn = implementation(name)
        return fn.__module__.rsplit(".", 1)[-1] if fn is not None else ""

    def known(name):
        r = record(name)
        return r.definition is not None or r.without_meaning

    return [e for e in spec if known(e.name) or traits(family(e.name)).elementwise]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m jaxderiv.check.proofs", description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", help="a derivatives.yaml (default: the shipped spec)")
    spec = load_spec(parser.parse_args(argv or []).file)
    entries = elementwise_entries(spec)
    proofs = []
    unproved = []  # elementwise entries without any formula to prove
    for e in entries:
        found = prove_entry(e)
        if not found:
            why = record(e.name).without_meaning or (
                "no formula: " + (", ".join(_marker(f) for f in e.backward + e.forward) or "not differentiable")
            )
            unproved.append((e.name, why))
        proofs += found
    for p in proofs:
        print(f"{p.status:10} {p.op} [{p.key}] {p.detail}")
    for name, why in unproved:
        print(f"{'none':10} {name} [-] {why}")
    counts = {s: sum(p.status == s for p in proofs) for s in ("symbolic", "numerical", "none", "disproved")}
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    by_entry: dict[str, str] = {}
    for p in proofs:
        by_entry[p.op] = max(by_entry.get(p.op, "symbolic"), p.status, key=_ORDER.index)
    entry_counts = {s: sum(v == s for v in by_entry.values()) for s in _ORDER}
    entry_counts["none"] += len(unproved)
    print(f"elementwise entries {len(entries)}: " + ", ".join(f"{k} {v}" for k, v in entry_counts.items()))
    return 1 if counts["disproved"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

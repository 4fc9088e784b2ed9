"""Symbolic proofs that elementwise formulas are the derivatives of their ops, over the reals.

An entry's formula is translated into sympy by a small translator of its own (the names
elementwise formulas use; any other name means no proof), and compared with the derivative
of the op's definition in DEFINITIONS: `grad * d op / d input` for a backward formula,
`sum_i d op / d input_i * input_i_t` for a `result:` formula. When `simplify` does not reach
zero, the difference is evaluated with mpmath at 50 digits at random points of the op's
domain: "numerical" rather than "symbolic". `python -m jaxderiv.proofs` prints a table.
"""

from __future__ import annotations

import dataclasses
import random
import sys
from typing import Callable

import mpmath
import sympy as sp

from .expr import Attr, Binary, Call, Name, Node, Num, Unary
from .grammar import parse_formula
from .spec import Entry, Formula, load_spec

__all__ = ["DEFINITIONS", "Proof", "mode_proofs", "prove_formula", "prove_entry", "to_sympy", "Unsupported"]

S = sp.Symbol
_x = S("self", real=True)


def _def(fn: Callable, *args: str, lo: float = -2.0, hi: float = 2.0):
    return fn, args, (lo, hi)


# op -> (definition as a function of its arguments' symbols, argument names, domain of the inputs)
DEFINITIONS: dict[str, tuple[Callable, tuple[str, ...], tuple[float, float]]] = {
    "abs": _def(sp.Abs, "self"),
    "acos": _def(sp.acos, "self", lo=-0.9, hi=0.9),
    "asin": _def(sp.asin, "self", lo=-0.9, hi=0.9),
    "atan": _def(sp.atan, "self"),
    "acosh": _def(sp.acosh, "self", lo=1.1, hi=3.0),
    "asinh": _def(sp.asinh, "self"),
    "atanh": _def(sp.atanh, "self", lo=-0.9, hi=0.9),
    "cos": _def(sp.cos, "self"),
    "sin": _def(sp.sin, "self"),
    "tan": _def(sp.tan, "self", lo=-1.2, hi=1.2),
    "cosh": _def(sp.cosh, "self"),
    "sinh": _def(sp.sinh, "self"),
    "tanh": _def(sp.tanh, "self"),
    "exp": _def(sp.exp, "self"),
    "exp2": _def(lambda x: 2**x, "self"),
    "expm1": _def(lambda x: sp.exp(x) - 1, "self"),
    "log": _def(sp.log, "self", lo=0.1, hi=3.0),
    "log2": _def(lambda x: sp.log(x, 2), "self", lo=0.1, hi=3.0),
    "log10": _def(lambda x: sp.log(x, 10), "self", lo=0.1, hi=3.0),
    "log1p": _def(lambda x: sp.log(1 + x), "self", lo=-0.9, hi=3.0),
    "sqrt": _def(sp.sqrt, "self", lo=0.1, hi=3.0),
    "rsqrt": _def(lambda x: 1 / sp.sqrt(x), "self", lo=0.1, hi=3.0),
    "reciprocal": _def(lambda x: 1 / x, "self"),
    "neg": _def(lambda x: -x, "self"),
    "sigmoid": _def(lambda x: 1 / (1 + sp.exp(-x)), "self"),
    "erf": _def(sp.erf, "self"),
    "erfc": _def(sp.erfc, "self"),
    "erfinv": _def(sp.erfinv, "self", lo=-0.9, hi=0.9),
    "lgamma": _def(sp.loggamma, "self", lo=0.1, hi=3.0),
    "digamma": _def(sp.digamma, "self", lo=0.1, hi=3.0),
    "deg2rad": _def(lambda x: x * sp.pi / 180, "self"),
    "rad2deg": _def(lambda x: x * 180 / sp.pi, "self"),
    "sinc": _def(lambda x: sp.sin(sp.pi * x) / (sp.pi * x), "self"),
    "add.Tensor": _def(lambda x, y, a: x + a * y, "self", "other", "alpha"),
    "sub.Tensor": _def(lambda x, y, a: x - a * y, "self", "other", "alpha"),
    "rsub.Tensor": _def(lambda x, y, a: y - a * x, "self", "other", "alpha"),
    "mul.Tensor": _def(lambda x, y: x * y, "self", "other"),
    "div.Tensor": _def(lambda x, y: x / y, "self", "other"),
    "atan2": _def(sp.atan2, "self", "other"),
    "hypot": _def(lambda x, y: sp.sqrt(x**2 + y**2), "self", "other"),
    "pow.Tensor_Tensor": _def(lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0),
    "xlogy.Tensor": _def(lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0),
    "logaddexp": _def(lambda x, y: sp.log(sp.exp(x) + sp.exp(y)), "self", "other"),
    "logaddexp2": _def(lambda x, y: sp.log(2**x + 2**y, 2), "self", "other"),
    "lerp.Tensor": _def(lambda x, e, w: x + w * (e - x), "self", "end", "weight"),
    "addcmul": _def(lambda x, a, b, v: x + v * a * b, "self", "tensor1", "tensor2", "value"),
    "addcdiv": _def(lambda x, a, b, v: x + v * a / b, "self", "tensor1", "tensor2", "value", lo=0.5, hi=2.0),
}


class Unsupported(Exception):
    """The formula uses something this translator does not model: no proof is attempted."""


# Methods and functions of elementwise formulas, as sympy (arguments already translated).
_UNARY = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
    "rsqrt": lambda x: 1 / sp.sqrt(x), "reciprocal": lambda x: 1 / x, "neg": lambda x: -x,
    "sgn": sp.sign, "sign": sp.sign, "abs": sp.Abs, "erf": sp.erf, "erfinv": sp.erfinv, "exp2": lambda x: 2**x,
    "digamma": sp.digamma, "lgamma": sp.loggamma, "sigmoid": lambda x: 1 / (1 + sp.exp(-x)),
    "square": lambda x: x**2, "conj": lambda x: x, "zeros_like": lambda x: sp.Integer(0), "log1p": lambda x: sp.log(1 + x),
}  # fmt: skip
_FUNCTIONS = {
    **_UNARY,
    "pow": lambda x, e: x**e,
    "div": lambda x, y: x / y,
    "mul": lambda x, y: x * y,
    "sub": lambda x, y: x - y,
    "add": lambda x, y: x + y,
    "polygamma": lambda n, x: sp.polygamma(n, x),
    "handle_r_to_c": lambda _type, x: x,
    "maybe_multiply": lambda x, s: x * s,
    "mul_tensor_backward": lambda g, other, _type: g * other,
    "div_tensor_self_backward": lambda g, other, _type: g / other,
    "div_tensor_other_backward": lambda g, self, other: -g * self / other**2,
    "pow_backward_self": lambda g, self, e: g * e * self ** (e - 1),
    "pow_backward_exponent": lambda g, self, e, result: g * result * sp.log(self),
    # FunctionsManual helpers of single-input ops, as the math they stand for (real inputs)
    "deg2rad_backward": lambda g: g * sp.pi / 180,
    "rad2deg_backward": lambda g: g * 180 / sp.pi,
    "log1p_backward": lambda g, self: g / (1 + self),
    "sigmoid_backward": lambda g, y: g * (1 - y) * y,
    "tanh_backward": lambda g, y: g * (1 - y**2),
    "lerp": lambda x, e, w: x + w * (e - x),
}
_CONSTANTS = {"M_PI": sp.pi, "M_LN2": sp.log(2), "M_LN10": sp.log(10), "M_SQRT2": sp.sqrt(2), "M_2_SQRTPI": 2 / sp.sqrt(sp.pi)}
_DTYPE = object()  # what `x.scalar_type()` stands for: only ever passed to a helper that ignores it
_BINARY = {"+": sp.Add, "-": lambda a, b: a - b, "*": sp.Mul, "/": lambda a, b: a / b}


def to_sympy(node: Node, env: dict[str, sp.Expr]) -> sp.Expr:
    """The sympy expression of an elementwise formula tree; Unsupported for anything else."""
    match node:
        case Num():
            return sp.Rational(node.text.rstrip("fF")) if isinstance(node.value, float) else sp.Integer(node.value)
        case Name(name=n) if n in env:
            return env[n]
        case Name(name=n) if n.removeprefix("at::") in _CONSTANTS:
            return _CONSTANTS[n.removeprefix("at::")]
        case Unary(op="-"):
            return -to_sympy(node.operand, env)
        case Binary(op=op) if op in _BINARY:
            return _BINARY[op](to_sympy(node.left, env), to_sympy(node.right, env))
        case Call(func=Attr(name="scalar_type"), args=()):
            return _DTYPE
        case Call(func=Attr(obj=obj, name=name)) if name in _FUNCTIONS:
            return _FUNCTIONS[name](to_sympy(obj, env), *[to_sympy(a, env) for a in node.args])
        case Call(func=Name(name=name)) if name.removeprefix("at::") in _FUNCTIONS:
            return _FUNCTIONS[name.removeprefix("at::")](*[to_sympy(a, env) for a in node.args])
    raise Unsupported(f"no sympy meaning for {type(node).__name__} at column {node.col}")


@dataclasses.dataclass(frozen=True)
class Proof:
    op: str
    key: str  # the formula's key
    status: str  # "symbolic", "numerical", "disproved" or "none"
    detail: str = ""  # why none, or the residual's size


def _symbols(names) -> dict[str, sp.Symbol]:
    return {n: S(n, real=True) for n in names}


def _expected(op: str, formula: Formula, entry: Entry, env: dict) -> sp.Expr:
    fn, args, _ = DEFINITIONS[op]
    value = fn(*[env[a] for a in args])
    tensors = [a.name for a in entry.schema.arguments if a.is_tensor and a.name in args]
    if formula in entry.forward:
        return sum(sp.diff(value, env[t]) * env[f"{t}_t"] for t in tensors)
    (name,) = formula.names
    return env["grad"] * sp.diff(value, env[name])


def prove_formula(entry: Entry, formula: Formula, points: int = 5, seed: int = 0) -> Proof:
    """Prove one formula of an entry in DEFINITIONS (real inputs, away from kinks)."""
    op, key = entry.name, formula.key
    if op not in DEFINITIONS:
        return Proof(op, key, "none", "no definition in DEFINITIONS")
    if len(formula.names) != 1 and formula in entry.backward:
        return Proof(op, key, "none", "one formula for several inputs returns a tuple")
    fn, args, (lo, hi) = DEFINITIONS[op]
    names = [a.name for a in entry.schema.arguments]
    env = _symbols(names + ["grad"] + [f"{n}_t" for n in names])
    env |= {f"{n}_p": env[n] for n in names}
    env["result"] = fn(*[env[a] for a in args])
    try:
        got = to_sympy(parse_formula(formula.text), env)
    except Unsupported as e:
        return Proof(op, key, "none", str(e))
    residual = got - _expected(op, formula, entry, env)
    if residual == 0:
        return Proof(op, key, "symbolic")
    free = sorted(residual.free_symbols, key=str)
    try:
        f = sp.lambdify(free, residual, modules="mpmath")
    except Exception as e:  # noqa: BLE001 - sympy cannot print every function for mpmath
        return Proof(op, key, "none", f"residual mpmath cannot evaluate: {type(e).__name__}")
    rng = random.Random(seed)
    worst = mpmath.mpf(0)
    with mpmath.workdps(50):
        for _ in range(points):
            point = [mpmath.mpf(rng.uniform(lo, hi)) if s.name in args else mpmath.mpf(rng.uniform(0.5, 1.5)) for s in free]
            point = [p + mpmath.mpf("0.1") * mpmath.sign(p) if abs(p) < 0.1 else p for p in point]  # away from 0
            worst = max(worst, abs(f(*point)))
    # Evaluated first, so simplify (slow when it fails) only runs on residuals that vanish.
    if worst < mpmath.mpf(10) ** -40 and sp.simplify(residual) == 0:
        return Proof(op, key, "symbolic")
    detail = f"max |residual| {mpmath.nstr(worst, 3)} at {points} points, 50 digits"
    # 1e-12: a formula may spell a constant as a double literal (log10: 2.3025850929940456).
    return Proof(op, key, "numerical" if worst < 1e-12 else "disproved", detail)


def prove_entry(entry: Entry) -> list[Proof]:
    """Proofs of every formula of an entry (backward and forward)."""
    return [prove_formula(entry, f) for f in entry.backward + entry.forward if not f.text.startswith(("auto_", "not_implemented"))]


def mode_proofs(entry: Entry) -> dict[str, str]:
    """Which check modes of an entry rest on proved formulas: mode -> "symbolic" or "numerical".

    vjp: every backward formula proved. jvp: every `result:` formula proved, or, where the
    entry has none (auto_element_wise, or the transposed backward formula), the backward ones.
    """
    if entry.name not in DEFINITIONS:
        return {}

    def verdict(formulas) -> str:
        proofs = [prove_formula(entry, f) for f in formulas]
        if not proofs or any(p.status not in ("symbolic", "numerical") for p in proofs):
            return ""
        return "numerical" if any(p.status == "numerical" for p in proofs) else "symbolic"

    backward = verdict([f for f in entry.backward if not f.text.startswith("not_implemented")])
    written = [f for f in entry.forward if not f.text.startswith("auto_")]
    out = {"vjp": backward, "jvp": verdict(written) if written else backward}
    return {mode: v for mode, v in out.items() if v}


def main(argv: list[str] | None = None) -> int:
    spec = load_spec(argv[0] if argv else None)
    proofs = [p for e in spec if e.name in DEFINITIONS for p in prove_entry(e)]
    for p in proofs:
        print(f"{p.status:10} {p.op} [{p.key}] {p.detail}")
    counts = {s: sum(p.status == s for p in proofs) for s in ("symbolic", "numerical", "none", "disproved")}
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    return 1 if counts["disproved"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

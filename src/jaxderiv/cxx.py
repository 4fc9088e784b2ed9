"""C++ operator semantics over the values formulas compute with.

Values are JAX arrays (Tensors; None is an undefined Tensor), Python numbers (Scalars,
int64_t, double), bools, tuples (IntArrayRef, std::vector, std::tuple), strings, dtypes.
C++ rules differ from Python's where it matters: `/` and `%` on two integers truncate.
"""

from __future__ import annotations

import numbers
import operator

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["BINARY", "UNARY", "is_tensor", "is_number", "truth"]


def is_tensor(v) -> bool:
    return isinstance(v, (jax.Array, np.ndarray)) or isinstance(v, jax.core.Tracer)


def is_number(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool) or isinstance(v, np.generic)


def _check_defined(op: str, *values):
    for v in values:
        if v is None:
            raise ValueError(f"operator {op!r} applied to an undefined Tensor")


def _check_operands(op: str, *values):
    """C++ arithmetic takes numbers and tensors; Python's would repeat or join a tensor list."""
    for v in values:
        if isinstance(v, (list, tuple)):
            raise TypeError(
                f"operator {op!r} applied to a list of {len(v)} values (a TensorList or tuple), not a number or a Tensor"
            )


def _arith(py_op, jnp_op, symbol):
    def fn(a, b):
        _check_defined(symbol, a, b)
        _check_operands(symbol, a, b)
        if is_tensor(a) or is_tensor(b):
            return jnp_op(a, b)
        return py_op(a, b)

    return fn


def _tensor_mul(a, b):
    """ATen's mul: a bool tensor times a number tensor is promoted first (inf * False is nan, as
    in ATen); jnp.multiply selects instead (inf * False is 0)."""
    kinds = [jnp.result_type(x) == jnp.bool_ for x in (a, b)]
    if kinds[0] != kinds[1]:
        dtype = jnp.result_type(a, b)
        a, b = jnp.asarray(a).astype(dtype) if kinds[0] else a, jnp.asarray(b).astype(dtype) if kinds[1] else b
    return jnp.multiply(a, b)


def _c_div(a, b):
    # C++: integer / integer truncates toward zero; anything else is true division.
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and not isinstance(a, bool):
        q = abs(int(a)) // abs(int(b))
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _c_mod(a, b):
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        r = abs(int(a)) % abs(int(b))
        return r if a >= 0 else -r
    return float(np.fmod(a, b))


def _tensor_truediv(a, b):
    return jnp.true_divide(a, b)


def _logical(py_op, jnp_op):
    def fn(a, b):
        if is_tensor(a) or is_tensor(b):
            return jnp_op(a, b)
        return py_op(truth(a), truth(b))

    return fn


def truth(v) -> bool:
    """C++ contextual conversion to bool; tensors must be concrete."""
    if v is None:
        return False
    if is_tensor(v):
        try:
            return bool(v)
        except jax.errors.ConcretizationTypeError:
            raise ValueError(
                "a traced Tensor was used as a C++ condition; the formula needs a concrete value there"
            ) from None
    return bool(v)


BINARY = {
    "+": _arith(operator.add, jnp.add, "+"),
    "-": _arith(operator.sub, jnp.subtract, "-"),
    "*": _arith(operator.mul, _tensor_mul, "*"),
    "/": _arith(_c_div, _tensor_truediv, "/"),
    "%": _arith(_c_mod, jnp.remainder, "%"),
    "<": _arith(operator.lt, jnp.less, "<"),
    "<=": _arith(operator.le, jnp.less_equal, "<="),
    ">": _arith(operator.gt, jnp.greater, ">"),
    ">=": _arith(operator.ge, jnp.greater_equal, ">="),
    "==": lambda a, b: jnp.equal(a, b) if is_tensor(a) or is_tensor(b) else a == b,
    "!=": lambda a, b: jnp.not_equal(a, b) if is_tensor(a) or is_tensor(b) else a != b,
    "&": _logical(operator.and_, jnp.bitwise_and),
    "|": _logical(operator.or_, jnp.bitwise_or),
    "^": _logical(operator.xor, jnp.bitwise_xor),
    "<<": _arith(operator.lshift, jnp.left_shift, "<<"),
    ">>": _arith(operator.rshift, jnp.right_shift, ">>"),
}
# `&&` and `||` short-circuit, so the translator handles them itself.
SHORT_CIRCUIT = ("&&", "||")


def _neg(a):
    _check_defined("-", a)
    return jnp.negative(a) if is_tensor(a) else -a


def _not(a):
    return jnp.logical_not(a) if is_tensor(a) else not truth(a)


def _bitnot(a):
    return jnp.invert(a) if is_tensor(a) else ~a


UNARY = {
    "-": _neg,
    "+": lambda a: a,
    "!": _not,
    "~": _bitnot,
    # Dereferencing an optional and taking an address do not change a value here.
    "*": lambda a: a,
    "&": lambda a: a,
}

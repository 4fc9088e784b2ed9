"""LAPACK's Bunch-Kaufman LDLᵀ (`linalg_ldl_factor_ex`, `linalg_ldl_solve`) against torch 2.13:
the same pivots (1x1 and 2x2 blocks, interchanges), the same LD to rounding, the same solutions,
for real symmetric, complex symmetric and complex Hermitian matrices, batches and 0-size inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv.forward import implementation
from jaxderiv.forward import OpKind, kind_of

torch = pytest.importorskip("torch")
aten = torch.ops.aten
jax.config.update("jax_enable_x64", True)

factor, solve = implementation("linalg_ldl_factor_ex"), implementation("linalg_ldl_solve")
KINDS = [(np.float64, False), (np.complex128, False), (np.complex128, True)]


def _matrix(rng, n, dtype, hermitian, zero_diagonal):
    a = rng.normal(size=(n, n)) + (1j * rng.normal(size=(n, n)) if dtype == np.complex128 else 0)
    a = a + (a.conj().T if hermitian else a.T)
    if zero_diagonal:  # no 1x1 pivot at the start: 2x2 blocks and interchanges
        np.fill_diagonal(a, 0)
    return a


@pytest.mark.parametrize("dtype,hermitian", KINDS)
@pytest.mark.parametrize("zero_diagonal", [False, True])
def test_pivots_ld_and_solutions_are_lapacks(dtype, hermitian, zero_diagonal):
    rng = np.random.default_rng(int(zero_diagonal) + 3 * hermitian + 7 * (dtype == np.complex128))
    blocks = 0
    for n in (5,) if zero_diagonal else (1, 5):
        a = _matrix(rng, n, dtype, hermitian, zero_diagonal)
        ld, piv, info = factor(jnp.asarray(a), hermitian=hermitian)
        t_ld, t_piv, t_info = aten.linalg_ldl_factor_ex(torch.from_numpy(a), hermitian=hermitian)
        np.testing.assert_array_equal(np.asarray(piv), t_piv.numpy())
        assert piv.dtype == np.int32 and int(info) == int(t_info) == 0
        np.testing.assert_allclose(np.asarray(ld), t_ld.numpy(), rtol=1e-10, atol=1e-12)
        blocks += int((np.asarray(piv) < 0).sum())
        b = rng.normal(size=(n, 3)).astype(dtype)
        x = solve(ld, piv, jnp.asarray(b), hermitian=hermitian)
        t_x = aten.linalg_ldl_solve(t_ld, t_piv, torch.from_numpy(b), hermitian=hermitian)
        np.testing.assert_allclose(np.asarray(x), t_x.numpy(), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(a @ np.asarray(x), b, atol=1e-9)
    assert blocks > 0 or not zero_diagonal  # 2x2 pivots were exercised where the diagonal is zero


def test_batches_broadcast_and_empty_inputs():
    rng = np.random.default_rng(5)
    a = np.stack([_matrix(rng, 5, np.float64, False, i == 1) for i in range(3)])
    ld, piv, info = factor(jnp.asarray(a))
    t_ld, t_piv, t_info = aten.linalg_ldl_factor_ex(torch.from_numpy(a))
    np.testing.assert_array_equal(np.asarray(piv), t_piv.numpy())
    np.testing.assert_array_equal(np.asarray(info), t_info.numpy())
    b = rng.normal(size=(5, 2))  # one right-hand side for the whole batch
    np.testing.assert_allclose(
        np.asarray(solve(ld, piv, jnp.asarray(b))), aten.linalg_ldl_solve(t_ld, t_piv, torch.from_numpy(b)).numpy()
    )
    for shape in ((0, 0), (0, 2, 2)):
        ld, piv, info = factor(jnp.zeros(shape))
        t = aten.linalg_ldl_factor_ex(torch.zeros(shape, dtype=torch.float64))
        assert ld.shape == t[0].shape and piv.shape == t[1].shape and info.shape == t[2].shape
    assert solve(jnp.zeros((0, 0)), jnp.zeros((0,), jnp.int32), jnp.zeros((0, 5))).shape == (0, 5)


def test_a_zero_pivot_is_reported_in_info_and_refusals():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])  # singular: the second pivot is exactly 0
    _, _, info = factor(jnp.asarray(a))
    assert int(info) == int(aten.linalg_ldl_factor_ex(torch.from_numpy(a))[2]) == 2
    with pytest.raises(ValueError, match="could not be completed"):
        factor(jnp.asarray(a), check_errors=True)
    with pytest.raises(ValueError, match="square matrices"):
        factor(jnp.zeros((2, 3)))
    with pytest.raises(TypeError, match="floating point or complex"):
        factor(jnp.zeros((2, 2), jnp.int32))


def test_no_derivative_as_in_aten():
    assert kind_of("linalg_ldl_factor_ex") is kind_of("linalg_ldl_solve") is OpKind.NO_DERIVATIVE
    x = torch.eye(3, dtype=torch.float64).requires_grad_()
    with pytest.raises(RuntimeError, match="not implemented"):
        aten.linalg_ldl_factor_ex(x)[0].sum().backward()

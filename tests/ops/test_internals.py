"""ATen's internal ops listed in derivatives.yaml against torch 2.13: autograd's own constructors
and the `_test_*` entries torch checks its autograd codegen with, whose formulas are the ones a
dense tensor runs (a `Default:` block; none where the file gives nested tensors' only)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
aten = torch.ops.aten


@pytest.mark.parametrize(
    "self_shape, other_shape, other_dtype, batch",
    [((4, 5), (7, 2, 3), torch.float32, 1), ((4, 5), (7, 2, 3), torch.int32, 2), ((4,), (), torch.float64, 0)],
)
def test_new_zeros_with_same_feature_meta_as_torch(self_shape, other_shape, other_dtype, batch):
    self_, other = torch.ones(self_shape, dtype=torch.float64), torch.ones(other_shape, dtype=other_dtype)
    expected = aten._new_zeros_with_same_feature_meta(self_, other, self_num_batch_dims=batch)
    got = jaxderiv.op("_new_zeros_with_same_feature_meta")(
        jnp.asarray(self_.numpy()), jnp.asarray(other.numpy()), self_num_batch_dims=batch
    )
    assert got.shape == tuple(expected.shape) and str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    assert not np.any(np.asarray(got))


def test_efficientzerotensor_is_zeros():
    z = jaxderiv.op("_efficientzerotensor")([2, 3])
    assert z.shape == (2, 3) and z.dtype == jnp.float32 and not np.any(np.asarray(z))
    assert aten._efficientzerotensor([2, 3]).dtype == torch.float32


def _torch_grad(op, x, ct):
    tx = torch.from_numpy(x).requires_grad_()
    (g,) = torch.autograd.grad(op(tx), tx, torch.from_numpy(ct))
    return g.numpy()


def test_the_default_dispatch_formula_is_torchs_dense_gradient():
    """`grad.expand(self.sizes()) + 1` (the AutogradCUDA and nested formulas differ): both give
    the cotangent plus one, the +1 the test op adds on purpose."""
    x, ct = np.random.default_rng(0).normal(size=(2, 3)), np.random.default_rng(1).normal(size=(2, 3))
    _, vjp = jax.vjp(jaxderiv.op("_test_autograd_multiple_dispatch.fullcoverage"), jnp.asarray(x))
    expected = _torch_grad(aten._test_autograd_multiple_dispatch.fullcoverage, x, ct)
    np.testing.assert_allclose(expected, ct + 1)
    np.testing.assert_allclose(np.asarray(vjp(jnp.asarray(ct))[0]), expected)


def test_the_test_view_and_its_gradient_as_torch():
    x, ct = np.random.default_rng(2).normal(size=(2, 3)), np.random.default_rng(3).normal(size=(6,))
    out, vjp = jax.vjp(jaxderiv.op("_test_autograd_multiple_dispatch_view"), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(out), aten._test_autograd_multiple_dispatch_view(torch.from_numpy(x)))
    np.testing.assert_array_equal(
        np.asarray(vjp(jnp.asarray(ct))[0]), _torch_grad(aten._test_autograd_multiple_dispatch_view, x, ct)
    )


def test_warn_backwards_warns_and_passes_the_gradient():
    x, ct = jnp.asarray([1.0, -2.0]), jnp.asarray([0.5, 3.0])
    _, vjp = jax.vjp(jaxderiv.op("_test_warn_in_autograd"), x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (g,) = vjp(ct)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(ct))
    assert any("Warn from backward" in str(w.message) for w in caught)


def test_the_checker_records_the_warning_on_the_rows_instead_of_printing_it():
    from jaxderiv.check import check_all
    from jaxderiv.registry import default_registry

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = check_all(ops=["_test_warn_in_autograd", "abs"], modes=("vjp", "jvp"), registry=default_registry())
    assert not any("Warn from backward" in str(w.message) for w in caught)
    warned = {r.op: r.warned for r in report}
    assert warned == {"_test_warn_in_autograd": "UserWarning: Warn from backward", "abs": ""}
    assert all(r.status == "passed" for r in report)


def test_formulas_for_nested_tensors_only_are_refused_for_dense_arrays():
    """`_test_autograd_multiple_dispatch.ntonly` has an AutogradNestedTensor block and no
    Default: its formula must not be taken for a dense array's derivative."""
    with pytest.raises(jaxderiv.TranslationError, match="dispatch key AutogradNestedTensor only"):
        jaxderiv.op("_test_autograd_multiple_dispatch.ntonly")

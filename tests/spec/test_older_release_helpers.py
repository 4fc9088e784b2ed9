"""The helper variants of helpers/older_releases.py, each on an entry written as its release
wrote it, loaded as that release (`load_spec(path, torch_version=...)`): the rules pass the
checker's vjp and jvp, and a copy with a factor 2 in the formula fails. Where the checker's
samples or the forward follow a later schema, the entry takes the later schema and the formula
the old call, or the samples are narrowed to the old meaning (`opdb.replaced`); each test says
which. docs/releases.md has the measurements on the releases' own files."""

from __future__ import annotations

import textwrap

import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.check import opdb
from jaxderiv.records import Sample
from jaxderiv.helpers import load as load_helpers
from jaxderiv.namespace import resolve
from jaxderiv.spec import load_spec

MODES = ["vjp", "jvp"]


def _spec(tmp_path, text: str, version: str, name: str = "derivatives.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return load_spec(path, torch_version=version)


def _statuses(spec, ops):
    return {(r.op, r.mode): r.status for r in jaxderiv.check_all(spec, ops=ops, modes=MODES).rows}


def _passes_and_sabotage_fails(tmp_path, text, version, ops, formula, sabotaged):
    """The entry passes every mode; with `formula` replaced by `sabotaged` (a factor 2) one fails."""
    good = _statuses(_spec(tmp_path, text, version), ops)
    assert good and set(good.values()) == {"passed"}, good
    assert formula in text
    bad = _statuses(_spec(tmp_path, text.replace(formula, sabotaged), version, "sabotaged.yaml"), ops)
    assert "failed" in bad.values(), bad


def test_newest_files_resolve_as_before():
    """The later signatures still go to the op or forward of that name: no helper variant takes
    them, so the translator falls back as before the old ones were registered."""
    load_helpers()
    for name, n in [
        ("leaky_relu_backward", 4),
        ("threshold_backward", 3),
        ("rrelu_with_noise_backward", 7),
        ("smooth_l1_loss_backward", 5),
        ("affine_grid_generator_backward", 3),
        ("cudnn_convolution_backward", 11),
        ("cudnn_convolution_transpose_backward", 12),
    ]:
        with pytest.raises(TypeError):
            resolve(name, n)
    assert resolve("infinitely_differentiable_native_layer_norm_backward", 11).__module__.endswith("normalization")


# -- THNN's activation backwards ------------------------------------------------------------------


def test_leaky_relu_backward_three_arguments(tmp_path):
    """0.4.0 to 1.4.0: leaky_relu_backward(grad, self, negative_slope) (1.1's entry)."""
    text = """
        - name: leaky_relu(Tensor self, Scalar negative_slope)
          self: leaky_relu_backward(grad, self, negative_slope)
    """
    f = "leaky_relu_backward(grad, self, negative_slope)"
    _passes_and_sabotage_fails(tmp_path, text, "1.1", ["leaky_relu"], f, f"2 * {f}")


def test_threshold_backward_four_arguments(tmp_path):
    """0.4.0 and 0.4.1: threshold_backward(grad, self, threshold, value), relu through it (0.4.0's
    entries)."""
    text = """
        - name: threshold(Tensor self, Scalar threshold, Scalar value)
          self: threshold_backward(grad, self, threshold, value)

        - name: relu(Tensor self)
          self: threshold_backward(grad, self, 0, 0)
    """
    f = "threshold_backward(grad, self, threshold, value)"
    _passes_and_sabotage_fails(tmp_path, text, "0.4.0", ["threshold", "relu"], f, f"2 * {f}")
    f = "threshold_backward(grad, self, 0, 0)"
    _passes_and_sabotage_fails(tmp_path, text, "0.4.0", ["relu"], f, f"{f} * 2")


def test_threshold_backward_four_arguments_is_zero_at_nan():
    """THNN kept gradOutput only where input > threshold: 0 at a NaN input, which the later
    `self <= threshold ? 0 : grad` keeps."""
    load_helpers()
    fn = resolve("threshold_backward", 4)
    out = np.asarray(fn(np.ones(3), np.array([np.nan, 0.5, -1.0]), 0.0, 0.0))
    assert out.tolist() == [0.0, 1.0, 0.0]


def test_rrelu_with_noise_backward_six_arguments(tmp_path):
    """0.4.0 to 1.4.0: rrelu_with_noise_backward(grad, self, noise, lower, upper, training) (1.4's
    entry), in training (the noise) and not (the mean slope)."""
    text = """
        - name: rrelu_with_noise(Tensor self, Tensor noise, Scalar lower=0.125, Scalar upper=0.3333333333333333, bool training=False, Generator? generator=None) -> Tensor
          self: rrelu_with_noise_backward(grad, self, noise, lower, upper, training)
    """
    f = "rrelu_with_noise_backward(grad, self, noise, lower, upper, training)"
    _passes_and_sabotage_fails(tmp_path, text, "1.4", ["rrelu_with_noise"], f, f"2 * {f}")
    fn = resolve("rrelu_with_noise_backward", 6)
    x, g, noise = np.array([-1.0, 2.0]), np.array([3.0, 5.0]), np.array([0.2, 1.0])
    assert np.allclose(fn(g, x, noise, 0.1, 0.3, True), g * noise)
    assert np.allclose(fn(g, x, noise, 0.1, 0.3, False), [3.0 * 0.2, 5.0])
    assert np.allclose(fn(g, x, noise, 0.2, 0.2, True), [3.0 * 0.2, 5.0])  # an empty range: leaky


# -- losses and grids -------------------------------------------------------------------------------


def _without_beta(later):
    """The smooth_l1_loss samples of `later` with 1.7's `beta` dropped: the forward's default beta
    is 1, the only smooth L1 loss before 1.7."""

    def made(op, rng, dtype=np.float64):
        return [Sample(s.args[:3], s.kwargs, s.label) for s in later(op, rng, dtype=dtype)]

    return made


def test_smooth_l1_loss_backward_four_arguments(tmp_path):
    """0.4.1 to 1.6.0: smooth_l1_loss_backward(grad, self, target, reduction), beta 1 (1.1's entry;
    the checker's samples carry 1.7's beta, dropped here)."""
    text = """
        - name: smooth_l1_loss(Tensor self, Tensor target, int64_t reduction)
          self: smooth_l1_loss_backward(grad, self, target, reduction)
    """
    f = "smooth_l1_loss_backward(grad, self, target, reduction)"
    with opdb.replaced("smooth_l1_loss", samples=_without_beta(opdb.record("smooth_l1_loss").samples)):
        _passes_and_sabotage_fails(tmp_path, text, "1.1", ["smooth_l1_loss"], f, f"2 * {f}")


def _corners_aligned(op, rng, dtype=np.float64):
    """affine_grid_generator samples of more than one pixel a side, corners aligned: 1.0 to 1.2's
    grid, which the later forward computes with align_corners (a single pixel is at -1 then, 0
    later)."""
    return [
        Sample((rng.normal(size=(2, 2, 3)), (2, 3, 4, 5), True), label="2d"),
        Sample((rng.normal(size=(2, 3, 4)), (2, 1, 2, 3, 4), True), label="3d"),
    ]


def test_affine_grid_generator_backward_two_arguments(tmp_path):
    """1.0.0 to 1.2.0: affine_grid_generator_backward(grad, size), corners aligned (1.1's formula;
    the entry takes 1.3's schema, whose forward exists, with align_corners true)."""
    text = """
        - name: affine_grid_generator(Tensor theta, int[] size, bool align_corners) -> Tensor
          theta: affine_grid_generator_backward(grad, size)
    """
    f = "affine_grid_generator_backward(grad, size)"
    with opdb.replaced("affine_grid_generator", samples=_corners_aligned):
        _passes_and_sabotage_fails(tmp_path, text, "1.1", ["affine_grid_generator"], f, f"2 * {f}")


def test_affine_grid_generator_backward_two_arguments_single_pixel():
    """One pixel a side: the base grid's coordinate is -1 in 1.0 to 1.2 (linspace_from_neg_one)."""
    load_helpers()
    fn = resolve("affine_grid_generator_backward", 2)
    grad = np.ones((1, 1, 1, 2))
    assert np.allclose(fn(grad, (1, 1, 1, 1)), [[[-1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]]])


# -- cuDNN convolutions before allow_tf32 -------------------------------------------------------------


def test_cudnn_convolution_backward_two_outputs(tmp_path):
    """1.5.0 and 1.6.0: cudnn_convolution_backward without allow_tf32, a 2-element mask (1.5's
    formula; the entry takes 1.7's schema, whose forward exists: allow_tf32 changes no value)."""
    text = """
        - name: cudnn_convolution(Tensor self, Tensor weight, int[] padding, int[] stride, int[] dilation, int groups, bool benchmark, bool deterministic, bool allow_tf32) -> Tensor
          self, weight: cudnn_convolution_backward(self, grad, weight, padding, stride, dilation, groups, benchmark, deterministic, grad_input_mask)

        - name: cudnn_convolution_transpose(Tensor self, Tensor weight, int[] padding, int[] output_padding, int[] stride, int[] dilation, int groups, bool benchmark, bool deterministic, bool allow_tf32) -> Tensor
          self, weight: cudnn_convolution_transpose_backward(self, grad, weight, padding, output_padding, stride, dilation, groups, benchmark, deterministic, grad_input_mask)
    """
    for op, f in [
        ("cudnn_convolution", "cudnn_convolution_backward(self, grad,"),
        ("cudnn_convolution_transpose", "cudnn_convolution_transpose_backward(self, grad,"),
    ]:
        _passes_and_sabotage_fails(tmp_path, text, "1.5", [op], f, f.replace("grad,", "2 * grad,"))


def test_cudnn_convolution_backward_three_outputs(tmp_path):
    """0.4.0 to 1.4.0: the 3-element mask and grad_bias (cudnn_convolution_backward_bias: the
    gradient summed over all but the channels). 1.4's formulas, on entries with a bias whose
    forwards exist (mkldnn_convolution; slow_conv_transpose2d, one group)."""
    text = """
        - name: mkldnn_convolution(Tensor self, Tensor weight, Tensor? bias, int[] padding, int[] stride, int[] dilation, int groups) -> Tensor
          self, weight, bias: cudnn_convolution_backward(self, grad, weight, padding, stride, dilation, groups, false, false, grad_input_mask)

        - name: slow_conv_transpose2d(Tensor self, Tensor weight, int[2] kernel_size, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] output_padding=0, int[2] dilation=1) -> Tensor
          self, weight, bias: cudnn_convolution_transpose_backward(self, grad, weight, padding, output_padding, stride, dilation, 1, false, false, grad_input_mask)
    """
    for op, f in [
        ("mkldnn_convolution", "cudnn_convolution_backward(self, grad,"),
        ("slow_conv_transpose2d", "cudnn_convolution_transpose_backward(self, grad,"),
    ]:
        _passes_and_sabotage_fails(tmp_path, text, "1.4", [op], f, f.replace("grad,", "2 * grad,"))


# -- layer norm by its normalized shape ---------------------------------------------------------------

LAYER_NORM_1_8 = """
    - name: native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)
      input, weight, bias: "GradMode::is_enabled() || grads[1].defined() || grads[2].defined() ? infinitely_differentiable_native_layer_norm_backward(grads[0], grads[1], grads[2], input, result1, result2, weight, normalized_shape, eps, grad_input_mask) : (grads[0].defined() ? native_layer_norm_backward(grads[0].is_contiguous() ? grads[0] : grads[0].contiguous(), input, normalized_shape, result1, result2, weight, bias, grad_input_mask) : std::tuple<Tensor, Tensor, Tensor>())"
"""


def test_layer_norm_backward_by_normalized_shape(tmp_path):
    """1.8.0: infinitely_differentiable_native_layer_norm_backward(..., weight, normalized_shape,
    eps, grad_input_mask), 1.8's entry. Every derivative with all cotangents defined passes; with
    only the mean's or only rstd's defined, 1.8 gives no input gradient (it adds their terms only
    when both are defined): the checker reports that vjp, and the sabotaged copy fails the jvp too."""
    rows = jaxderiv.check_all(_spec(tmp_path, LAYER_NORM_1_8, "1.8"), ops=["native_layer_norm"], modes=MODES).rows
    status = {r.mode: r for r in rows}
    assert status["jvp"].status == "passed"
    assert status["vjp"].status == "failed" and "alone" in status["vjp"].reason, status["vjp"].reason
    f = "infinitely_differentiable_native_layer_norm_backward(grads[0],"
    bad = _spec(tmp_path, LAYER_NORM_1_8.replace(f, f.replace("grads[0],", "2 * grads[0],")), "1.8", "sabotaged.yaml")
    assert {r.mode: r.status for r in jaxderiv.check_all(bad, ops=["native_layer_norm"], modes=MODES).rows}[
        "jvp"
    ] == "failed"


def test_layer_norm_backward_by_normalized_shape_matches_m_n_form():
    """With every cotangent defined, the 1.8 form equals the 1.4 to 1.6 form that takes M and N."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4))
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    dy, dmean, drstd, gamma = (
        rng.normal(size=(2, 3, 4)),
        rng.normal(size=(2, 3, 1)),
        rng.normal(size=(2, 3, 1)),
        rng.normal(size=4),
    )
    load_helpers()
    by_shape = resolve("infinitely_differentiable_native_layer_norm_backward", 10)
    by_m_n = resolve("infinitely_differentiable_native_layer_norm_backward", 11)
    a = by_shape(dy, dmean, drstd, x, mean, rstd, gamma, [4], 1e-5, (True, True, True))
    flat = [np.reshape(v, (6,)) for v in (dmean, drstd, mean, rstd)]  # 1.4's mean and rstd: (M,)
    b = by_m_n(dy, flat[0], flat[1], x, flat[2], flat[3], gamma, 6, 4, 1e-5, (True, True, True))
    for u, v in zip(a, b):
        assert np.allclose(u, v)
    only_mean = by_shape(None, dmean, None, x, mean, rstd, gamma, [4], 1e-5, (True, True, True))
    assert only_mean == (None, None, None)  # 1.8's omission, as its C++ computes it


# -- reductions that select values ----------------------------------------------------------------------


def test_index_select_backward_five_arguments(tmp_path):
    """0.4.1 to 1.6.0: index_select_backward(grad, dim, indices, self.sizes(), keepdim) (1.5's
    kthvalue and mode)."""
    text = """
        - name: kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
          self: index_select_backward(grad, dim, indices, self.sizes(), keepdim)

        - name: mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
          self: index_select_backward(grad, dim, indices, self.sizes(), keepdim)
    """
    f = "index_select_backward(grad, dim, indices, self.sizes(), keepdim)"
    _passes_and_sabotage_fails(tmp_path, text, "1.5", ["kthvalue", "mode"], f, f"2 * {f}")


def test_select_backward_five_arguments(tmp_path):
    """0.4.0: the same function named select_backward(grad, dim, indices, self.sizes(), keepdim)
    (0.4.0's kthvalue), and select_backward_scalar(grad, self, result) (0.4.0's max)."""
    text = """
        - name: kthvalue(Tensor self, int64_t k, int64_t dim, bool keepdim)
          self: select_backward(grad, dim, indices, self.sizes(), keepdim)

        - name: max(Tensor self)
          self: select_backward_scalar(grad, self, result)
    """
    f = "select_backward(grad, dim, indices, self.sizes(), keepdim)"
    _passes_and_sabotage_fails(tmp_path, text, "0.4.0", ["kthvalue"], f, f"2 * {f}")
    f = "select_backward_scalar(grad, self, result)"
    _passes_and_sabotage_fails(tmp_path, text, "0.4.0", ["max"], f, f"2 * {f}")


def test_select_equals_and_first_equal_backward(tmp_path):
    """select_equals_backward (0.4.1 to 1.5.0: the whole gradient at every tie) and
    select_first_equal_backward (1.6.0: at the first tie only), on max(Tensor self)."""
    text = """
        - name: max(Tensor self) -> Tensor
          self: select_equals_backward(grad, self, result)
    """
    f = "select_equals_backward(grad, self, result)"
    _passes_and_sabotage_fails(tmp_path, text, "1.5", ["max"], f, f"2 * {f}")
    text = text.replace("select_equals_backward", "select_first_equal_backward")
    f = "select_first_equal_backward(grad, self, result)"
    _passes_and_sabotage_fails(tmp_path, text, "1.6", ["max"], f, f"2 * {f}")
    load_helpers()
    x = np.array([[1.0, 3.0], [3.0, 0.0]])
    assert np.asarray(resolve("select_equals_backward", 3)(2.0, x, 3.0)).tolist() == [[0, 2], [2, 0]]
    assert np.asarray(resolve("select_first_equal_backward", 3)(2.0, x, 3.0)).tolist() == [[0, 2], [0, 0]]


# -- convolution double backward before allow_tf32 --------------------------------------------------------


def test_convolution_double_backward_sixteen_arguments(tmp_path):
    """0.4.0 to 1.6.0: _convolution_double_backward with benchmark, deterministic and cudnn_enabled
    and no allow_tf32 (1.6's thnn_conv2d_backward.output_mask, brace-list dilation)."""
    text = """
        - name: thnn_conv2d_backward.output_mask(Tensor grad_output, Tensor self, Tensor weight, int[2] kernel_size, int[2] stride, int[2] padding, Tensor finput, Tensor fgrad_input, bool[3] output_mask) -> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)
          grad_output, self, weight: _convolution_double_backward(grads[0], grads[1], grads[2], grad_output, weight, self, stride, padding, {{1, 1}}, false, {{0, 0}}, 1, false, false, false, grad_input_mask)
    """
    f = "_convolution_double_backward(grads[0],"
    _passes_and_sabotage_fails(
        tmp_path, text, "1.6", ["thnn_conv2d_backward.output_mask"], f, f.replace("(grads[0],", "(2 * grads[0],")
    )


# -- linear algebra of 1.9 ---------------------------------------------------------------------------------


def test_eigh_backward(tmp_path):
    """1.9 and 1.10: eigh_backward(grads, self, eigenvectors, eigenvalues, eigenvectors_return)
    (1.9's symeig; its linalg_eigh has no forward here)."""
    text = """
        - name: symeig(Tensor self, bool eigenvectors=False, bool upper=True) -> (Tensor eigenvalues, Tensor eigenvectors)
          self: eigh_backward(grads, self, eigenvectors, eigenvalues, eigenvectors_return)
    """
    f = "eigh_backward(grads, self,"
    _passes_and_sabotage_fails(tmp_path, text, "1.9", ["symeig"], f, "2 * " + f)
    load_helpers()
    with pytest.raises(ValueError, match="symeig"):
        resolve("eigh_backward", 5)((None, None), np.eye(2), False, np.ones(2), np.eye(2))


def test_householder_product_backward_three_arguments(tmp_path):
    """1.9 and 1.10: householder_product_backward(grad, input, tau), before `result` was passed."""
    text = """
        - name: linalg_householder_product(Tensor input, Tensor tau) -> Tensor
          input, tau: householder_product_backward(grad, input, tau)
    """
    f = "householder_product_backward(grad, input, tau)"
    _passes_and_sabotage_fails(
        tmp_path, text, "1.9", ["linalg_householder_product"], f, f.replace("(grad,", "(2 * grad,")
    )


def test_linalg_det_backward_three_arguments(tmp_path):
    """1.9: linalg_det_backward(grad, self, result), on det (linalg_det has no forward here): right
    for invertible matrices, and of the wrong sign on the exactly singular sample, where 1.9's SVD
    branch leaves out det(U V^H)."""
    text = """
        - name: det(Tensor self) -> Tensor
          self: linalg_det_backward(grad, self, result)
    """
    rows = jaxderiv.check_all(_spec(tmp_path, text, "1.9"), ops=["det"], modes=MODES).rows
    failed = [r for r in rows if r.status != "passed"]
    assert failed and all(r.status == "failed" and "singular" in r.reason for r in failed), [
        (r.mode, r.status, r.reason) for r in failed
    ]
    bad = text.replace("linalg_det_backward(grad,", "linalg_det_backward(2 * grad,")
    rows = jaxderiv.check_all(_spec(tmp_path, bad, "1.9", "sabotaged.yaml"), ops=["det"], modes=MODES).rows
    assert any(r.status == "failed" and "singular" not in r.reason for r in rows)
    # the singular branch as 1.9 computes it: U diag(product of the other singular values) V^H,
    # whose sign is that of u_3 v_3^H, not of the adjugate (here -6 at (2, 2))
    load_helpers()
    a = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    got = np.asarray(resolve("linalg_det_backward", 3)(np.float64(1.0), a, np.float64(0.0)))
    u, s, vh = (np.asarray(m) for m in jnp.linalg.svd(a, full_matrices=False))
    assert s.tolist() == [3.0, 2.0, 0.0]
    assert np.allclose(got, (u * np.array([0.0, 0.0, 6.0])) @ vh)
    assert np.allclose(np.abs(got), np.diag([0.0, 0.0, 6.0]))


def test_pow_backward_exponent_three_arguments(tmp_path):
    """pow_backward_exponent with three arguments: (grad, self, exponent) in 0.4.1 to 1.3.0 and
    (grad, self, result) in 1.4.0, told apart by the release (`since=(1, 4)`); 1.3's and 1.4's
    pow.Tensor_Tensor and pow.Scalar."""
    text = """
        - name: pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
          self: pow_backward_self(grad, self, exponent)
          exponent: pow_backward_exponent(grad, self, exponent)

        - name: pow.Scalar(Scalar self, Tensor exponent) -> Tensor
          exponent: pow_backward_exponent(grad, self, exponent)
    """
    f = "exponent: pow_backward_exponent(grad, self, exponent)"
    ops = ["pow.Tensor_Tensor", "pow.Scalar"]
    _passes_and_sabotage_fails(tmp_path, text, "1.3", ops, f, f.replace("(grad,", "(2 * grad,"))
    text = text.replace(f, "exponent: pow_backward_exponent(grad, self, result)")
    f = "exponent: pow_backward_exponent(grad, self, result)"
    _passes_and_sabotage_fails(tmp_path, text, "1.4", ops, f, f.replace("(grad,", "(2 * grad,"))
    load_helpers()
    x, e = np.array([2.0, 3.0]), np.array([0.5, 2.0])
    assert np.allclose(resolve("pow_backward_exponent", 3, (1, 3))(1.0, x, e), x**e * np.log(x))
    assert np.allclose(resolve("pow_backward_exponent", 3, (1, 4))(1.0, x, x**e), x**e * np.log(x))
    assert resolve("pow_backward_exponent", 3, (1, 3)).__name__ == "pow_backward_exponent_of_exponent"
    assert resolve("pow_backward_exponent", 4).__module__.endswith("binary")

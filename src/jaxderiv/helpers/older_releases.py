"""The meanings and signatures with which the derivatives.yaml of older PyTorch releases call
helpers that later releases call otherwise.

Each function here is the C++ that its release ran, written in JAX (THNN's `*_updateGradInput`
kernels of 0.4 to 1.4, ATen's native functions, FunctionsManual.cpp), registered as one more
variant of the name (`namespace.helper`): told apart from the later signature by the number
of arguments the formula passes (pow_backward_exponent's two 3-argument meanings by the release,
`since=(1, 4)`). Like every jaxderiv helper they return conjugate Wirtinger gradients for
complex values, which most of these releases did not differentiate. Each docstring names the
releases whose files call it so and the source it was read from. A name whose later signature is an ATen op's forward
implementation (`leaky_relu_backward`, `cudnn_convolution_backward`, ...) keeps resolving to
that op for the later argument counts: the translator falls back to the op or forward of the
name when no helper variant takes the call's arguments (translate.py), so the newest files
resolve to what they resolved to before these were registered.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..forward.conv import convolution_backward
from ..namespace import helper
from ..tensor_utils import mH, mT
from .conv import convolution_double_backward, with_backend_flag_params

_MEAN = 1  # at::Reduction::Mean (0.4.1: ElementwiseMean), the same value in every release


# -- THNN's activation backwards (0.4 to 1.4) ---------------------------------------------------


@helper("leaky_relu_backward")
def leaky_relu_backward_thnn(grad_output, self, negative_slope):
    """0.4.0 to 1.4.0: `leaky_relu_backward(grad, self, negative_slope)`, THNN's
    LeakyReLU_updateGradInput (THNN/generic/LeakyReLU.c), out of place:
    `input > 0 ? gradOutput : gradOutput * negval`. (1.5 added `self_is_result`.)"""
    return jnp.where(self > 0, grad_output, grad_output * negative_slope)


@helper("threshold_backward")
def threshold_backward_thnn(grad_output, self, threshold, value):
    """0.4.0 and 0.4.1: `threshold_backward(grad, self, threshold, value)`, THNN's
    Threshold_updateGradInput (THNN/generic/Threshold.c), out of place:
    `input > threshold ? gradOutput : 0` (so 0 at a NaN input); `value` is not read."""
    return jnp.where(self > threshold, grad_output, jnp.zeros((), jnp.result_type(grad_output)))


@helper("rrelu_with_noise_backward")
def rrelu_with_noise_backward_thnn(grad_output, self, noise, lower, upper, training):
    """0.4.0 to 1.4.0: `rrelu_with_noise_backward(grad, self, noise, lower, upper, training)`,
    THNN's RReLU_updateGradInput (THNN/generic/RReLU.c), out of place: in training with
    `upper - lower > 1e-6`, `gradOutput * noise`; otherwise the leaky relu backward with the
    slope `(lower + upper) / 2`: `input <= 0 ? gradOutput * negSlope : gradOutput`.
    (1.5 added `self_is_result`.)"""
    if training and upper - lower > 1e-6:
        return grad_output * noise
    return jnp.where(self <= 0, grad_output * ((lower + upper) / 2), grad_output)


# -- losses ------------------------------------------------------------------------------------


@helper("smooth_l1_loss_backward")
def smooth_l1_loss_backward_beta1(grad_output, self, target, reduction):
    """0.4.1 to 1.6.0: `smooth_l1_loss_backward(grad, self, target, reduction)`, before `beta`
    (1.7). THNN's SmoothL1Criterion_updateGradInput (0.4.1 to 1.4), ATen's
    smooth_l1_loss_backward_out with smooth_l1_backward_cpu_kernel (1.5, 1.6): with
    x = input - target, clamp(x, -1, 1) times gradOutput, the reduced forms times the one
    gradOutput value and 1/numel for the mean."""
    x = jnp.clip(self - target, -1.0, 1.0)
    if reduction == 0:  # Reduction::None
        return x * grad_output
    norm = 1.0 / math.prod(jnp.shape(self)) if reduction == _MEAN else 1.0
    return x * (norm * jnp.reshape(grad_output, ()))


# -- grids ----------------------------------------------------------------------------------------


def _linspace_from_neg_one(n, dtype):
    """AffineGridGenerator.cpp's `linspace_from_neg_one` of 1.0 to 1.2: -1 to 1 in n steps, and
    the single value -1 (not 0, as later) for one step."""
    return jnp.linspace(-1.0, 1.0, n, dtype=dtype) if n > 1 else jnp.full((1,), -1.0, dtype)


@helper("affine_grid_generator_backward")
def affine_grid_generator_backward_corners(grad, size):
    """1.0.0 to 1.2.0: `affine_grid_generator_backward(grad, size)`, before `align_corners`
    (1.3): ATen's AffineGridGenerator.cpp, whose base grid puts -1 and 1 at the corner
    pixels' centres (`linspace(-1, 1, W)`, `-1` for a single pixel) with a last coordinate of
    1; grad_theta = (base_grid^T bmm grad_grid)^T per batch, for 4-d and 5-d sizes."""
    size = tuple(size)
    if len(size) not in (4, 5):
        raise ValueError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    spatial = size[2:]  # (H, W) or (D, H, W)
    dtype = jnp.result_type(grad)
    axes = [_linspace_from_neg_one(n, dtype) for n in reversed(spatial)]  # W first: x, y (, z)
    mesh = jnp.meshgrid(*reversed(axes), indexing="ij")  # each of shape spatial
    base = jnp.stack([*reversed(mesh), jnp.ones(spatial, dtype)], axis=-1)  # (*spatial, k + 1)
    n = size[0]
    base = jnp.reshape(base, (-1, len(spatial) + 1))
    g = jnp.reshape(grad, (n, -1, len(spatial)))
    return jnp.einsum("mk,nmj->njk", base, g)


# -- cuDNN convolutions before allow_tf32 (0.4 to 1.6) ------------------------------------------


def _cudnn_backward(self, grad_output, weight, padding, output_padding, stride, dilation, groups, mask, transposed):
    """ATen/native/cudnn/Conv.cpp's backward of 0.4 to 1.6: grad_input and grad_weight where the
    mask asks, and with a 3-element mask (0.4 to 1.4) grad_bias, cudnn_convolution_backward_bias:
    grad_output summed over every dimension but the channels (1). Undefined where not asked."""
    mask = tuple(bool(m) for m in mask)
    gi, gw, _ = convolution_backward(
        grad_output, self, weight, stride, padding, dilation, transposed, output_padding, groups, mask[:2] + (False,)
    )
    if len(mask) == 2:  # 1.5 and 1.6: (grad_input, grad_weight)
        return gi, gw
    gb = None
    if mask[2]:
        gb = jnp.sum(grad_output, axis=tuple(d for d in range(jnp.ndim(grad_output)) if d != 1))
    return gi, gw, gb


@helper("cudnn_convolution_backward")
def cudnn_convolution_backward_no_tf32(
    self, grad_output, weight, padding, stride, dilation, groups, benchmark, deterministic, output_mask
):
    """0.4.0 to 1.6.0: `cudnn_convolution_backward(self, grad, weight, padding, stride, dilation,
    groups, benchmark, deterministic, grad_input_mask)`, before `allow_tf32` (1.7): Conv.cpp's
    (grad_input, grad_weight, grad_bias) with a 3-element mask (0.4 to 1.4), (grad_input,
    grad_weight) with a 2-element one (1.5, 1.6). benchmark and deterministic choose cuDNN's
    algorithm, not the values."""
    return _cudnn_backward(self, grad_output, weight, padding, 0, stride, dilation, groups, output_mask, False)


@helper("cudnn_convolution_transpose_backward")
def cudnn_convolution_transpose_backward_no_tf32(
    self, grad_output, weight, padding, output_padding, stride, dilation, groups, benchmark, deterministic, output_mask
):
    """0.4.0 to 1.6.0: `cudnn_convolution_transpose_backward(self, grad, weight, padding,
    output_padding, stride, dilation, groups, benchmark, deterministic, grad_input_mask)`,
    before `allow_tf32` (1.7); outputs as `cudnn_convolution_backward`'s of those releases."""
    return _cudnn_backward(
        self, grad_output, weight, padding, output_padding, stride, dilation, groups, output_mask, True
    )


# -- layer norm by its normalized shape (1.8) ----------------------------------------------------


@helper("infinitely_differentiable_native_layer_norm_backward")
def infinitely_differentiable_native_layer_norm_backward_by_shape(
    dY, dmean, drstd, X, mean, rstd, gamma, normalized_shape, eps, grad_input_mask
):
    """1.8.0: `infinitely_differentiable_native_layer_norm_backward(grads[0], grads[1], grads[2],
    input, result1, result2, weight, normalized_shape, eps, grad_input_mask)` (1.4 to 1.6 pass
    M and N instead), FunctionsManual.cpp of 1.8. With M the product of the leading sizes and N
    that of `normalized_shape`'s, per row: dX = rstd dY gamma + b X + c, where ds = sum(dY gamma
    X), db = sum(dY gamma), b = (db mean - ds) rstd^3 / N, c = -b mean - db rstd / N; plus, only
    where both dmean and drstd are defined, var_std_mean_backward's
    2 (X - mean(X)) dvar / N + dmean / N with dvar = -rstd^3 drstd / 2 (1.8 drops dmean or drstd
    when the other is undefined). dgamma = sum over rows of dY (X - mean) rstd and dbeta = sum of
    dY, only where dY is defined. Each only where grad_input_mask asks."""
    shape = jnp.shape(X)
    axis = len(shape) - len(tuple(normalized_shape))
    M, N = math.prod(shape[:axis]), math.prod(shape[axis:])
    x = jnp.reshape(X, (M, N))
    mu = jnp.reshape(mean, (M, 1))
    r = jnp.reshape(rstd, (M, 1))
    s = 1.0 / N
    dy = None if dY is None else jnp.reshape(dY, (M, N))
    g = None if gamma is None else jnp.reshape(gamma, (1, N))
    both = dmean is not None and drstd is not None
    dX = dgamma = dbeta = None
    if grad_input_mask[0]:
        r3 = r * r * r
        extra = None
        if both:
            dvar = -0.5 * r3 * jnp.reshape(drstd, (M, 1))
            extra = 2.0 * s * dvar * (x - jnp.mean(x, axis=1, keepdims=True)) + jnp.reshape(dmean, (M, 1)) * s
        if dy is not None:
            dyg = dy if g is None else dy * g
            ds = jnp.sum(dyg * x, axis=1, keepdims=True)
            db = jnp.sum(dyg, axis=1, keepdims=True)
            b = (db * mu - ds) * r3 * s
            c = -b * mu - db * r * s
            dX = r * dyg + b * x + c
            if extra is not None:
                dX = dX + extra
        elif extra is not None:
            dX = extra
        if dX is not None:
            dX = jnp.reshape(dX, shape)
    if grad_input_mask[1] and dy is not None:
        dgamma = jnp.reshape(jnp.sum(dy * (x - mu) * r, axis=0), jnp.shape(gamma))
    if grad_input_mask[2] and dy is not None:
        dbeta = jnp.reshape(jnp.sum(dy, axis=0), jnp.shape(gamma))
    return dX, dgamma, dbeta


# -- linear algebra of the 1.9 file -----------------------------------------------------------------


@helper("eigh_backward")
def eigh_backward(grads, self, eigenvectors, L, V):
    """1.9 (and 1.10): `eigh_backward(grads, self, eigenvectors, eigenvalues, eigenvectors_return)`
    of symeig and linalg_eigh, FunctionsManual.cpp (later linalg_eig_backward with is_hermitian).
    With gV: R = V^H gV made skew-Hermitian, (R - R^H) / 2, divided off the diagonal by
    E_ij = L_j - L_i, its diagonal gL (or 0); gA = V R V^H. With gL only: V diag(gL) V^H; with
    neither, zeros. symeig(eigenvectors=False) is refused, as 1.9's TORCH_CHECK does."""
    if not eigenvectors:
        raise ValueError(
            "eigh_backward: torch.symeig(A, eigenvectors=False) is not differentiable. "
            "Use torch.linalg.eigvalsh(A) instead."
        )
    gL, gV = grads[0], grads[1]
    Vh = mH(V)
    if gV is not None:
        n = L.shape[-1]
        eye = jnp.eye(n, dtype=bool)
        E = jnp.where(eye, 1, L[..., None, :] - L[..., :, None])  # the diagonal is overwritten below
        R = Vh @ gV
        R = (R - mH(R)) * 0.5 / E
        diag = jnp.zeros(L.shape, R.dtype) if gL is None else jnp.asarray(gL).astype(R.dtype)
        R = jnp.where(eye, diag[..., None, :], R)
        return V @ (R @ Vh)
    if gL is not None:
        return (V * gL[..., None, :]) @ Vh
    return jnp.zeros_like(self)


@helper("householder_product_backward")
def householder_product_backward_unrolled(grad, input, tau):
    """1.9 and 1.10: `householder_product_backward(grad, input, tau)` of linalg_householder_product
    (later given `result` too), FunctionsManual.cpp: the product H_0 ... H_{k-1},
    H_j = I - tau_j v_j v_j^H, differentiated step by step from the last reflector back. The input
    is taken square, its strict lower triangle the reflectors with ones on the diagonal; at step j,
    with P_j = H_0 ... H_{j-1} (orgqr(input, tau[..., :j])) and D the running gradient:
    d_v4 = P_j^H (-D), D += -D (tau_j v v^H)^H, d_tau_j = sum(d_v4 * conj(v v^H)),
    d_v = (d_v4 conj(tau_j)) v + conj(v^H (d_v4 conj(tau_j))); d_input is kept below the
    diagonal."""
    if grad is None:
        return None, None
    m, n = input.shape[-2:]
    k = tau.shape[-1]
    batch = input.shape[:-2]
    square = jnp.zeros((*batch, m, m), input.dtype).at[..., :, :n].set(input)
    eye = jnp.eye(m, dtype=bool)
    square = jnp.where(eye, jnp.ones((), input.dtype), jnp.tril(square, -1))
    d_input = jnp.zeros_like(input)
    d_tau = jnp.zeros_like(tau)
    d_result = jnp.zeros((*batch, m, m), jnp.result_type(grad)).at[..., :, :n].set(grad)
    identity = jnp.broadcast_to(jnp.eye(m, dtype=input.dtype), (*batch, m, m))
    prefix = [identity]  # P_j = orgqr(square, tau[..., :j])
    for i in range(k - 1):
        v = square[..., :, i]
        prefix.append(prefix[-1] - tau[..., i, None, None] * (prefix[-1] @ v[..., :, None]) * jnp.conj(v)[..., None, :])
    for j in reversed(range(k)):
        v = square[..., :, j]
        tau_j = tau[..., j][..., None, None]
        v3 = v[..., :, None] * jnp.conj(v)[..., None, :]
        v4 = tau_j * v3
        d_v5 = -d_result
        d_result1 = d_v5 @ mH(v4)
        d_v4 = mH(prefix[j]) @ d_v5
        d_tauj = d_v4 * jnp.conj(v3)
        d_v3 = d_v4 * jnp.conj(tau_j)
        d_v1 = d_v3 @ v[..., :, None]
        d_v2 = jnp.conj(v)[..., None, :] @ d_v3
        d_result = d_result1 + d_result
        d_v = d_v1[..., 0] + jnp.conj(d_v2)[..., 0, :]
        d_input = d_input.at[..., :, j].add(d_v.astype(d_input.dtype))
        d_tau = d_tau.at[..., j].add(jnp.sum(d_tauj, axis=(-1, -2)).astype(d_tau.dtype))
    return jnp.tril(d_input, -1), d_tau


@helper("linalg_det_backward")
def linalg_det_backward_by_cases(grad, self, det):
    """1.9: `linalg_det_backward(grad, self, result)` (later (grad, det, A, LU, pivots)),
    FunctionsManual.cpp: where det != 0, (grad det) A^{-T} (no conjugation); where det == 0
    exactly, through the SVD A = U diag(s) V^H: prod_backward(grad, s, det) (grad det / s with no
    zero s, the product of the other values at a single zero, 0 with more) and U diag(gs) V^H
    (svd_backward with only gsigma; the sign of det(U V^H) is not applied). As in 1.9, the
    singular matrices of a batch form one reduction together: a zero in one of them stops the
    others' gradients (1.9 raised a shape error where there is a single zero among several
    singular matrices; the gradient of the product over them all is given there)."""
    det = jnp.asarray(det)
    singular = det == 0
    n = self.shape[-1]
    eye = jnp.eye(n, dtype=self.dtype)
    invertible = jnp.where(singular[..., None, None], eye, self)  # singular ones take the other branch
    nonsingular = (grad * det)[..., None, None] * mT(jnp.linalg.inv(invertible))
    u, s, vh = jnp.linalg.svd(self, full_matrices=False)
    s = s.astype(self.dtype)
    S = jnp.where(singular[..., None], s, jnp.ones((), s.dtype))  # only the singular ones reduce
    is_zero = S == 0
    zeros = jnp.sum(is_zero)
    no_zero = grad[..., None] * jnp.conj(det[..., None] / jnp.where(is_zero, 1, S))
    others = jnp.prod(jnp.where(is_zero, 1, S))
    one_zero = jnp.where(is_zero, grad[..., None] * jnp.conj(others), 0)
    gs = jnp.where(zeros == 0, no_zero, jnp.where(zeros == 1, one_zero, jnp.zeros_like(no_zero)))
    by_svd = (u * gs[..., None, :]) @ vh
    return jnp.where(singular[..., None, None], by_svd, nonsingular)


# -- reductions that select values (0.4 to 1.6) ------------------------------------------------------


@helper("index_select_backward", "select_backward")
def index_select_backward_scatter(grad, dim, indices, sizes, keepdim):
    """`index_select_backward(grad, dim, indices, self.sizes(), keepdim)` of 0.4.1 to 1.6.0
    (kthvalue, max.dim, median.dim, min.dim, mode, sort, topk; later
    value_selecting_reduction_backward), named `select_backward` with the same body in 0.4.0
    (Functions.cpp): grad and indices unsqueezed at dim unless keepdim, scattered into zeros of
    `sizes` along dim. For a 0-d input nothing is unsqueezed (1.6's condition; the earlier
    releases' unsqueeze could not scatter into a 0-d tensor)."""
    sizes = tuple(sizes)
    grad, indices = jnp.asarray(grad), jnp.asarray(indices)
    if not sizes:
        return jnp.reshape(grad, ())
    axis = dim % len(sizes)
    if not keepdim:
        grad, indices = jnp.expand_dims(grad, axis), jnp.expand_dims(indices, axis)
    zeros = jnp.zeros(sizes, grad.dtype)
    return jnp.put_along_axis(zeros, indices.astype(jnp.int32), grad, axis=axis, inplace=False)


@helper("select_equals_backward", "select_backward_scalar")
def select_equals_backward(grad, input, value):
    """`select_equals_backward(grad, self, result)` of 0.4.1 to 1.5.0, `select_backward_scalar` with
    the same body in 0.4.0 (max, min, median without dim; Functions.cpp): zeros_like(input) with
    grad written wherever input == value, the whole gradient at every tie."""
    return jnp.where(input == value, jnp.asarray(grad, jnp.result_type(input)), jnp.zeros((), jnp.result_type(input)))


@helper("select_first_equal_backward")
def select_first_equal_backward(grad, input, value):
    """1.6.0: `select_first_equal_backward(grad, self, result)` (max, min, median without dim;
    Functions.cpp): grad at the first element, in row-major order, equal to value, zeros
    elsewhere (a 0-d input takes grad). 1.6 raised where no element equals value (a NaN); the
    first element takes grad here."""
    input = jnp.asarray(input)
    dtype = jnp.result_type(input)
    if input.ndim == 0:
        return jnp.asarray(grad, dtype)
    first = jnp.argmax(jnp.ravel(input == value))
    flat = jnp.zeros((input.size,), dtype).at[first].set(jnp.asarray(grad, dtype))
    return jnp.reshape(flat, input.shape)


# -- convolution double backward before allow_tf32 (0.4 to 1.6) -------------------------------------


# 0.4.0 to 1.6.0: `_convolution_double_backward(ggI, ggW, ggb, gO, weight, input, stride, padding,
# dilation, transposed, output_padding, groups, benchmark, deterministic, cudnn_enabled,
# grad_input_mask)`, before `allow_tf32` (1.7). ATen/native/Convolution.cpp of 0.4.0 and 1.6.0
# passes benchmark, deterministic and cudnn_enabled only to the at::_convolution calls that pick
# a backend: the later function's values, which helpers/conv.py computes. The THNN entries write
# dilation and output_padding as brace lists (`{{1, 1}}`), which it reads too.
helper("_convolution_double_backward")(
    with_backend_flag_params(convolution_double_backward, "benchmark", "deterministic", "cudnn_enabled")
)


# -- pow's exponent gradient with three arguments (0.4.1 to 1.4) ------------------------------------


@helper("pow_backward_exponent")
def pow_backward_exponent_of_exponent(grad, self, exponent):
    """0.4.1 to 1.3.0: `pow_backward_exponent(grad, self, exponent)` (pow with a Tensor or, from
    1.0, a Scalar base), Functions.cpp: grad * self.pow(exponent) * self.log(), or
    grad * pow(base, exponent) * log(base); no special value at a zero base (0 * -inf is NaN).
    Conjugated for complex values, as jaxderiv's helpers are written (conjugate Wirtinger
    gradients; these releases did not differentiate complex pow)."""
    return grad * jnp.conj(jnp.power(self, exponent) * jnp.log(self))


@helper("pow_backward_exponent", since=(1, 4))
def pow_backward_exponent_of_result(grad, self, result):
    """1.4.0: `pow_backward_exponent(grad, self, result)` (pow.Tensor_Tensor and pow.Scalar),
    Functions.cpp: grad * result * self.log(), or grad * result * log(base) for a Scalar base;
    the same values as the 0.4.1 to 1.3 form, from the saved result. (1.5 passes exponent and
    result, and treats a zero base apart.) Conjugated for complex values, as the 0.4.1 form."""
    return grad * jnp.conj(result * jnp.log(self))

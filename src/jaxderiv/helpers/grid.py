"""FunctionsManual's grid sampler helpers: the double backward of grid_sampler_2d/3d.

The backward (gO, input, grid) -> (gI, gGrid) is linear in gO and in input. Pairing the
cotangents (ggI, ggGrid) with it and differentiating: ggO is the sampling of ggI plus the
grid-derivative of the sampling along ggGrid; gI scatters gO with the weights' derivative
along ggGrid; gGrid pairs gO with the weights' derivative over ggI and their second
derivative over input along ggGrid.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..forward.grid import Taps
from ..namespace import helper


def _defined(x):
    return x if x is not None and not isinstance(x, (tuple, list)) else None


def _double_backward(
    ggI, ggGrid, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask
):
    ggI, ggGrid = _defined(ggI), _defined(ggGrid)
    taps = Taps(input.shape, grid, interpolation_mode, padding_mode, align_corners)
    n = taps.n
    g = taps.flat(grad_output)  # (N, P, C)
    seen = taps.gather(input)  # (K, N, P, C)
    seen_gg = None if ggI is None else taps.gather(ggI)
    if ggGrid is not None:  # ggGrid in pixel coordinates per axis, and the weights' derivative along it
        along = [jnp.reshape(ggGrid, (ggGrid.shape[0], -1, n))[..., n - 1 - a] * taps.mult[a] for a in range(n)]
        dw_along = sum(taps.dw(a) * along[a] for a in range(n))  # (K, N, P)
    gO = gI = gG = None
    if output_mask[0]:
        terms = [] if ggI is None else [jnp.sum(taps.w[..., None] * seen_gg, 0)]
        terms += [] if ggGrid is None else [jnp.sum(dw_along[..., None] * seen, 0)]
        gO = taps.unflat(sum(terms[1:], terms[0]), taps.points) if terms else jnp.zeros_like(grad_output)
    if output_mask[1]:
        gI = jnp.zeros_like(input) if ggGrid is None else taps.scatter(dw_along[..., None] * g, input.shape[2:])
    if output_mask[2]:
        per_axis = [jnp.zeros(g.shape[:2], g.dtype) for _ in range(n)]
        if ggI is not None:
            paired_gg = jnp.sum(g * seen_gg, -1)
            per_axis = [p + jnp.sum(taps.dw(a) * paired_gg, 0) for a, p in enumerate(per_axis)]
        if ggGrid is not None:
            paired = jnp.sum(g * seen, -1)
            per_axis = [
                p + jnp.sum(sum(taps.d2w(a, b) * along[b] for b in range(n)) * paired, 0)
                for a, p in enumerate(per_axis)
            ]
        gG = taps.to_grid(per_axis, grid.shape)
    return gO, gI, gG


@helper("grid_sampler_2d_double_backward")
def grid_sampler_2d_double_backward(
    ggI, ggGrid, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask
):
    """(grad of grad_output, grad of input, grad of grid) of grid_sampler_2d_backward."""
    return _double_backward(
        ggI, ggGrid, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask
    )


@helper("grid_sampler_3d_double_backward")
def grid_sampler_3d_double_backward(
    ggI, ggGrid, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask
):
    """(grad of grad_output, grad of input, grad of grid) of grid_sampler_3d_backward."""
    return _double_backward(
        ggI, ggGrid, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask
    )

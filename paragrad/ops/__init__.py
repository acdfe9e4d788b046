"""Differentiable ops, grouped by family (see DESIGN.md): elementwise/, reduce/, movement/,
indexing/, linalg/, neural/ (the ops behind paragrad.nn), creation, conversion and a few
families of one file. This module gathers their functional forms (`pg.exp`, `pg.cat`, ...);
ops/methods.py makes them Tensor methods.
"""
from __future__ import annotations

from .creation import (arange, as_tensor, bernoulli, empty, empty_like, eye, from_numpy, full,
                       full_like, get_default_device, linspace, logspace, normal, ones, ones_like,
                       rand, rand_like, randint, randint_like, randn, randn_like, randperm,
                       set_default_device, tensor, tril_indices, triu_indices, zeros, zeros_like)
from .conversion import clone, contiguous, to
from .properties import (adjoint, can_cast, conj, imag, is_complex, is_conj, is_floating_point,
                         is_neg, is_nonzero, is_same_size, is_signed, real, resolve_conj,
                         resolve_neg)
from .elementwise.unary import (abs, acos, acosh, asin, asinh, atan, atanh, bitwise_not, ceil,
                                clamp, clamp_max, clamp_min, cos, erf, exp, expm1, floor, gelu,
                                isfinite, isinf, isnan, leaky_relu, log, log1p, logical_not, neg,
                                reciprocal, relu, round, rsqrt, sgn, sigmoid, sign, silu, sin, softplus,
                                sqrt, tanh, trunc)
from .elementwise.binary import (add, bitwise_and, bitwise_left_shift, bitwise_or,
                                 bitwise_right_shift, bitwise_xor, div, eq, floor_divide, ge, gt,
                                 le, logical_and, logical_or, logical_xor, lt, masked_fill, maximum,
                                 minimum, mul, ne, remainder, sub, where)
from .elementwise.power import pow
from .elementwise.math import (addcdiv, addcmul, allclose, aminmax, atan2, copysign,
                               cosh, count_nonzero, deg2rad, dist, equal, exp2, float_power, fmax,
                               fmin, fmod, frac, frexp, gcd, get_device, heaviside, hypot, isclose,
                               isneginf, isposinf, isreal, lcm, ldexp, lerp, log10, log2, logaddexp,
                               logaddexp2, logit, nan_to_num, nanmean, nansum, positive, rad2deg,
                               rsub, signbit, sinc, sinh, square, tan)
from .elementwise.special import digamma, i0, lgamma, mvlgamma, polygamma, xlogy
from .elementwise.error_function import erfc, erfinv
from .reduce.reductions import (all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min,
                                prod, std, sum, var, var_mean)
from .reduce.statistics import corrcoef, cov, cumulative_trapezoid, std_mean, trapezoid, trapz
from .reduce.sorting import (argsort, isin, kthvalue, msort, multinomial, sort, topk,
                             unique_consecutive)
from .reduce.order_statistics import (cummax, cummin, histc, median, mode, nanmedian, nanquantile,
                                      quantile)
from .movement.views import (broadcast_shapes, broadcast_to, chunk, expand, flatten, movedim,
                             narrow, permute, repeat, reshape, split, squeeze, swapaxes, swapdims,
                             t, transpose, unbind, unflatten, unsqueeze, view)
from .movement.copies import cat, flip, hstack, narrow_copy, pad, roll, row_stack, stack, vstack
from .movement.rearrangement import (atleast_1d, atleast_2d, atleast_3d, bincount, block_diag,
                                     broadcast_tensors, bucketize, cartesian_prod, cdist,
                                     column_stack, combinations, cross, cumprod, cumsum, diag,
                                     diag_embed, diagflat, diagonal, diff, dsplit, dstack, fliplr,
                                     flipud, hsplit, logcumsumexp, meshgrid, ravel,
                                     repeat_interleave, rot90, searchsorted, select, take,
                                     take_along_dim, tensor_split, tensordot, tile, trace, tril,
                                     triu, unfold, unique, vander, vsplit)
from .indexing.subscripts import (argwhere, gather, getitem, index_select, masked_select, nonzero,
                                  scatter, scatter_add, setitem, unravel_index)
from .indexing.updates import (index_add, index_copy, index_fill, index_put, index_put_,
                               masked_scatter, put, scatter_reduce)
from .linalg.products import (addbmm, addmm, addmv, addr, baddbmm, bmm, chain_matmul, dot, matmul, mm, mv, outer,
                              vdot)
from .linalg.vector_norm import renorm
from .linalg.matrix_functions import (inner, inverse, kron, matrix_exp, matrix_power, norm,
                                      pinverse, triangular_solve)
from .linalg.decompositions import (cholesky, cholesky_inverse, cholesky_solve, det, logdet, qr,
                                    slogdet, svd)
from .linalg.einsum import einsum
from .neural.softmax import log_softmax, softmax
from .neural.conv import conv2d
from .neural.layer_norm import layer_norm
from .windows import bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window

# torch's other names for the same functions
clip = clamp
fix = trunc
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
arctan2 = atan2
absolute, moveaxis, ger = abs, movedim, outer
concat = concatenate = cat
negative = neg
multiply, divide, subtract, true_divide = mul, div, sub, div
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

# `from paragrad.ops import *` (done by paragrad/__init__.py) exports the functional forms only
__all__ = [n for n, v in dict(globals()).items()
           if callable(v) and not n.startswith("_") and not isinstance(v, type)]

"""Differentiable ops, grouped by family (see DESIGN.md): elementwise/, reduce/, movement/,
indexing/, linalg/, neural/ (the ops behind paragrad.nn), creation, conversion and a few
families of one file. This module gathers their functional forms (`pg.exp`, `pg.cat`, ...);
ops/methods.py makes them Tensor methods.
"""
from __future__ import annotations

from .neural.conv import conv2d
from .linalg.einsum import einsum
from .elementwise.binary import (add, bitwise_and, bitwise_or, bitwise_xor, div, eq, floor_divide, ge, gt, le,
                     logical_and, logical_or, logical_xor, lt, masked_fill, maximum, minimum, mul, ne,
                     remainder, sub, where)
from .elementwise.power import pow
from .elementwise.math import (addcdiv, addcmul, addmm, allclose, aminmax, atan2, baddbmm, cosh, count_nonzero, deg2rad, dist, equal, exp2, float_power, fmax, fmin, fmod, frac, get_device, heaviside, hypot, isclose, lerp, log10, log2, logaddexp, logit, nan_to_num, nanmean, nansum, rad2deg, sinh, square, tan)
from .linalg.matrix_functions import norm
from .elementwise.error_function import erfc, erfinv      # (accurate tails)
from .elementwise.special import xlogy      # (torch's gradient at x = 0)
from .movement.rearrangement import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_tensors, bucketize,
                          cartesian_prod, cdist, column_stack, dstack, meshgrid, searchsorted,
                          tensordot)
from .movement.rearrangement import (bincount, cross, cumprod, cumsum, diag, diagonal, diff, fliplr, flipud, logcumsumexp, ravel, repeat_interleave, select, take, take_along_dim, tensor_split, tile, trace, tril, triu, unfold, unique)
from .indexing.updates import index_add, index_copy, index_fill
from .conversion import clone, contiguous, to
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       get_default_device, linspace, ones, ones_like, rand, rand_like, randint,
                       randint_like, randn, randn_like, randperm, set_default_device, tensor, zeros,
                       zeros_like)
from .indexing.subscripts import (gather, getitem, index_select, masked_select, nonzero, scatter, scatter_add,
                       setitem)
from .linalg.products import bmm, dot, matmul, mm, mv, outer
from .movement.views import (broadcast_to, chunk, expand, flatten, movedim, narrow, permute, repeat, reshape, split, squeeze, swapaxes, t, transpose, unbind, unflatten, unsqueeze, view)
from .movement.copies import cat, flip, hstack, pad, roll, stack, vstack
from .neural.softmax import log_softmax, softmax
from .neural.layer_norm import layer_norm
from .reduce.sorting import argsort, kthvalue, msort, multinomial, sort, topk
from .reduce.reductions import (all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min, prod, std, sum,
                     var, var_mean)
from .elementwise.unary import (acos, acosh, asin, asinh, atan, atanh)
from .elementwise.unary import (abs, bitwise_not, ceil, clamp, cos, erf, exp, expm1, floor, gelu, isfinite, isinf,
                    isnan, leaky_relu, log, log1p, logical_not, neg, reciprocal, relu, round, rsqrt,
                    sigmoid, sign, silu, sin, softplus, sqrt, tanh, trunc)

clip = clamp
fix = trunc
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
arctan2 = atan2
absolute, sgn, moveaxis, ger, vdot = abs, sign, movedim, outer, dot
concat = concatenate = cat
negative = neg
multiply, divide, subtract, true_divide = mul, div, sub, div
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


from .creation import logspace, tril_indices, triu_indices
from .elementwise.math import (copysign, frexp, gcd, isneginf, isposinf, isreal, lcm, ldexp, positive,
                               rsub, signbit, sinc)
from .indexing.subscripts import argwhere
from .linalg.products import addbmm, addmv, addr, chain_matmul
from .linalg.vector_norm import renorm
from .movement.copies import narrow_copy
from .movement.rearrangement import combinations, diag_embed, diagflat, rot90, vander
from .reduce.sorting import isin, unique_consecutive
from .reduce.statistics import corrcoef, cov, cumulative_trapezoid, std_mean, trapezoid, trapz
from .linalg.matrix_functions import *  # noqa: E402,F401,F403
from .reduce.order_statistics import *  # noqa: E402,F401,F403
from .indexing.updates import index_put, index_put_, masked_scatter, put, scatter_reduce
from .elementwise.special import *    # noqa: E402,F401,F403
from .creation import bernoulli, normal
from .elementwise.binary import bitwise_left_shift, bitwise_right_shift
from .elementwise.math import logaddexp2
from .elementwise.unary import clamp_max, clamp_min
from .indexing.subscripts import unravel_index
from .movement.copies import row_stack
from .movement.rearrangement import dsplit, hsplit, vsplit
from .movement.views import broadcast_shapes, swapdims
from .properties import *
from .windows import *                # noqa: E402,F401,F403

# `from paragrad.ops import *` (done by paragrad/__init__.py) exports the functional forms only
__all__ = [n for n, v in dict(globals()).items()
           if callable(v) and not n.startswith("_") and not isinstance(v, type)]

"""The rest of torch's everyday Tensor surface that the op families leave out, built from them:

- predicates and metadata: is_floating_point, is_complex, is_signed, is_nonzero, is_same_size,
  ndimension, nbytes, itemsize, is_cpu, can_cast, broadcast_shapes;
- the complex family on real tensors (paragrad has no complex dtypes): conj, resolve_conj and
  resolve_neg return the tensor, is_conj/is_neg are False, real is the tensor and imag raises,
  H / mH / adjoint are transposes;
- hsplit, vsplit, dsplit, row_stack, swapdims, clamp_min/clamp_max as functions, logaddexp2,
  sum_to_size, unravel_index;
- bit shifts (bitwise_left_shift / right_shift, <<, >>) composed from multiply and floor
  division by powers of two, with PyTorch's results for shifts past the width;
- `in` (__contains__), reversed() and complex() of a tensor;
- the random bernoulli(input) and normal(mean, std).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..tensor import Size, Tensor
from ._common import check_tensor
from .movement.views import sum_to
from .elementwise.binary import where
from .creation import rand, randn, tensor, zeros_like
from .elementwise.math import logaddexp
from .movement.views import mT, transpose
from .movement.copies import vstack
from .movement.rearrangement import tensor_split
from .elementwise.unary import clamp

_LN2 = math.log(2.0)


# ---- predicates and metadata ----------------------------------------------------------------
def is_floating_point(input):
    check_tensor(input, "is_floating_point")
    return input.dtype.is_floating_point


def is_complex(input):
    check_tensor(input, "is_complex")
    return False


def is_signed(input):
    """Whether the dtype holds negative values (False for bool and uint8)."""
    check_tensor(input, "is_signed")
    return input.dtype not in (dt.bool_, dt.uint8)


def is_nonzero(input):
    """The truth value of a one-element tensor (torch's errors for any other size)."""
    check_tensor(input, "is_nonzero")
    n = input.numel()
    if n != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} "
                           f"is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other):
    check_tensor(input, "is_same_size")
    check_tensor(other, "is_same_size", "other")
    return tuple(input.shape) == tuple(other.shape)


def can_cast(from_, to):
    """torch.can_cast: False where the cast would lose the kind (float -> integer, anything but
    bool -> bool); narrowing within a kind is allowed."""
    return dt.can_cast(dt.get_dtype(from_), dt.get_dtype(to))


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (ints count as 1-D shapes)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {[list(s) for s in shapes]} cannot be broadcast "
                           f"to a single shape") from None


# ---- the complex family, on real tensors ---------------------------------------------------
def conj(input):
    """A real tensor is its own conjugate (torch returns the input itself)."""
    check_tensor(input, "conj")
    return input


resolve_conj = resolve_neg = conj


def is_conj(input):
    check_tensor(input, "is_conj")
    return False


is_neg = is_conj


def real(input):
    check_tensor(input, "real")
    return input


def imag(input):
    check_tensor(input, "imag")
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def adjoint(input):
    """The conjugate transpose of the last two dims (a transpose for real tensors)."""
    return mT(input)


# ---- shapes ------------------------------------------------------------------------------
def _split_along(op, input, sections, dim, min_ndim):
    check_tensor(input, op)
    if input.ndim < min_ndim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_ndim} dimension, but got a "
                           f"tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the "
                           f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    """Split along dim 1 (dim 0 of a 1-D tensor); an int must divide that dim evenly."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


row_stack = vstack
swapdims = transpose


def clamp_min(input, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    return clamp(input, max=max)


def logaddexp2(input, other):
    """log2(2**input + 2**other), through logaddexp in natural-log units."""
    check_tensor(input, "logaddexp2")
    return logaddexp(input * _LN2, other * _LN2) * (1.0 / _LN2)


def sum_to_size(self, *size):
    """Sum this tensor down to `size`, which must broadcast to its shape."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    try:
        expandable = np.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
    except ValueError:
        expandable = False
    if not expandable:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    return sum_to(self, size)


def unravel_index(indices, shape):
    """Coordinates of flat indices into `shape`, one tensor per dim; like torch, indices wrap
    modulo each dim's size (so out-of-range and negative indices wrap, they don't raise)."""
    check_tensor(indices, "unravel_index", "indices")
    if indices.dtype.is_floating_point or indices.dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    out, rest = [], indices.long()
    for size in reversed(shape):
        out.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    return tuple(reversed(out))


# ---- bit shifts ------------------------------------------------------------------------------
def _shift_operands(op, input, other):
    a = input if isinstance(input, Tensor) else tensor(input, device=other.device)
    b = other if isinstance(other, Tensor) else tensor(other, device=a.device)
    dtype = dt.result_type(a, b)
    if dtype.is_floating_point or dtype is dt.bool_:
        raise RuntimeError(f"{op}: not implemented for '{dtype}' tensors (integer dtypes only)")
    return a.to(dtype), b.to(dtype), dtype.itemsize * 8, dtype is not dt.uint8


def bitwise_left_shift(input, other):
    """input << other for integers, wrapping like C; a shift below 0 or of the bit width or more
    gives 0, as PyTorch."""
    a, b, bits, _ = _shift_operands("bitwise_left_shift", input, other)
    out = a * 2 ** b.clamp(0, bits - 1)          # (2 ** (bits - 1) wraps to the sign bit, as C)
    return where((b < 0) | (b >= bits), 0, out)


def bitwise_right_shift(input, other):
    """input >> other for integers, arithmetic (rounding down) for signed types; a shift below 0
    or past the width fills with the sign, as PyTorch."""
    a, b, bits, signed = _shift_operands("bitwise_right_shift", input, other)
    top = bits - 2 if signed else bits - 1       # the largest shift 2 ** shift still represents
    out = a.div(2 ** b.clamp(0, top), rounding_mode="floor")
    fill = where(a < 0, -1, 0) if signed else zeros_like(a)
    return where((b < 0) | (b > top), fill, out)


# ---- random ----------------------------------------------------------------------------------
def bernoulli(input, p=None, *, generator=None):
    """A 0/1 tensor of input's shape and floating dtype: 1 with probability input (or p where
    given). Not differentiable (torch records a node whose gradient is zero)."""
    check_tensor(input, "bernoulli")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"bernoulli: not implemented for '{input.dtype}' input (floating dtypes only)")
    u = rand(*input.shape, generator=generator, dtype=input.dtype, device=input.device)
    return (u < (input.detach() if p is None else p)).to(input.dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """mean + std * N(0, 1): from tensors (their broadcast shape, dtype and device) or from
    floats and a size. Not differentiable (torch records a node whose gradient is zero)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    bad_std = (std < 0).any().item() if isinstance(std, Tensor) else std < 0
    if bad_std:
        raise RuntimeError(f"normal expects all elements of std >= 0.0 (got std {std})")
    if not tensors:
        if size is None:
            raise TypeError("normal(): with float mean and std, a size is needed")
        out = randn(*size, generator=generator, dtype=dtype, device=device) * std + mean
    else:
        if size is not None:
            raise TypeError("normal(): size is only taken with float mean and std")
        shape = broadcast_shapes(*(t.shape for t in tensors))
        z = randn(*shape, generator=generator, dtype=tensors[0].dtype, device=tensors[0].device)
        out = (z * (std.detach() if isinstance(std, Tensor) else std)
               + (mean.detach() if isinstance(mean, Tensor) else mean))
    return out.requires_grad_(requires_grad) if requires_grad else out


__all__ = ["is_floating_point", "is_complex", "is_signed", "is_nonzero", "is_same_size", "can_cast",
           "broadcast_shapes", "conj", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "real",
           "imag", "adjoint", "hsplit", "vsplit", "dsplit", "row_stack", "swapdims", "clamp_min",
           "clamp_max", "logaddexp2", "unravel_index", "bitwise_left_shift", "bitwise_right_shift",
           "bernoulli", "normal"]

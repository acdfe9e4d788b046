"""What a tensor is, as torch's functions ask it: predicates and metadata (is_floating_point,
is_complex, is_signed, is_nonzero, is_same_size, can_cast) and the complex family on real
tensors (paragrad has no complex dtypes): conj, resolve_conj and resolve_neg return the tensor,
is_conj/is_neg are False, real is the tensor and imag raises, adjoint (and Tensor.H / mH) are
transposes.
"""
from __future__ import annotations

from .. import dtypes as dt
from ._common import check_tensor
from .movement.views import mT

# ---- predicates and metadata ----------------------------------------------------------------
def is_floating_point(input):
    """Whether input's dtype is a floating-point type, as torch.is_floating_point."""
    check_tensor(input, "is_floating_point")
    return input.dtype.is_floating_point


def is_complex(input):
    """Whether input's dtype is complex, as torch.is_complex: always False (paragrad has no
    complex dtypes)."""
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
    """Whether input and other have the same shape, as torch.is_same_size."""
    check_tensor(input, "is_same_size")
    check_tensor(other, "is_same_size", "other")
    return tuple(input.shape) == tuple(other.shape)


def can_cast(from_, to):
    """torch.can_cast: False where the cast would lose the kind (float -> integer, anything but
    bool -> bool); narrowing within a kind is allowed."""
    return dt.can_cast(dt.get_dtype(from_), dt.get_dtype(to))


# ---- the complex family, on real tensors ---------------------------------------------------
def conj(input):
    """A real tensor is its own conjugate (torch returns the input itself)."""
    check_tensor(input, "conj")
    return input


resolve_conj = resolve_neg = conj


def is_conj(input):
    """Whether input's conjugate (is_conj) or negative (is_neg) bit is set, as torch.is_conj and
    torch.is_neg: always False (paragrad has no complex dtypes)."""
    check_tensor(input, "is_conj")
    return False


is_neg = is_conj


def real(input):
    """The real part of input, as torch.real: a real tensor is returned itself."""
    check_tensor(input, "real")
    return input


def imag(input):
    """The imaginary part of input, as torch.imag: paragrad has no complex dtypes, so it always
    raises RuntimeError (as PyTorch does for a real tensor)."""
    check_tensor(input, "imag")
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def adjoint(input):
    """The conjugate transpose of the last two dims (a transpose for real tensors)."""
    return mT(input)


__all__ = ["is_floating_point", "is_complex", "is_signed", "is_nonzero", "is_same_size", "can_cast",
           "conj", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "real", "imag", "adjoint"]

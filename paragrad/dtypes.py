"""dtypes and PyTorch's type-promotion rules.

A `DType` is a small immutable descriptor; backends map it to their own array dtype through
`dtype.name`. Promotion follows PyTorch: categories bool < integer < floating; a dimensioned
tensor outranks a 0-d tensor, which outranks a Python scalar, but only within a category
(so `int_tensor + 2.5` is floating, `float16_tensor + 2.5` stays float16).
"""
from __future__ import annotations

import numpy as np


class DType:
    """A tensor element type (name, itemsize, is_floating_point, is_signed), as torch.dtype.
    There are no complex dtypes: is_complex is always False."""
    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "_rank", "np")

    def __init__(self, name, itemsize, is_floating_point, is_signed, rank, np_dtype):
        self.name = name
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        self._rank = rank          # position in the promotion lattice (see promote_types)
        self.np = np_dtype         # the NumPy dtype with the same bits (None for bfloat16 without ml_dtypes)

    @property
    def is_complex(self):
        return False

    def __repr__(self):
        return f"paragrad.{self.name}"

    def __reduce__(self):          # pickles as the module-level singleton
        return (get_dtype, (self.name,))

    def to_numpy(self):
        if self.np is None:
            raise TypeError(f"dtype {self.name} has no NumPy equivalent here (install ml_dtypes)")
        return self.np


def _bfloat16_np():
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return None


bool_ = DType("bool", 1, False, False, 0, np.dtype(np.bool_))
uint8 = DType("uint8", 1, False, False, 1, np.dtype(np.uint8))
int8 = DType("int8", 1, False, True, 2, np.dtype(np.int8))
int16 = DType("int16", 2, False, True, 3, np.dtype(np.int16))
int32 = DType("int32", 4, False, True, 4, np.dtype(np.int32))
int64 = DType("int64", 8, False, True, 5, np.dtype(np.int64))
float16 = DType("float16", 2, True, True, 6, np.dtype(np.float16))
bfloat16 = DType("bfloat16", 2, True, True, 6, _bfloat16_np())
float32 = DType("float32", 4, True, True, 7, np.dtype(np.float32))
float64 = DType("float64", 8, True, True, 8, np.dtype(np.float64))

# torch-style aliases
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
bool = bool_  # noqa: A001  (shadowing is intended: `pg.bool` like `torch.bool`)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL if d.np is not None}

_default_float = float32


def get_default_dtype():
    """The floating dtype factories and Python floats default to (float32 until changed), as
    torch.get_default_dtype."""
    return _default_float


def set_default_dtype(dtype):
    """Sets the default floating dtype, as torch.set_default_dtype; a non-floating dtype raises
    TypeError."""
    global _default_float
    dtype = get_dtype(dtype)
    if not dtype.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point dtypes are allowed, got {dtype}")
    _default_float = dtype


def of_numpy(np_dtype):
    """The DType of a NumPy dtype, or None where paragrad has none (object, complex, ...)."""
    return _BY_NP.get(np_dtype)


def get_dtype(d) -> DType:
    """Turn a DType, a name ('float32'), a NumPy dtype or a Python type into a DType."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        if d in _BY_NAME:
            return _BY_NAME[d]
        raise TypeError(f"unknown dtype {d!r}; expected one of {sorted(_BY_NAME)}")
    if d is builtins_float:
        return _default_float
    if d is builtins_int:
        return int64
    if d is builtins_bool:
        return bool_
    try:
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype {d!r}; expected one of {sorted(_BY_NAME)}") from None


import builtins as _builtins  # noqa: E402

builtins_float, builtins_int, builtins_bool = _builtins.float, _builtins.int, _builtins.bool


def opmath(dtype):
    """The dtype an op computes in: float16/bfloat16 accumulate (sums, means, variances,
    norms, softmax, normalization statistics) in float32 and round once at the end, as
    PyTorch's opmath_type; every other dtype computes in itself."""
    return float32 if dtype is float16 or dtype is bfloat16 else dtype


def promote_types(a: DType, b: DType) -> DType:
    """The smallest dtype both convert to safely (torch.promote_types)."""
    if a is b:
        return a
    if a.is_floating_point != b.is_floating_point:
        return a if a.is_floating_point else b
    if a.is_floating_point:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if a._rank > b._rank else b
    if a is bool_ or b is bool_:
        return b if a is bool_ else a
    if {a.name, b.name} == {"uint8", "int8"}:
        return int16
    if a is uint8 or b is uint8:    # uint8 with a wider signed int: the signed one
        return b if a is uint8 else a
    return a if a._rank > b._rank else b


def _category(d: DType):
    return 2 if d.is_floating_point else (0 if d is bool_ else 1)


def can_cast(from_: DType, to: DType) -> bool:
    """torch's canCast: a value may narrow within its kind (int64 -> int32, float64 -> float16)
    but never go float -> integer/bool or integer -> bool."""
    return _category(from_) <= _category(to)


def scalar_dtype(x) -> DType:
    """The dtype a Python scalar carries in promotion (a 'wrapped number' in PyTorch)."""
    if isinstance(x, builtins_bool):
        return bool_
    if isinstance(x, builtins_int):
        return int64
    return _default_float


def _combine(higher, lower):
    # PyTorch's combine_categories: a lower-priority group only wins by being of a higher category
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _category(higher) >= _category(lower):
        return higher
    return promote_types(higher, lower)


def result_type(*operands) -> DType:
    """torch.result_type over tensors (anything with .dtype and .ndim) and Python scalars."""
    dim = zero = wrapped = None
    for x in operands:
        if hasattr(x, "dtype") and hasattr(x, "ndim"):
            d = x.dtype
            if x.ndim > 0:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


def is_floating(d: DType) -> bool:
    return d.is_floating_point


# ---- numeric limits (torch.finfo / torch.iinfo) ------------------------------------------------
_BF16_LIMITS = dict(bits=16, eps=0.0078125, max=3.3895313892515355e+38,
                    tiny=1.1754943508222875e-38, resolution=0.01)


class finfo:
    """Limits of a floating dtype (the default dtype when none is given)."""

    def __init__(self, dtype=None):
        d = get_dtype(dtype) if dtype is not None else _default_float
        if not d.is_floating_point:
            raise TypeError(f"finfo: expected a floating point dtype, got {d}")
        if d is bfloat16:
            lim = _BF16_LIMITS
        else:
            f = np.finfo(d.np)
            fl = builtins_float     # `float` is the dtype alias in this module
            lim = dict(bits=f.bits, eps=fl(f.eps), max=fl(f.max), tiny=fl(f.tiny),
                       resolution=10.0 ** -f.precision)
        self.bits, self.eps, self.max, self.min = lim["bits"], lim["eps"], lim["max"], -lim["max"]
        self.tiny = self.smallest_normal = lim["tiny"]
        self.resolution = lim["resolution"]
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer (or bool) dtype."""

    def __init__(self, dtype):
        d = get_dtype(dtype)
        if d.is_floating_point:
            raise TypeError(f"iinfo: expected an integer dtype, got {d}")
        if d is bool_:
            self.bits, self.min, self.max = 8, 0, 1
        else:
            i = np.iinfo(d.np)
            self.bits, self.min, self.max = i.bits, builtins_int(i.min), builtins_int(i.max)
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

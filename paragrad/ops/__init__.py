"""Differentiable ops, one file per family, and the table that makes them Tensor methods.

Reading this file gives the Tensor method surface: the _METHODS table below, plus the
METHODS of composites, linalg_composites, order_statistics, special, tensor_surface and
windows, merged at the end.
"""
from __future__ import annotations

import math

from .. import autograd, dtypes
from ..tensor import Tensor, bump_version, rebind
from ._common import snapshot as _snapshot
from . import (binary, conversion, creation, indexing, linalg, movement, nn, norm, reduce,
               math_composites, rearrangement, sorting, unary)
from .conv import conv2d
from .einsum import einsum
from ..dtypes import bool_
from .binary import (add, bitwise_and, bitwise_or, bitwise_xor, div, eq, floor_divide, ge, gt, le,
                     logical_and, logical_or, logical_xor, lt, masked_fill, maximum, minimum, mul, ne,
                     pow, remainder, sub, where)
from .math_composites import (addcdiv, addcmul, addmm, allclose, aminmax, atan2, baddbmm, cosh,
                         count_nonzero, deg2rad, dist, equal, exp2, float_power, fmax, fmin,
                         fmod, frac, get_device, heaviside, hypot, isclose, lerp, log10, log2,
                         logaddexp, logit, nan_to_num, nanmean, nansum, norm, rad2deg, sinh,
                         square, tan)
from .special import erfc, xlogy      # (accurate tails; torch's gradient at x = 0)
from .rearrangement import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_tensors, bucketize,
                          cartesian_prod, cdist, column_stack, dstack, meshgrid, searchsorted,
                          tensordot)
from .rearrangement import (bincount, cross, cumprod, cumsum, diag, diagonal, diff, fliplr, flipud,
                          index_add, index_copy, index_fill, logcumsumexp, ravel,
                          repeat_interleave, select, take, take_along_dim, tensor_split,
                          tile, trace, tril, triu, unfold, unique)
from .conversion import clone, contiguous, to
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       get_default_device, linspace, ones, ones_like, rand, rand_like, randint,
                       randint_like, randn, randn_like, randperm, set_default_device, tensor, zeros,
                       zeros_like)
from .indexing import (gather, getitem, index_select, masked_select, nonzero, scatter, scatter_add,
                       setitem)
from .linalg import bmm, dot, matmul, mm, mv, outer
from .movement import (broadcast_to, cat, chunk, expand, flatten, flip, hstack, movedim, narrow, pad,
                       permute, repeat, reshape, roll, split, squeeze, stack, swapaxes, t, transpose, unbind,
                       unflatten, unsqueeze, view, vstack)
from .nn import log_softmax, softmax
from .norm import layer_norm
from .sorting import argsort, kthvalue, msort, multinomial, sort, topk
from .reduce import (all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min, prod, std, sum,
                     var, var_mean)
from .unary import (acos, acosh, asin, asinh, atan, atanh)
from .unary import (abs, bitwise_not, ceil, clamp, cos, erf, exp, expm1, floor, gelu, isfinite, isinf,
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


def _rev(f):
    return lambda self, other: f(other, self)


def _commuted(f):
    """other + self as self + other: the same values (IEEE addition and multiplication commute),
    without making a 0-d tensor of the scalar on the left."""
    return lambda self, other: f(self, other)


def _inplace_binary(op, fn):
    def method(self, other, *args, **kwargs):
        if args or kwargs:      # add_(other, alpha=...) and friends
            other = _scaled(other, *args, **kwargs)
        return binary.binary_(op, self, other, fn)
    method.__name__ = fn.__name__ + "_"
    return method


def _scaled(other, alpha=1):
    return other * alpha if alpha != 1 else other


def _inplace_unary(fn, name=None):
    name = name or fn.__name__ + "_"

    def method(self, *args, **kwargs):
        return _assign(self, lambda t: fn(t, *args, **kwargs), name)
    method.__name__ = name
    return method


def _inplace_view(fn, name):
    """torch's in-place view ops (t_, unsqueeze_, ...): the tensor becomes the view of itself."""
    def method(self, *args, **kwargs):
        if _refuse_leaf(self, name):
            return rebind(self, fn(_snapshot(self), *args, **kwargs))
        with autograd.no_grad():
            self._data = fn(self, *args, **kwargs)._data       # (same buffer, new shape/strides)
        return self
    method.__name__ = name
    return method


def _refuse_leaf(self, name):
    """An in-place op's check (torch's): not on a leaf that requires grad while grad mode is
    on. -> whether the op is recorded in the graph."""
    if autograd._grad_enabled and self.grad_fn is None and self._requires_grad:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                           f"in-place operation.")
    return autograd._grad_enabled and self._requires_grad


def _assign(self, compute, name):
    """Run an out-of-place op and make its result this tensor's value, as an in-place op: the
    result must have this tensor's shape and a dtype that casts to its dtype (torch's rules)."""
    record = _refuse_leaf(self, name)
    if record:
        out = compute(_snapshot(self))      # saved inputs keep their old value
    else:
        with autograd.no_grad():
            out = compute(self)
    binary._check_inplace(name, self, out.dtype)
    if out.shape != self.shape:
        raise RuntimeError(f"{name}: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(out.shape)}")
    if record:
        return rebind(self, out if out.dtype is self.dtype else out.to(self.dtype))
    self._backend.copy_(self._data, out._data)
    bump_version(self)
    return self


def _float_power_(self, exponent):
    """float_power computes in float64, so in place the base must be float64 (torch's rule)."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{conversion._TYPE_NAMES.get(self.dtype.name, self.dtype.name)} but the "
                           f"operation's result requires dtype Double")
    return _assign(self, lambda t: float_power(t, exponent), "float_power_")


def _copy_(self, src, non_blocking=False):
    if isinstance(src, (int, float, bool)):         # a Python number fills, as torch's copy_
        src = creation.tensor(src, dtype=self.dtype, device=self.device)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    tracked = autograd._grad_enabled and (self._requires_grad or src._requires_grad)
    if tracked:
        if self.grad_fn is None and self._requires_grad:
            raise RuntimeError("copy_: a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        return rebind(self, src.to(self.dtype, self.device).expand(self.shape) + self.new_zeros(()))
    if src.device != self.device:
        src = src.to(self.device)
    try:
        movement.expand(src.detach(), self.shape)
    except RuntimeError:
        raise RuntimeError(f"copy_: source of shape {tuple(src.shape)} can't be broadcast to "
                           f"destination of shape {tuple(self.shape)}") from None
    self._backend.copy_(self._data, src._data)
    bump_version(self)
    return self


def _fill_(self, value):
    if isinstance(value, Tensor):
        value = value.item()
    # tracked: masked_fill keeps the graph (zero gradient to the old values, as PyTorch's
    # fill_) without computing from the old values, which may be inf/nan (t * 0 would not)
    return _assign(self, lambda t: full_like(t, value) if not t._requires_grad else
                   masked_fill(t, full_like(t, True, dtype=bool_), value), "fill_")


def _zero_(self):
    return _fill_(self, 0)


def _random_(draw):
    def method(self, *args, **kwargs):
        return _assign(self, lambda t: draw(t, *args, **kwargs), draw.__name__.strip("_") + "_")
    return method


def _uniform(self, a=0.0, b=1.0, generator=None):
    return rand(tuple(self.shape), generator=generator, dtype=self.dtype, device=self.device) * (b - a) + a


def _normal(self, mean=0.0, std=1.0, generator=None):
    return randn(tuple(self.shape), generator=generator, dtype=self.dtype, device=self.device) * std + mean


def _bernoulli(self, p=0.5, generator=None):
    from ..random import default_generator
    g = generator or default_generator(self.device)
    data = self._backend.bernoulli(g._state, p, tuple(self.shape), self.dtype, self.device.index)
    return creation._wrap(data, self.dtype, self.device)


def _exponential(self, lambd=1.0, generator=None):
    """-log(1 - u) / lambd, u ~ U[0, 1): exponential with rate lambd."""
    u = rand(tuple(self.shape), generator=generator, dtype=dtypes.float64, device=self.device)
    return ((-(-u).log1p()) / lambd).to(self.dtype)


def _geometric(self, p, generator=None):
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    u = rand(tuple(self.shape), generator=generator, dtype=dtypes.float64, device=self.device)
    return ((-u).log1p() / math.log1p(-p)).floor().clamp(min=0).add(1).to(self.dtype)


def _random(self, from_=0, to=None, *, generator=None):
    """Integers uniform in [from_, to) (to None: up to the dtype's largest exactly representable
    integer, as PyTorch; random_(to) means [0, to))."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:      # mantissa bits + 1: 2^24 for float32, 2^53 for float64, 2^11 / 2^8 for halves
        mant = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
        to = 2 ** mant[self.dtype.name] + 1 if self.dtype.is_floating_point else int(dtypes.iinfo(self.dtype).max) + 1
    return randint(int(from_), int(to), tuple(self.shape), generator=generator, device=self.device).to(self.dtype)


def _tensor_where(self, condition, other):
    return where(condition, self, other)


def _max_method(self, dim=None, keepdim=False):
    return max(self, dim, keepdim)


_METHODS = {
    # arithmetic and comparison operators
    "__add__": add, "__radd__": _commuted(add), "__sub__": sub, "__rsub__": _rev(sub),
    "__mul__": mul, "__rmul__": _commuted(mul), "__truediv__": div, "__rtruediv__": _rev(div),
    "__floordiv__": floor_divide, "__rfloordiv__": _rev(floor_divide),
    "__mod__": remainder, "__rmod__": _rev(remainder), "__pow__": pow, "__rpow__": _rev(pow),
    "__matmul__": matmul, "__rmatmul__": _rev(matmul),
    "__neg__": neg, "__pos__": lambda self: self, "__abs__": abs, "__invert__": bitwise_not,
    "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
    "__rand__": _rev(bitwise_and), "__ror__": _rev(bitwise_or), "__rxor__": _rev(bitwise_xor),
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "__getitem__": getitem, "__setitem__": setitem,
    "__iadd__": _inplace_binary("add", add), "__isub__": _inplace_binary("sub", sub),
    "__imul__": _inplace_binary("mul", mul), "__itruediv__": _inplace_binary("div", div),
    # named arithmetic
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div, "divide": div,
    "true_divide": div, "pow": pow, "maximum": maximum, "minimum": minimum, "remainder": remainder,
    "floor_divide": floor_divide, "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "greater": gt, "greater_equal": ge, "less": lt, "less_equal": le, "not_equal": ne, "equal": equal, "isclose": isclose, "allclose": allclose,
    "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "logaddexp": logaddexp, "hypot": hypot,
    "xlogy": xlogy,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
    "logical_not": logical_not, "bitwise_not": bitwise_not, "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
    "where": _tensor_where, "masked_fill": masked_fill,
    # unary
    "neg": neg, "negative": neg, "exp": exp, "log": log, "sqrt": sqrt, "rsqrt": rsqrt, "abs": abs,
    "sign": sign, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "erf": erf,
    "log1p": log1p, "expm1": expm1, "reciprocal": reciprocal, "floor": floor, "ceil": ceil,
    "round": round, "trunc": trunc, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "clamp": clamp, "clip": clamp, "clamp_min": lambda x, m: clamp(x, min=m),
    "clamp_max": lambda x, m: clamp(x, max=m),
    "asin": asin, "acos": acos, "atan": atan, "asinh": asinh, "acosh": acosh, "atanh": atanh,
    "arcsin": asin, "arccos": acos, "arctan": atan, "arcsinh": asinh, "arccosh": acosh,
    "arctanh": atanh, "atan2": atan2, "arctan2": atan2, "absolute": abs, "sgn": sign,
    "erfc": erfc, "logit": logit, "nan_to_num": nan_to_num, "fmax": fmax, "fmin": fmin, "fmod": fmod,
    "heaviside": heaviside, "float_power": float_power, "addmm": addmm, "baddbmm": baddbmm,
    "dist": dist, "cross": cross, "aminmax": aminmax, "get_device": get_device,
    "is_complex": lambda self: False,
    "square": square, "tan": tan, "sinh": sinh, "cosh": cosh, "log2": log2, "log10": log10,
    "exp2": exp2, "deg2rad": deg2rad, "rad2deg": rad2deg, "frac": frac, "fix": trunc,
    # reductions
    "sum": sum, "mean": mean, "var": var, "std": std, "amax": amax, "amin": amin, "max": _max_method,
    "min": lambda self, dim=None, keepdim=False: min(self, dim, keepdim), "prod": prod,
    "logsumexp": logsumexp, "argmax": argmax, "argmin": argmin, "all": all, "any": any,
    "softmax": softmax, "log_softmax": log_softmax, "cumsum": cumsum, "cumprod": cumprod,
    "logcumsumexp": logcumsumexp, "nansum": nansum,
    "nanmean": nanmean, "count_nonzero": count_nonzero, "norm": norm,
    # sorting and selection
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
    "multinomial": multinomial,
    # movement
    "reshape": reshape, "view": view, "view_as": movement.view_as, "reshape_as": movement.reshape_as,
    "permute": permute, "transpose": transpose, "swapaxes": swapaxes, "swapdims": swapaxes, "t": t,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "flatten": flatten, "unflatten": unflatten,
    "expand": expand, "expand_as": movement.expand_as, "broadcast_to": broadcast_to, "repeat": repeat,
    "split": split, "chunk": chunk, "unbind": unbind, "narrow": narrow, "flip": flip, "movedim": movedim,
    "roll": roll, "tril": tril, "triu": triu, "diagonal": diagonal, "diag": diag, "trace": trace,
    "tile": tile, "repeat_interleave": repeat_interleave, "tensor_split": tensor_split,
    "ravel": ravel, "fliplr": fliplr, "flipud": flipud, "moveaxis": movedim, "select": select,
    "take": take, "take_along_dim": take_along_dim, "diff": diff, "ger": outer, "vdot": dot,
    "unfold": unfold,
    "index_add": index_add, "index_fill": index_fill, "index_copy": index_copy,
    "bincount": bincount, "unique": unique,
    # indexing
    "gather": gather, "index_select": index_select, "scatter": scatter, "scatter_add": scatter_add,
    "nonzero": nonzero, "masked_select": masked_select,
    # linear algebra
    "matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "outer": outer,
    # conversion
    "to": to, "float": conversion.float_, "double": conversion.double, "half": conversion.half,
    "bfloat16": conversion.bfloat16, "long": conversion.long, "int": conversion.int_,
    "short": conversion.short, "bool": conversion.bool_, "byte": conversion.byte,
    "type": conversion.type_, "cpu": conversion.cpu, "cuda": conversion.cuda, "clone": clone,
    "contiguous": contiguous, "type_as": lambda self, other: to(self, other.dtype),
    "new_tensor": creation.new_tensor, "new_zeros": creation.new_zeros, "new_ones": creation.new_ones,
    "new_full": creation.new_full, "new_empty": creation.new_empty,
    # in-place
    "add_": _inplace_binary("add", add), "sub_": _inplace_binary("sub", sub),
    "mul_": _inplace_binary("mul", mul), "div_": _inplace_binary("div", div),
    "pow_": _inplace_unary(pow), "clamp_": _inplace_unary(clamp), "clip_": _inplace_unary(clamp),
    "masked_fill_": _inplace_unary(masked_fill), "relu_": _inplace_unary(relu),
    "exp_": _inplace_unary(exp), "sqrt_": _inplace_unary(sqrt), "neg_": _inplace_unary(neg),
    "abs_": _inplace_unary(abs), "sigmoid_": _inplace_unary(sigmoid), "tanh_": _inplace_unary(tanh),
    "copy_": _copy_, "fill_": _fill_, "zero_": _zero_, "float_power_": _float_power_,
    "tril_": _inplace_unary(tril), "triu_": _inplace_unary(triu),
    "index_add_": _inplace_unary(index_add), "index_fill_": _inplace_unary(index_fill),
    "index_copy_": _inplace_unary(index_copy), "nan_to_num_": _inplace_unary(nan_to_num),
    "uniform_": _random_(_uniform), "normal_": _random_(_normal), "bernoulli_": _random_(_bernoulli),
    "exponential_": _random_(_exponential), "geometric_": _random_(_geometric), "random_": _random_(_random),
    "data_ptr": lambda self: self._backend.data_ptr(self._data),
}
_PROPERTIES = {"T": movement.T, "mT": movement.mT}

# families kept in modules of their own: each lists its functions in __all__ and its Tensor
# methods in METHODS
from . import composites, linalg_composites, order_statistics, special, tensor_surface, windows  # noqa: E402
for _mod in (composites, linalg_composites, order_statistics, special, tensor_surface, windows):
    globals().update({_n: getattr(_mod, _n) for _n in _mod.__all__})
    _METHODS.update(_mod.METHODS)
_PROPERTIES.update(tensor_surface.PROPERTIES)

# torch's in-place `name_` forms of the elementwise and same-shape methods: computed out of
# place, then assigned under _assign's dtype and shape rules
_INPLACE = """absolute acos acosh addcdiv addcmul addmm arccos arccosh arcsin arcsinh arctan arctan2
    arctanh asin asinh atan atan2 atanh baddbmm bitwise_and bitwise_not bitwise_or bitwise_xor ceil
    clamp_max clamp_min cos cosh cumprod cumsum deg2rad divide eq erf erfc exp2 expm1 fix
    floor floor_divide fmod frac ge greater greater_equal gt heaviside hypot le lerp
    less less_equal log log10 log1p log2 logical_and logical_not logical_or logical_xor logit lt
    multiply ne negative not_equal rad2deg reciprocal remainder round rsqrt scatter scatter_add
    sgn sign sin sinh square subtract tan true_divide trunc xlogy""".split()
_INPLACE += ["bitwise_left_shift", "bitwise_right_shift"]
for _name in _INPLACE:
    _METHODS.setdefault(_name + "_", _inplace_unary(_METHODS[_name], _name + "_"))
# the augmented assignments not given above (x **= 2, x %= 3, x <<= 1, ...)
for _dunder, _name in (("__ipow__", "pow_"), ("__imod__", "remainder_"), ("__ifloordiv__", "floor_divide_"),
                       ("__iand__", "bitwise_and_"), ("__ior__", "bitwise_or_"), ("__ixor__", "bitwise_xor_"),
                       ("__ilshift__", "bitwise_left_shift_"), ("__irshift__", "bitwise_right_shift_")):
    _METHODS.setdefault(_dunder, _METHODS[_name])
for _name in ("squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims"):
    _METHODS.setdefault(_name + "_", _inplace_view(_METHODS[_name], _name + "_"))

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in _PROPERTIES.items():
    setattr(Tensor, _name, property(_fn))

# `from paragrad.ops import *` (done by paragrad/__init__.py) exports the functional forms only
__all__ = [n for n, v in dict(globals()).items()
           if callable(v) and not n.startswith("_") and v is not Tensor]

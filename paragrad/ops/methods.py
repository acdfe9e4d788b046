"""The Tensor method table: every method and property paragrad attaches to Tensor, in one place.

Search this file for a method's name to find the function behind it. Most entries are the
functional op of the same name (`x.exp()` is `paragrad.exp(x)`); the in-place `name_` forms are
built by ops/inplace.py from the out-of-place op; a few adapters below reorder arguments
(`x.where(c, y)` is `where(c, x, y)`). paragrad/__init__.py imports this module once, after the
ops, which attaches the table to Tensor.
"""
from __future__ import annotations

from ..dlpack import dlpack_device, to_dlpack
from ..autograd import rename
from ..tensor import Tensor
from . import *     # noqa: F401,F403  (every functional op: the table's values)
from . import conversion, creation, inplace
from .elementwise.binary import comparison_operator
from .inplace import (copy_, fill_, float_power_, inplace_binary, inplace_unary, inplace_view,
                      random_fill, zero_)
from .movement import views as movement
from .movement.views import sum_to_size


# ---- adapters: methods whose argument order or defaults differ from the functional form ------
def _rev(f):
    return lambda self, other: f(other, self)


def _rtruediv(self, other):
    """other / self, which torch computes as reciprocal(self) * other (MulBackward0)."""
    return rename(div(other, self), "MulBackward0", self)


def _commuted(f):
    """other + self as self + other: the same values (IEEE addition and multiplication commute),
    without making a 0-d tensor of the scalar on the left."""
    return lambda self, other: f(self, other)


def _tensor_where(self, condition, other):
    return where(condition, self, other)


def _max_method(self, dim=None, keepdim=False):
    return max(self, dim, keepdim)


def _contains(self, element):
    """element in tensor: whether any entry equals it (torch's __contains__)."""
    if not isinstance(element, (Tensor, int, float, bool)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element).__name__}.")
    return bool((self == element).any().item())


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing this tensor's memory (for np.from_dlpack, torch.from_dlpack,
    cupy.from_dlpack, ...); see paragrad/dlpack.py."""
    return to_dlpack(self, stream, max_version, dl_device, copy)


def _iter(self):
    """Iterating a tensor unbinds it (torch's: the rows are views, one UnbindBackward0)."""
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(unbind(self, 0))


def _H(self):
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return movement.mT(self)


METHODS = {
    "__init__": creation.legacy_init,     # Tensor(data) / Tensor(*sizes), torch's legacy constructor
    # arithmetic and comparison operators
    "__add__": add, "__radd__": _commuted(add), "__sub__": sub, "__rsub__": rsub,
    "__mul__": mul, "__rmul__": _commuted(mul), "__truediv__": div, "__rtruediv__": _rtruediv,
    "__floordiv__": floor_divide, "__rfloordiv__": _rev(floor_divide),
    "__mod__": remainder, "__rmod__": _rev(remainder), "__pow__": pow, "__rpow__": _rev(pow),
    "__matmul__": matmul, "__rmatmul__": _rev(matmul),
    "__neg__": neg, "__pos__": lambda self: self, "__abs__": abs, "__invert__": bitwise_not,
    "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
    "__rand__": _rev(bitwise_and), "__ror__": _rev(bitwise_or), "__rxor__": _rev(bitwise_xor),
    **{f"__{f.__name__}__": comparison_operator(f) for f in (eq, ne, lt, le, gt, ge)},
    "__getitem__": getitem, "__setitem__": setitem, "__iter__": _iter,
    "__iadd__": inplace_binary("add", add), "__isub__": inplace_binary("sub", sub),
    "__imul__": inplace_binary("mul", mul), "__itruediv__": inplace_binary("div", div),
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
    "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "asin": asin, "acos": acos, "atan": atan, "asinh": asinh, "acosh": acosh, "atanh": atanh,
    "arcsin": asin, "arccos": acos, "arctan": atan, "arcsinh": asinh, "arccosh": acosh,
    "arctanh": atanh, "atan2": atan2, "arctan2": atan2, "absolute": abs, "sgn": sgn,
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
    "take": take, "take_along_dim": take_along_dim, "diff": diff, "ger": outer, "vdot": vdot,
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
    "type": conversion.type_, "cpu": conversion.cpu, "cuda": conversion.cuda,
    "pin_memory": conversion.pin_memory, "is_pinned": conversion.is_pinned, "clone": clone,
    "contiguous": contiguous, "type_as": lambda self, other: to(self, other.dtype),
    "new_tensor": creation.new_tensor, "new_zeros": creation.new_zeros, "new_ones": creation.new_ones,
    "new_full": creation.new_full, "new_empty": creation.new_empty,
    # in-place
    "add_": inplace_binary("add", add), "sub_": inplace_binary("sub", sub),
    "mul_": inplace_binary("mul", mul), "div_": inplace_binary("div", div),
    "pow_": inplace_unary(pow), "clamp_": inplace_unary(clamp), "clip_": inplace_unary(clamp),
    "masked_fill_": inplace_unary(masked_fill), "relu_": inplace_unary(relu),
    "exp_": inplace_unary(exp), "sqrt_": inplace_unary(sqrt), "neg_": inplace_unary(neg),
    "abs_": inplace_unary(abs), "sigmoid_": inplace_unary(sigmoid), "tanh_": inplace_unary(tanh),
    "copy_": copy_, "fill_": fill_, "zero_": zero_, "float_power_": float_power_,
    "tril_": inplace_unary(tril), "triu_": inplace_unary(triu),
    "index_add_": inplace_unary(index_add), "index_fill_": inplace_unary(index_fill),
    "index_copy_": inplace_unary(index_copy), "nan_to_num_": inplace_unary(nan_to_num),
    "uniform_": random_fill(inplace._uniform), "normal_": random_fill(inplace._normal), "bernoulli_": random_fill(inplace._bernoulli),
    "exponential_": random_fill(inplace._exponential), "geometric_": random_fill(inplace._geometric), "random_": random_fill(inplace._random),
    "data_ptr": lambda self: self._backend.data_ptr(self._data),
    # composed from other ops (rotations, small elementwise ops, integers, products, statistics)
    "rot90": rot90, "diag_embed": diag_embed, "diagflat": diagflat, "argwhere": argwhere,
    "narrow_copy": narrow_copy, "positive": positive, "isneginf": isneginf, "isposinf": isposinf,
    "isreal": isreal, "signbit": signbit, "copysign": copysign, "ldexp": ldexp, "frexp": frexp,
    "sinc": sinc, "gcd": gcd, "lcm": lcm, "addbmm": addbmm, "addmv": addmv, "addr": addr,
    "cov": cov, "corrcoef": corrcoef, "renorm": renorm, "unique_consecutive": unique_consecutive,
    # linear algebra
    "inverse": inverse, "det": det, "logdet": logdet, "slogdet": slogdet,
    "matrix_power": matrix_power, "matrix_exp": matrix_exp, "kron": kron, "inner": inner,
    "pinverse": pinverse, "cholesky": cholesky, "qr": qr, "svd": svd,
    "triangular_solve": triangular_solve, "cholesky_solve": cholesky_solve,
    "cholesky_inverse": cholesky_inverse,
    # order statistics and indexed updates
    "cummax": cummax, "cummin": cummin, "quantile": quantile, "nanquantile": nanquantile,
    "mode": mode, "median": median, "nanmedian": nanmedian, "histc": histc,
    "scatter_reduce": scatter_reduce, "masked_scatter": masked_scatter, "put": put,
    "index_put": index_put,
    # special functions
    "lgamma": lgamma, "digamma": digamma, "polygamma": lambda self, n: polygamma(n, self),
    "polygamma_": lambda self, n: inplace.assign(self, lambda t: polygamma(n, t), "polygamma_",
                                                 "PolygammaBackward1"),
    "mvlgamma": mvlgamma, "erfinv": erfinv, "i0": i0,
    # predicates, metadata and the rest of the everyday surface
    "is_signed": is_signed, "is_nonzero": is_nonzero, "is_same_size": is_same_size,
    "ndimension": lambda self: self.ndim, "conj": conj, "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg, "is_conj": is_conj, "is_neg": is_neg, "adjoint": adjoint,
    "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit, "logaddexp2": logaddexp2,
    "sum_to_size": sum_to_size, "bernoulli": bernoulli,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
    "__rlshift__": _rev(bitwise_left_shift), "__rrshift__": _rev(bitwise_right_shift),
    "__contains__": _contains, "__reversed__": lambda self: self if self.ndim == 0 else self.flip(0),
    "__complex__": lambda self: complex(self.item()),
    # DLPack exchange (paragrad/dlpack.py)
    "__dlpack__": _dlpack, "__dlpack_device__": dlpack_device,
}

PROPERTIES = {
    "T": movement.T, "mT": movement.mT, "H": _H, "mH": movement.mT, "real": real, "imag": imag,
    "nbytes": lambda self: self.numel() * self.dtype.itemsize,
    "itemsize": lambda self: self.dtype.itemsize,
    "is_cpu": lambda self: self.device.type == "cpu",
}

# torch's in-place `name_` forms of the elementwise and same-shape methods: computed out of
# place, then assigned under inplace.assign's dtype and shape rules
INPLACE = """absolute acos acosh addcdiv addcmul addmm arccos arccosh arcsin arcsinh arctan arctan2
    arctanh asin asinh atan atan2 atanh baddbmm bitwise_and bitwise_not bitwise_or bitwise_xor ceil
    clamp_max clamp_min cos cosh cumprod cumsum deg2rad divide eq erf erfc exp2 expm1 fix
    floor floor_divide fmod frac ge greater greater_equal gt heaviside hypot le lerp
    less less_equal log log10 log1p log2 logical_and logical_not logical_or logical_xor logit lt
    multiply ne negative not_equal rad2deg reciprocal remainder round rsqrt scatter scatter_add
    sgn sign sin sinh square subtract tan true_divide trunc xlogy bitwise_left_shift
    bitwise_right_shift""".split()
for _name in INPLACE + """addbmm addmv addr copysign digamma erfinv gcd i0 index_put lcm ldexp lgamma
        masked_scatter mvlgamma polygamma put renorm scatter_reduce sinc""".split():     # (tested with their ops)
    METHODS.setdefault(_name + "_", inplace_unary(METHODS[_name], _name + "_"))
# the augmented assignments not given above (x **= 2, x %= 3, x <<= 1, ...)
for _dunder, _name in (("__ipow__", "pow_"), ("__imod__", "remainder_"), ("__ifloordiv__", "floor_divide_"),
                       ("__iand__", "bitwise_and_"), ("__ior__", "bitwise_or_"), ("__ixor__", "bitwise_xor_"),
                       ("__ilshift__", "bitwise_left_shift_"), ("__irshift__", "bitwise_right_shift_")):
    METHODS.setdefault(_dunder, METHODS[_name])
for _name in ("squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims"):
    METHODS.setdefault(_name + "_", inplace_view(METHODS[_name], _name + "_"))

for _name, _fn in METHODS.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in PROPERTIES.items():
    setattr(Tensor, _name, property(_fn))

"""In-place Tensor methods (add_, clamp_, copy_, fill_, uniform_, ...) built from the out-of-place
ops: torch's rules for when an in-place op may run (not on a leaf that requires grad while grad
mode is on), and for what it may write (the result must keep the tensor's shape, and its dtype
must cast to the tensor's). Recorded in-place ops compute out of place from a snapshot and rebind
the tensor to the result, so saved inputs keep their old values."""
from __future__ import annotations

import math

from .. import autograd, dtypes
from ..dtypes import bool_
from ..tensor import Tensor, bump_version, rebind
from ._common import check_writable, snapshot as _snapshot
from . import conversion, creation
from .creation import full_like, rand, randint, randn
from .elementwise import binary
from .elementwise.binary import masked_fill, where
from .elementwise.math import float_power
from .movement import views as movement
from ..autograd import grad_mode, rename


def inplace_binary(op, fn):
    def method(self, other, *args, **kwargs):
        if args or kwargs:      # add_(other, alpha=...) and friends
            other = _scaled(other, *args, **kwargs)
        return binary.binary_(op, self, other, fn)
    method.__name__ = fn.__name__ + "_"
    return method


def _scaled(other, alpha=1):
    return other * alpha if alpha != 1 else other


def inplace_unary(fn, name=None):
    name = name or fn.__name__ + "_"

    def method(self, *args, **kwargs):
        return assign(self, lambda t: fn(t, *args, **kwargs), name)
    # named as the module of its out-of-place op holds it (index_put_ beside index_put)
    method.__name__ = method.__qualname__ = name
    method.__module__ = fn.__module__
    method.__doc__ = (f"In-place {name[:-1]}: its result written into the tensor, which is "
                      f"returned; as torch.Tensor.{name}.\nWhere autograd records it, views "
                      f"taken before keep the old values.")
    return method


# torch's names for the in-place forms of the view ops (t_, squeeze_(dim), ...), by the name of
# the out-of-place op's node
_INPLACE_VIEW_NODES = {
    "TBackward0": "TBackward1", "TransposeBackward0": "TransposeBackward1",
    "UnsqueezeBackward0": "UnsqueezeBackward1",
    "SqueezeBackward0": "SqueezeBackward3", "SqueezeBackward1": "SqueezeBackward4",
    "SqueezeBackward2": "SqueezeBackward5"}


def inplace_view(fn, name):
    """torch's in-place view ops (t_, unsqueeze_, ...): the tensor becomes the view of itself."""
    def method(self, *args, **kwargs):
        if refuse_leaf(self, name):
            out = fn(_snapshot(self), *args, **kwargs)
            node = type(out.grad_fn).__name__
            return rebind(self, rename(out, _INPLACE_VIEW_NODES.get(node, node)))
        with autograd.no_grad():
            self._data = fn(self, *args, **kwargs)._data       # (same buffer, new shape/strides)
        return self
    method.__name__ = name
    return method


def refuse_leaf(self, name):
    """An in-place op's check (torch's): not on a leaf that requires grad while grad mode is
    on. -> whether the op is recorded in the graph."""
    if grad_mode._enabled:
        check_writable(self, name)
    return grad_mode._enabled and self._requires_grad


def assign(self, compute, name, node=None):
    """Run an out-of-place op and make its result this tensor's value, as an in-place op: the
    result must have this tensor's shape and a dtype that casts to its dtype (torch's rules).
    `node`: torch's name for the op's node, where it is not the out-of-place op's."""
    record = refuse_leaf(self, name)
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
        out = out if out.dtype is self.dtype else out.to(self.dtype)
        return rebind(self, rename(out, node) if node else out)
    self._backend.copy_(self._data, out._data)
    bump_version(self)
    return self


def float_power_(self, exponent):
    """float_power computes in float64, so in place the base must be float64 (torch's rule)."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{conversion._TYPE_NAMES.get(self.dtype.name, self.dtype.name)} but the "
                           f"operation's result requires dtype Double")
    return assign(self, lambda t: float_power(t, exponent), "float_power_")


def copy_(self, src, non_blocking=False):
    if isinstance(src, (int, float, bool)):         # a Python number fills, as torch's copy_
        src = creation.tensor(src, dtype=self.dtype, device=self.device)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    tracked = grad_mode._enabled and (self._requires_grad or src._requires_grad)
    if tracked:
        check_writable(self, "copy_")
        new = src.to(self.dtype, self.device).expand(self.shape)
        out = _replacing(_snapshot(self), new) if self._requires_grad else new + self.new_zeros(())
        return rebind(self, rename(out, "CopyBackwards"))
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


def fill_(self, value):
    # torch's node: FillBackward2 for a number, FillBackward3 for a tensor
    return _fill(self, value, "FillBackward3" if isinstance(value, Tensor) else "FillBackward2")


def zero_(self):
    return _fill(self, 0, "ZeroBackward0")


def _fill(self, value, node):
    if isinstance(value, Tensor):
        value = value.item()
    # tracked: masked_fill keeps the graph (zero gradient to the old values, as PyTorch's
    # fill_) without computing from the old values, which may be inf/nan (t * 0 would not)
    return assign(self, lambda t: full_like(t, value) if not t._requires_grad else
                  masked_fill(t, full_like(t, True, dtype=bool_), value), "fill_", node)


def _replacing(t, new):
    """new's values, with a zero gradient to t where t requires grad (torch's fills and
    copy_ keep the graph): a select, which never computes from t's values (inf/nan would
    survive t * 0)."""
    if not t._requires_grad:
        return new
    return where(full_like(t, True, dtype=bool_), new, t)


def random_fill(draw):
    """x.uniform_() and the other random fills, named as torch (UniformBackward0, ...)."""
    name = draw.__name__.strip("_")
    node = "BernoulliBackward2" if name == "bernoulli" else "".join(
        w.capitalize() for w in name.split("_")) + "Backward0"

    def method(self, *args, **kwargs):
        return assign(self, lambda t: _replacing(t, draw(t, *args, **kwargs)), name + "_", node)
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

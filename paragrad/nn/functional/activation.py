"""F's activation functions (PyTorch's torch.nn.functional activations): relu, gelu, silu,
softplus, leaky_relu and the softmax family in torch's argument forms over the Tensor ops, the
others (elu, selu, celu, mish, glu, prelu, rrelu, ...) composed from differentiable Tensor ops
(so their gradients, second ones included, come from autograd), and gumbel_softmax. hardtanh,
hardsigmoid, hardswish and logsigmoid record one node whose gradient is torch's formula (in
Tensor ops, so differentiable again): autograd through their compositions differs from torch
at the kinks and at NaN. inplace=True writes the result into the input (a differentiable
copy_). Each output's grad_fn has torch's class name (EluBackward0; EluBackward1 in place):
composed ones are renamed by autograd.rename."""
from __future__ import annotations

from ... import ops
from ...autograd import rename
from ...ops import sigmoid, tanh  # noqa: F401  (F.sigmoid, F.tanh)
from ...ops import argmax, rand_like, softmax, softplus, where, zeros_like
from ...tensor import Tensor
from ...ops.autocast_policy import policy
from ...ops.elementwise.unary import _activation

# PyTorch's SELU constants (Klambauer et al.)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _out(x, y, inplace, node_name=None):
    """y, or for inplace=True x overwritten with y; its recorded copy is named as torch's
    in-place op: node_name, or y's own class where torch's in-place form shares it."""
    if not inplace:
        return y
    before = x.grad_fn
    x.copy_(y)
    if x.grad_fn is not before:     # (the copy was recorded)
        rename(x, node_name or type(y.grad_fn).__name__)
    return x


def _check(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")


def elu(input, alpha=1.0, inplace=False):
    """alpha * (exp(x) - 1) if x <= 0 else x (the exp of x zeroed above 0: no overflow
    off-branch).
    The test is torch's x <= 0: a NaN takes the identity branch (gradient 1) and -0.0 gives
    -0.0."""
    _check(input, "elu")
    neg = where(input <= 0, input, 0.0)      # (not clamp: its min(-0.0, 0) is +0.0)
    y = rename(where(input <= 0, alpha * neg.expm1(), input), "EluBackward0")
    return _out(input, y, inplace, "EluBackward1")


def selu(input, inplace=False):
    """Applies SELU elementwise, scale * elu(x, alpha) with PyTorch's constants; as
    torch.nn.functional.selu (inplace=True writes into the input)."""
    _check(input, "selu")
    # torch's selu is an elu with scale
    return _out(input, rename(_SELU_SCALE * elu(input, _SELU_ALPHA), "EluBackward0"), inplace,
                "EluBackward1")


def celu(input, alpha=1.0, inplace=False):
    """Applies CELU elementwise, x if x > 0 else alpha * (exp(x / alpha) - 1); as
    torch.nn.functional.celu (inplace=True writes into the input)."""
    _check(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    neg = where(input <= 0, input, 0.0)
    y = rename(where(input <= 0, alpha * (neg / alpha).expm1(), input), "CeluBackward0")
    return _out(input, y, inplace, "CeluBackward1")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val), with torch's gradient: 0 at the bounds themselves (clamp's
    is 1 there) and 1 at a NaN."""
    _check(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.dtype.is_floating_point:     # the bounds in the input's dtype, as torch's (int() truncates)
        return _out(input, input.clamp(int(min_val), int(max_val)), inplace)
    return _out(input, _activation(
        "hardtanh", "HardtanhBackward0", input, lambda x, lo, hi: x.clamp(lo, hi),
        lambda g, x, lo, hi: g.masked_fill((x <= lo) | (x >= hi), 0.0), lo=min_val, hi=max_val),
        inplace)


def relu6(input, inplace=False):
    """Applies ReLU6 elementwise, min(max(0, x), 6), i.e. hardtanh(x, 0, 6); as
    torch.nn.functional.relu6 (inplace=True writes into the input)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """clamp(x + 3, 0, 6) / 6; the gradient is 1/6 strictly inside (-3, 3), else 0 (the
    kinks and NaN included), as torch's."""
    _check(input, "hardsigmoid")
    return _out(input, _activation(
        "hardsigmoid", "HardsigmoidBackward0", input, lambda x: (x + 3).clamp(0, 6) / 6,
        lambda g, x: where((x > -3) & (x < 3), g / 6, 0.0)), inplace)


def hardswish(input, inplace=False):
    """x * clamp(x + 3, 0, 6) / 6; the gradient is torch's: 0 for x <= -3, x / 3 + 1/2 for
    -3 < x < 3, else 1 (at 3 and at a NaN)."""
    _check(input, "hardswish")
    return _out(input, _activation(
        "hardswish", "HardswishBackward0", input, lambda x: x * (x + 3).clamp(0, 6) / 6,
        lambda g, x: where(x <= -3, 0.0, where(x < 3, g * (x / 3 + 0.5), g))), inplace)


def mish(input, inplace=False):
    """Applies Mish elementwise, x * tanh(softplus(x)); as torch.nn.functional.mish
    (inplace=True writes into the input)."""
    _check(input, "mish")
    return _out(input, rename(input * tanh(softplus(input)), "MishBackward0"), inplace)


def logsigmoid(input):
    """min(x, 0) - log1p(exp(-|x|)), torch's form (+0.0 at +inf); its gradient, torch's too,
    is 1 - s for x < 0 and s otherwise, s = e / (1 + e), e = exp(-|x|): 1/2 at 0, NaN at NaN."""
    _check(input, "logsigmoid")

    def grad(g, x):
        e = (-x.abs()).exp()
        s = e / (1 + e)
        return g * where(x < 0, 1 - s, s)
    return _activation("logsigmoid", "LogSigmoidBackward0", input,
                       lambda x: x.clamp(max=0) - (-x.abs()).exp().log1p(), grad)


def softsign(input):
    """Applies softsign elementwise, x / (1 + |x|); as torch.nn.functional.softsign."""
    _check(input, "softsign")
    return input / (1 + input.abs())


def softshrink(input, lambd=0.5):
    """Soft shrinkage elementwise: x - lambd above lambd, x + lambd below -lambd, else 0; as
    torch.nn.functional.softshrink."""
    _check(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}.")
    # torch's scalar kernel: x * 0 inside [-lambd, lambd] (-0.0 for negatives), and a NaN
    # takes the x - lambd branch (gradient 1)
    above = (input > lambd) | input.isnan()
    return rename(where(above, input - lambd, where(input < -lambd, input + lambd, input * 0)),
                  "SoftshrinkBackward0")


def hardshrink(input, lambd=0.5):
    """Hard shrinkage elementwise: 0 where -lambd <= x <= lambd, else x; as
    torch.nn.functional.hardshrink."""
    _check(input, "hardshrink")
    inside = (input >= -lambd) & (input <= lambd)       # (NaN is outside: kept, gradient 1)
    return rename(where(inside, 0.0, input), "HardshrinkBackward0")


def tanhshrink(input):
    """Applies tanhshrink elementwise, x - tanh(x); as torch.nn.functional.tanhshrink."""
    _check(input, "tanhshrink")
    return input - tanh(input)


def threshold(input, threshold, value, inplace=False):
    """value if x <= threshold else x (a NaN is kept, with gradient 1, as torch)."""
    _check(input, "threshold")
    y = rename(input.masked_fill(input <= threshold, value), "ThresholdBackward0")
    return _out(input, y, inplace, "ThresholdBackward1")


def glu(input, dim=-1):
    """a * sigmoid(b), a and b the halves of input along dim."""
    _check(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} is size {n}")
    a, b = input.chunk(2, dim)
    return rename(a * sigmoid(b), "GluBackward0")


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim (input first cast to dtype when given); as
    torch.nn.functional.softmin.
    dim=None raises TypeError (torch warns and picks a dim)."""
    _check(input, "softmin")
    return softmax(-input, dim, dtype=dtype)


@policy("prelu")
def prelu(input, weight):
    """x if x > 0 else weight * x, weight one value or one per channel (dim 1)."""
    _check(input, "prelu")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    c = weight.numel()
    if c == 1:
        weight = weight.reshape(())         # one slope: the output keeps the input's shape
    else:
        channels = input.shape[1] if input.ndim >= 2 else 1     # dim 1 is the channel dim
        if c != channels:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {c} and channel size = {channels}.")
        weight = weight.reshape((1, c) + (1,) * (input.ndim - 2))
    return rename(where(input > 0, input, weight * input), "PreluKernelBackward0")


# ---- F's forms of the Tensor ops: torch's argument names (input, inplace, _stacklevel) -------
def relu(input, inplace=False):
    """Applies ReLU elementwise, max(0, x); as torch.nn.functional.relu (inplace=True writes
    into the input)."""
    _check(input, "relu")
    return input.relu_() if inplace else ops.relu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Applies leaky ReLU elementwise, x if x > 0 else negative_slope * x; as
    torch.nn.functional.leaky_relu (inplace=True writes into the input)."""
    _check(input, "leaky_relu")
    return _out(input, ops.leaky_relu(input, negative_slope), inplace, "LeakyReluBackward1")


def silu(input, inplace=False):
    """Applies SiLU (swish) elementwise, x * sigmoid(x); as torch.nn.functional.silu
    (inplace=True writes into the input)."""
    _check(input, "silu")
    return _out(input, ops.silu(input), inplace)


def gelu(input, approximate="none"):
    """Applies GELU elementwise, x * Phi(x) with Phi the standard normal CDF (approximate="tanh":
    its tanh approximation); as torch.nn.functional.gelu."""
    _check(input, "gelu")
    return ops.gelu(input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):
    """Applies softplus elementwise, log(1 + exp(beta * x)) / beta, and x where beta * x >
    threshold; as torch.nn.functional.softplus."""
    _check(input, "softplus")
    return ops.softplus(input, beta, threshold)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax along dim, exp(x) / sum(exp(x)) (input first cast to dtype when given); as
    torch.nn.functional.softmax.
    dim=None raises TypeError (torch warns and picks a dim)."""
    return ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim (input first cast to dtype when given); as
    torch.nn.functional.log_softmax.
    dim=None raises TypeError (torch warns and picks a dim)."""
    return ops.log_softmax(input, dim, dtype=dtype)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each negative element's slope is drawn from
    U(lower, upper); in eval the slope is (lower + upper) / 2."""
    _check(input, "rrelu")
    if not training:
        y = ops.leaky_relu(input, (lower + upper) / 2)
    else:
        slope = ops.empty_like(input).uniform_(lower, upper)
        y = where(input > 0, input, input * slope)      # (0 takes a slope: its gradient, as torch's)
    y = rename(y, "RreluWithNoiseBackward0")
    return _out(input, y, inplace, "RreluWithNoiseBackward1")


# in-place forms (torch.nn.functional.relu_ and friends)
def relu_(input):
    """In-place ReLU: relu(input, inplace=True); as torch.nn.functional.relu_."""
    return relu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky ReLU: leaky_relu(input, negative_slope, inplace=True); as
    torch.nn.functional.leaky_relu_."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    """In-place ELU: elu(input, alpha, inplace=True); as torch.nn.functional.elu_."""
    return elu(input, alpha, inplace=True)


def selu_(input):
    """In-place SELU: selu(input, inplace=True); as torch.nn.functional.selu_."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """In-place CELU: celu(input, alpha, inplace=True); as torch.nn.functional.celu_."""
    return celu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh: hardtanh(input, min_val, max_val, inplace=True); as
    torch.nn.functional.hardtanh_."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    """In-place threshold: threshold(input, threshold, value, inplace=True); as
    torch.nn.functional.threshold_ (its argument names: threshold= works as a keyword)."""
    return _threshold(input, threshold, value, inplace=True)


_threshold = threshold      # (threshold_'s argument, named as torch's, hides the function there)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place randomized leaky ReLU: rrelu(input, lower, upper, training, inplace=True); as
    torch.nn.functional.rrelu_."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard=True returns the one-hot of its
    argmax in the forward pass with the soft sample's gradient (straight-through)."""
    u = rand_like(logits)
    # g = -log(E), E = -log(1 - U) ~ Exp(1); E is clamped so U = 0 cannot give an infinite g
    gumbels = -((-(-u).log1p()).clamp(min=1e-30)).log()
    y_soft = ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = argmax(y_soft, dim, keepdim=True)
    y_hard = zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft

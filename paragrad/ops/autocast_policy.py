"""Which dtype each op runs in under autocast (paragrad.amp.autocast), per device type: torch's
own lists (aten/src/ATen/autocast_mode.{h,cpp}), which differ between CUDA and the CPU.

Policies:
- lower: floating inputs (not float64) are cast to the autocast dtype (matmul, linear, conv, ...);
- fp32: floating inputs are cast to float32 (losses, and on CUDA exp, log, pow, layer_norm, ...);
- fp32_out: as fp32, for the reductions torch gives a float32 output dtype (CUDA's softmax, sum,
  cumsum, norms, ...): torch passes dtype=float32 unless the caller gave a dtype;
- promote: floating inputs are cast to the widest floating dtype among them (CPU's cat/stack).
An op missing from a device's table runs on its inputs as they are.

Ops apply their policy in one of two ways. Leaf ops (their body calls the backend, not other
policy ops) cast their inputs inline: `if autocast_state.on: x, y = cast("matmul", x, y)`, which
costs one flag test when autocast is off. Composite ops are wrapped by `@policy("name")`, which
also pauses autocast for the ops inside, as torch does (an fp16 attention must not run its
softmax in float32). A parameter's cast (a leaf that requires grad) is made once per autocast
context and reused (torch's weight-cast cache), unless the context has cache_enabled=False.
"""
from __future__ import annotations

import functools

from .. import autocast_state as state
from .. import dtypes as dt
from ..tensor import Tensor
from . import conversion

LOWER, FP32, FP32_OUT, PROMOTE = "lower", "fp32", "fp32_out", "promote"

_CUDA_LOWER = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d prelu addmm
    addmv addr matmul einsum mm mv linalg_vecdot linear linear_act mlp addbmm baddbmm bmm
    chain_matmul multi_dot lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell lstm gru rnn_tanh
    rnn_relu scaled_dot_product_attention""".split()
_CUDA_FP32 = """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
    softplus layer_norm rms_norm group_norm cosine_similarity poisson_nll_loss
    cosine_embedding_loss nll_loss hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss
    mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss binary_cross_entropy_with_logits cross_entropy dist pdist cdist renorm
    logsumexp interpolate""".split()
_CUDA_FP32_OUT = "prod softmax log_softmax cumprod cumsum vector_norm matrix_norm sum norm".split()
_CUDA_PROMOTE = """addcdiv addcmul atan2 bilinear cross dot vdot grid_sample index_put tensordot
    scatter_add""".split()

_CPU_LOWER = """conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear linear_act mlp
    matmul conv_transpose1d conv_transpose2d conv_transpose3d prelu
    scaled_dot_product_attention lstm rnn_tanh rnn_relu""".split()     # (mkldnn's RNN layers; not GRU)
_CPU_FP32 = """avg_pool3d binary_cross_entropy grid_sample polar prod quantile nanquantile stft cdist
    trace cholesky cholesky_inverse cholesky_solve inverse lu_solve pinverse max_pool3d
    max_unpool2d max_unpool3d adaptive_avg_pool3d mse_loss cosine_embedding_loss nll_loss
    hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy l1_loss huber_loss
    margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss ctc_loss kl_div
    multilabel_margin_loss binary_cross_entropy_with_logits linalg_cond linalg_matrix_rank
    linalg_solve linalg_cholesky linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv
    linalg_householder_product linalg_tensorinv linalg_tensorsolve qr svd triangular_solve
    fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d linalg_qr linalg_svd
    linalg_eig linalg_eigh linalg_lstsq reflection_pad1d reflection_pad2d replication_pad1d
    replication_pad2d replication_pad3d""".split()
_CPU_PROMOTE = "stack cat index_copy".split()

POLICIES = {
    "cuda": {**{n: LOWER for n in _CUDA_LOWER}, **{n: FP32 for n in _CUDA_FP32},
             **{n: FP32_OUT for n in _CUDA_FP32_OUT}, **{n: PROMOTE for n in _CUDA_PROMOTE}},
    "cpu": {**{n: LOWER for n in _CPU_LOWER}, **{n: FP32 for n in _CPU_FP32},
            **{n: PROMOTE for n in _CPU_PROMOTE}},
}
# CUDA refuses binary_cross_entropy under autocast (it is unsafe in float16), as torch does
BANNED = {"cuda": {"binary_cross_entropy"}}


def _eligible(t, device_type):
    """A floating tensor (not float64) on the device type autocast runs for."""
    return (isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not dt.float64
            and t._device.type == device_type)


def _device_type(values):
    for v in values:
        if isinstance(v, Tensor):
            return v._device.type
        if isinstance(v, (list, tuple)):
            found = _device_type(v)
            if found:
                return found
    return None


def _cacheable(t, dtype, device_type):
    """A float32 parameter's cast to the autocast dtype: made once per autocast context (torch's
    weight-cast cache)."""
    return (state.cache_enabled.get(device_type) and dtype is state.dtypes[device_type]
            and t.dtype is dt.float32 and t.grad_fn is None and t._requires_grad)


def _cached(t, dtype, device_type):
    if not _cacheable(t, dtype, device_type):
        return None
    hit = state.weight_cache.get(id(t))
    return hit[1] if hit is not None and hit[0] is t else None


def _target(policy, device_type, values):
    if policy == LOWER:
        return state.dtypes[device_type]
    if policy in (FP32, FP32_OUT):
        return dt.float32
    widest = None           # PROMOTE: the widest floating dtype among the eligible inputs
    for v in _flat(values):
        if _eligible(v, device_type):
            widest = v.dtype if widest is None else dt.promote_types(widest, v.dtype)
    return widest


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _cast_values(values, dtype, device_type):
    """values (a list) with each eligible tensor cast to dtype, inside lists and tuples too. The
    casts not in the weight cache are made together, per source dtype and device: one launch
    where the backend has one (a Linear's weight and bias, or a whole MLP chain's parameters)."""
    casts, todo = {}, {}
    for v in _flat(values):
        if _eligible(v, device_type) and v.dtype is not dtype and id(v) not in casts:
            casts[id(v)] = hit = _cached(v, dtype, device_type)
            if hit is None:
                todo.setdefault((v.dtype, v._device), []).append(v)
    for group in todo.values():
        for t, out in zip(group, conversion.cast_many(group, dtype)):
            casts[id(t)] = out
            if _cacheable(t, dtype, device_type):
                state.weight_cache[id(t)] = (t, out)
    return _replaced(values, casts) if casts else list(values)


def _replaced(values, casts):
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            v = type(v)(_replaced(v, casts))
        elif isinstance(v, Tensor):
            v = casts.get(id(v), v)
        out.append(v)
    return out


def _policy(name, values):
    device_type = _device_type(values)
    if device_type is None or not state.enabled.get(device_type):
        return None, None
    if name in BANNED.get(device_type, ()):
        raise RuntimeError(
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
            "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
            "safe to autocast.")
    return POLICIES[device_type].get(name), device_type


def cast(name, *values):
    """The inputs of a leaf op cast by its policy (unchanged where none applies): call only when
    autocast_state.on. -> a tuple like `values`."""
    policy, device_type = _policy(name, values)
    if policy is None:
        return values
    dtype = _target(policy, device_type, values)
    return values if dtype is None else tuple(_cast_values(values, dtype, device_type))


def runs_in(name, *values):
    """The dtype op `name` runs these inputs in under autocast (None: as they are). Call only
    when autocast_state.on."""
    policy, device_type = _policy(name, values)
    return None if policy is None else _target(policy, device_type, values)


def run_as_one(name, fn, *args, policy_only=False):
    """fn(*args) as one autocast op (a module computing several ops, e.g. a recurrent layer,
    which torch runs as one fused kernel): args cast by name's policy (tensors inside lists and
    tuples too), and autocast paused inside. With policy_only, a device type without a policy
    for name runs fn's ops autocast one by one instead (torch's CPU recurrent cells, which are
    compositions there). Call only when autocast_state.on."""
    if policy_only and _policy(name, args)[0] is None:
        return fn(*args)
    args = cast(name, *args)
    was = state.pause()
    try:
        return fn(*args)
    finally:
        state.resume(was)


def policy(name):
    """Decorator of a composite op: its tensor arguments cast by its policy, and autocast paused
    for the ops it calls."""
    def wrap(fn):
        @functools.wraps(fn)
        def autocast_op(*args, **kwargs):
            if not state.on:
                return fn(*args, **kwargs)
            rule, device_type = _policy(name, (*args, *kwargs.values()))
            if rule is None:
                return fn(*args, **kwargs)
            dtype = _target(rule, device_type, (*args, *kwargs.values()))
            if dtype is not None:       # (args and keyword arguments cast together)
                args, values = _cast_values([list(args), list(kwargs.values())], dtype, device_type)
                kwargs = dict(zip(kwargs, values))
            was = state.pause()
            try:
                return fn(*args, **kwargs)
            finally:
                state.resume(was)
        return autocast_op
    return wrap

"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (PyTorch's
torch.nn.utils.fusion): y = bn(conv(x)) becomes one conv with rescaled weights and a bias."""
from __future__ import annotations

import copy

from ...autograd import no_grad
from ..parameter import Parameter


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """-> (weight, bias) Parameters of the fused conv. conv_b, bn_w, bn_b may be None."""
    with no_grad():
        dtype = conv_w.dtype
        conv_b = conv_b if conv_b is not None else bn_rm.new_zeros(bn_rm.shape)
        bn_w = bn_w if bn_w is not None else bn_rm.new_ones(bn_rm.shape)
        bn_b = bn_b if bn_b is not None else bn_rm.new_zeros(bn_rm.shape)
        scale = bn_w * (bn_rv + bn_eps).rsqrt()                             # (C_out,)
        shape = [1] * conv_w.ndim
        shape[1 if transpose else 0] = -1
        w = (conv_w * scale.reshape(shape)).to(dtype)
        b = ((conv_b - bn_rm) * scale + bn_b).to(dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of eval-mode `conv` with eval-mode `bn` folded in."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    return fuse_conv_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)


def fuse_linear_bn_eval(linear, bn):
    """A copy of eval-mode `linear` with eval-mode `bn` (over its outputs) folded in."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features")
    return fuse_conv_bn_eval(linear, bn)

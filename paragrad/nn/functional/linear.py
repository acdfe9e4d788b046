"""F.linear and F.bilinear (PyTorch's torch.nn.functional linear maps): linear is the op
(one matmul plus bias, fused on CUDA), bilinear composes differentiable ops."""
from __future__ import annotations

from ...autograd import rename
from ...ops.neural.linear import linear
from ...ops.autocast_policy import policy


@policy("bilinear")
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] (+ bias[o])."""
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got {tuple(weight.shape)}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input1 {tuple(input1.shape)} and input2 {tuple(input2.shape)} "
                           f"do not match weight {tuple(weight.shape)} (expected (*, {in1}) and (*, {in2}))")
    lead = tuple(input1.shape[:-1])
    u = input1.reshape(-1, in1) @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)   # (B, out*in2)
    y = (u.reshape(-1, out_f, in2) * input2.reshape(-1, 1, in2)).sum(-1)               # (B, out)
    y = y.reshape(lead + (out_f,))
    if bias is not None:
        return y + bias
    # torch's ends in the view of its product back to the input's shape (then the bias add)
    return rename(y, "ViewBackward0", input1, input2, weight)

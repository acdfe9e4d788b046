"""linear (F.linear) and the fused Linear+activation ops that nn.Sequential's fusion runs:
linear_act (one GEMM with a bias/activation epilogue) and mlp (a whole Linear[act] chain as one
op, one GEMM per layer on the backend's fast path), each one recorded node."""
from __future__ import annotations

from ... import autocast_state, autograd
from ...autograd import Node, node_class, record, rename
from ...tensor import Tensor, _wrap
from .._common import same_device
from ..linalg.products import _matmul_nd, matmul
from ..movement.views import mT, reshape_to
from ..autocast_policy import cast, policy

_ACTS = ("relu", "gelu_tanh")


class LinearBackward(Node):
    def backward(self, g):
        x, w = self.saved                       # x (..., in), w (out, in), g (..., out)
        gx = gw = gb = None
        edges = self.next_edges
        if not autograd.is_grad_enabled() and g.dtype is x.dtype:
            return self._on_buffers(g, x, w, edges)
        if edges[0] is not None:
            gx = _matmul_nd(g, w)                                   # (..., in)
        if edges[1] is not None or edges[2] is not None:
            gs, xs = g._data.shape, x._data.shape
            g2 = reshape_to(g, (_prod(gs[:-1]), gs[-1]))            # (N, out)
            if edges[1] is not None:                                # (out, in): a fresh buffer
                gw = _matmul_nd(mT(g2), reshape_to(x, (_prod(xs[:-1]), xs[-1])))
            if edges[2] is not None:
                gb = g2.sum(0)
        return gx, gw, gb

    @staticmethod
    def _on_buffers(g, x, w, edges):
        """The same three products as backend calls: no graph to build, so none of the Tensor
        ops' checks, wrapping and recording (half of this node's host time on small layers)."""
        b, dtype, dev = g._backend, g.dtype, g._device
        gd, gs, xs = g._data, g._data.shape, x._data.shape
        gx = _wrap(b.matmul(gd, w._data), dtype, dev) if edges[0] is not None else None      # (..., in)
        gw = gb = None
        if edges[1] is not None or edges[2] is not None:
            g2 = gd if len(gs) == 2 else b.reshape(gd, (_prod(gs[:-1]), gs[-1]))           # (N, out)
            if edges[1] is not None:                                                          # (out, in)
                x2 = x._data if len(xs) == 2 else b.reshape(x._data, (_prod(xs[:-1]), xs[-1]))
                gw = _wrap(b.matmul(b.permute(g2, (1, 0)), x2), dtype, dev)
            if edges[2] is not None:
                gb = _wrap(b.reduce("sum", g2, (0,), False), dtype, dev)
        return gx, gw, gb


# torch's names for linear's output node: aten::linear runs addmm on a 2-D input with a bias;
# with a 1-D bias and a contiguous input, addmm on the input flattened to 2-D, viewed back;
# otherwise matmul (mm; a folded mm's unsafe view; a vector's mm squeezed back), then an
# in-place add of the bias. The fused Linear+activation ops end in the activation's node.
_NODES = {name: node_class(LinearBackward, name) for name in (
    "AddmmBackward0", "MmBackward0", "ViewBackward0", "UnsafeViewBackward0", "SqueezeBackward4",
    "AddBackward0")}
_ACT_NODE = {"relu": "ReluBackward0", "gelu_tanh": "GeluBackward0"}


def _linear_name(nd, contiguous, bias):
    """torch's name for linear of an nd-dim input (contiguous or not) and this bias."""
    if bias is None:
        return "MmBackward0" if nd == 2 else "UnsafeViewBackward0" if nd > 2 else "SqueezeBackward4"
    if nd == 2:
        return "AddmmBackward0"
    bd = bias._data
    return "ViewBackward0" if contiguous and bd.ndim == 1 and bd.flags.c_contiguous else "AddBackward0"


def _prod(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def linear(x, weight, bias=None):
    """y = x @ weight.T + bias as one recorded op (PyTorch's F.linear); weight is
    (out_features, in_features). A backend with a `linear_act` fast path runs it fused."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        x, weight, bias = cast("linear", x, weight, bias)
    for name, t in (("input", x), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linear(): argument '{name}' must be Tensor, not {type(t).__name__}")
    xs, ws = x._data.shape, weight._data.shape      # (buffer shapes: no Size built)
    if len(ws) == 1 and xs:       # torch allows a vector weight: y = x @ w (+ b)
        out = matmul(x, weight)
        return out + bias if bias is not None else out
    if len(ws) != 2 or not xs or xs[-1] != ws[1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied: input "
                           f"{tuple(x.shape)} and weight {tuple(weight.shape)} (expected input[..., "
                           f"{weight.shape[-1] if weight.ndim else '?'}] and a 2-D weight)")
    if x.dtype is not weight.dtype or (bias is not None and bias.dtype is not x.dtype):
        raise RuntimeError(f"linear: expected input, weight and bias of one dtype, got {x.dtype}, "
                           f"{weight.dtype}, {bias.dtype if bias is not None else None}")
    if bias is not None and bias._data.shape != (ws[0],) and bias._data.shape != ():
        raise RuntimeError(f"linear: bias of shape {tuple(bias.shape)} does not match weight "
                           f"{tuple(weight.shape)}")
    if x._device is not weight._device or (bias is not None and bias._device is not x._device):
        same_device("linear", x, weight, bias)
    if len(xs) == 1:
        return rename(linear(x.unsqueeze(0), weight, bias).squeeze(0),
                      _linear_name(1, x._data.flags.c_contiguous, bias), x, weight, bias)
    b = x._backend
    fast = b.fast("linear_bias") if bias is not None and bias._data.shape == (ws[0],) else None
    data = fast(x._data, weight._data, bias._data) if fast is not None else None
    if data is None:
        data = b.matmul(x._data, b.permute(weight._data, (1, 0)))
        if bias is not None:
            b.binary("add", data, bias._data, out=data)
    out = _wrap(data, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = _NODES[_linear_name(len(xs), x._data.flags.c_contiguous, bias)]()
        node.saved = (x, weight)
        record(node, (x, weight, bias), out)
    return out


class LinearActBackward(Node):
    def backward(self, g):
        x, w, aux = self.saved
        edges = self.next_edges
        need = (edges[0] is not None, edges[1] is not None, edges[2] is not None)
        if not autograd.is_grad_enabled():
            fast = g._backend.fast("linear_act_backward")
            if fast is not None:
                dx, dw, db = fast(g._data, x._data, w._data, aux._data, self.act, *need)
                return tuple(_wrap(d, g.dtype, g._device) if d is not None else None for d in (dx, dw, db))
        # the composite: d act, then the linear backward
        if self.act == "relu":
            dz = g * (aux > 0)
        else:
            from ..elementwise.unary import _gelu_grad
            dz = _gelu_grad(g, aux, "tanh")
        node = LinearBackward()
        node.saved, node.next_edges = (x, w), edges
        return node.backward(dz)


@policy("linear_act")
def linear_act(x, weight, bias=None, activation="relu"):
    """act(x @ weight.T + bias) as one op, activation 'relu' or 'gelu_tanh' (GELU with the
    tanh approximation). With a backend `linear_act` fast path it is one fused call (GEMM
    with a bias+activation epilogue); otherwise it composes linear and the activation.
    nn.Sequential uses it for each Linear followed by ReLU or GELU(approximate='tanh')."""
    if activation not in _ACTS:
        raise ValueError(f"linear_act: activation must be one of {_ACTS}, got {activation!r}")
    fast = x._backend.fast("linear_act") if isinstance(x, Tensor) else None
    if fast is None or weight.ndim != 2 or x.ndim < 2 or not x.dtype.is_floating_point:
        from ..elementwise.unary import gelu, relu
        y = linear(x, weight, bias)
        return relu(y) if activation == "relu" else gelu(y, approximate="tanh")
    if x.shape[-1] != weight.shape[1] or x.dtype is not weight.dtype or (
            bias is not None and (bias.dtype is not x.dtype or tuple(bias.shape) != (weight.shape[0],))):
        return linear(x, weight, bias)      # invalid arguments: linear raises its clear error
    same_device("linear_act", x, weight, bias)
    y, aux = fast(x._data, weight._data, bias._data if bias is not None else None, activation)
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = node_class(LinearActBackward, _ACT_NODE[activation])()
        node.act = activation
        node.saved = (x, weight, _wrap(aux, x.dtype, x._device))
        record(node, (x, weight, bias), out)
    return out


class MlpBackward(Node):
    def backward(self, g):
        x, *params = self.saved
        edges = self.next_edges
        if not autograd.is_grad_enabled():
            layers = [(params[2 * i]._data, params[2 * i + 1]._data if params[2 * i + 1] is not None
                       else None, act) for i, act in enumerate(self.acts)]
            needs = [(edges[1 + 2 * i] is not None, edges[2 + 2 * i] is not None)
                     for i in range(len(self.acts))]
            dx, per_layer = g._backend.fast("mlp_backward")(g._data, layers, self.aux, edges[0] is not None, needs)
            wrap = lambda d: _wrap(d, g.dtype, g._device) if d is not None else None  # noqa: E731
            return (wrap(dx),) + tuple(wrap(d) for pair in per_layer for d in pair)
        # double backward: differentiate the composition
        return _grads_of(_compose(x, params, self.acts), [x, *params], g)


def _grads_of(y, ins, g):
    want = [t for t in ins if t is not None and t.requires_grad]
    got = iter(autograd.grad(y, want, g, create_graph=True, allow_unused=True))
    return tuple(next(got) if (t is not None and t.requires_grad) else None for t in ins)


def _compose(x, params, acts):
    for i, act in enumerate(acts):
        w, b = params[2 * i], params[2 * i + 1]
        x = linear_act(x, w, b, act) if act else linear(x, w, b)
    return x


@policy("mlp")
def mlp(x, layers):
    """A chain of linear layers, each followed by an activation or nothing: layers = [(weight,
    bias, act), ...], act one of None, 'relu', 'gelu_tanh'. With a backend `mlp` fast path the
    whole chain is one op whose backward fuses each activation's derivative into the GEMM
    epilogue of the layer above (cuBLASLt DRELU / DGELU) and each bias gradient into a weight
    gradient's; otherwise it composes linear_act / linear. nn.Sequential uses it."""
    acts = tuple(act for _, _, act in layers)
    if any(a is not None and a not in _ACTS for a in acts):
        raise ValueError(f"mlp: activations must be None or one of {_ACTS}, got {acts}")
    params = [t for w, b, _ in layers for t in (w, b)]
    fast = x._backend.fast("mlp")
    ok = fast is not None and x.ndim >= 2 and all(
        w.ndim == 2 and w.dtype is x.dtype and (b is None or b.dtype is x.dtype) for w, b, _ in layers)
    if ok:
        dims = [x.shape[-1]] + [w.shape[0] for w, _, _ in layers]
        ok = all(w.shape[1] == d for (w, _, _), d in zip(layers, dims)) and all(
            b is None or tuple(b.shape) == (w.shape[0],) for w, b, _ in layers)
    r = fast(x._data, [(w._data, b._data if b is not None else None, a) for w, b, a in layers]) \
        if ok else None
    if r is None:
        return _compose(x, params, acts)
    y, aux = r
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, *params):
        # (the last layer's op names it; its input is x only when it is the first layer)
        name = _ACT_NODE.get(acts[-1]) or _linear_name(x.ndim, len(layers) > 1 or x._data.flags.c_contiguous,
                                                       layers[-1][1])
        node = node_class(MlpBackward, name)()
        node.acts, node.aux, node.saved = acts, aux, (x, *params)
        record(node, (x, *params), out)
    return out

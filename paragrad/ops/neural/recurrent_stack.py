"""A whole recurrent stack (every layer, direction and time step of nn.RNN, nn.LSTM or nn.GRU) as
one recorded op, where the backend runs it in one call: the fast path `rnn` and its backward
`rnn_backward` (cuDNN's recurrent layers on CUDA, backends/cuda/cudnn_rnn.py). One forward call
and one backward call per sequence, as PyTorch's cuDNN path makes, instead of a GEMM and a gate
kernel per step. Where the backend has no such call (the CPU), or declines the case, the module
composes the stack per layer and direction (recurrent.py).

  fast_rnn(mode, x, hx, cx, weights, *, hidden_size, proj_size, num_layers, bidirectional,
           dropout, training, seq_lengths, need_backward, dropout_seed) -> (y, hy, cy, ctx) or None
      x (L, N, H_in); hx (num_layers * D, N, H_out); cx likewise with H, or None (not an LSTM);
      weights: the module's _flat_weights buffers in order; seq_lengths: None or each row's
      number of steps (host ints); y (L, N, D * H_out) zero past a row's length; ctx what the
      backward needs (None without need_backward).
  fast_rnn_backward(ctx, dy, dhy, dcy, need_dweights) -> (dx, dhx, dcx, dweights)
      dhy, dcy may be None (zeros); dweights in the order of weights.

Dropout between layers then draws from the backend's own stream (cuDNN's, as PyTorch's cuDNN
path), restarted from the device generator's seed whenever that seed changes (manual_seed).
"""
from __future__ import annotations

import numpy as np

from ...autograd import Node, grad_mode, record
from ...random import default_generator
from ...tensor import _wrap


class CudnnRnnBackward0(Node):
    """The stack's gradients, all inputs at once, from one backend call."""

    def backward(self, *grads):
        if grad_mode._enabled:
            raise RuntimeError("double backwards is not supported for a recurrent layer run as one "
                               "backend call (cuDNN's); run its forward inside "
                               "paragrad.backends.fast_paths.fast_paths(False) to differentiate twice")
        if self.ctx is None:
            raise RuntimeError("Trying to backward through the graph a second time: a recurrent layer's "
                               "backend call keeps its workspace for one backward")
        b, dtype, dev = self.backend, self.dtype, self.device
        gy = grads[0]._data if grads[0] is not None else b.full(self.y_shape, 0, dtype, dev.index)
        gh = [g._data if g is not None else None for g in grads[1:]]
        dx, dhx, dcx, dws = b.fast("rnn_backward")(self.ctx, gy, gh[0], gh[1] if len(gh) > 1 else None,
                                                   need_dweights=self.need_dweights)
        self.ctx = None
        out = [dx, dhx, dcx] + (list(dws) if dws is not None else [None] * self.n_weights)
        return tuple(_wrap(g, dtype, dev) if g is not None else None for g in out)


def recurrent_stack(mode, x, hx, cx, weights, *, hidden_size, proj_size, num_layers, bidirectional,
                    dropout, training, batch_sizes=None):
    """-> (out (L, N, D * H_out), h_n, c_n or None) by the backend's one call, or None where it
    has none. x (L, N, H_in), hx and cx (num_layers * D, N, H) tensors of x's dtype and device;
    batch_sizes: a packed batch's step sizes (x its padded, length-sorted form) or None."""
    b = x._backend
    fast = b.fast("rnn")
    if fast is None or hx.dtype is not x.dtype or (cx is not None and cx.dtype is not x.dtype):
        return None         # (the per-layer op raises torch's error for mismatched states)
    inputs = (x, hx, cx, *weights)
    need = grad_mode._enabled and any(t is not None and t._requires_grad for t in inputs)
    lengths = None
    if batch_sizes is not None:     # row i runs the steps whose batch holds it
        lengths = (np.asarray(batch_sizes)[:, None] > np.arange(x.shape[1])).sum(0).tolist()
    result = fast(mode, x._data, hx._data, cx._data if cx is not None else None, [w._data for w in weights],
                  hidden_size=hidden_size, proj_size=proj_size, num_layers=num_layers,
                  bidirectional=bidirectional, dropout=dropout, training=training, seq_lengths=lengths,
                  need_backward=need, dropout_seed=default_generator(x.device).initial_seed())
    if result is None:
        return None
    y, hy, cy, ctx = result
    dtype, dev = x.dtype, x._device
    outs = [_wrap(y, dtype, dev), _wrap(hy, dtype, dev)] + ([_wrap(cy, dtype, dev)] if cy is not None else [])
    if need:
        node = CudnnRnnBackward0()
        node.ctx, node.backend, node.dtype, node.device = ctx, b, dtype, dev
        node.y_shape, node.n_weights = tuple(y.shape), len(weights)
        node.need_dweights = any(w._requires_grad for w in weights)
        record(node, inputs, outs[0])
        for i, o in enumerate(outs[1:], 1):
            o.grad_fn, o._output_nr, o._requires_grad = node, i, True
        node.n_outputs = len(outs)
    return outs[0], outs[1], outs[2] if cy is not None else None

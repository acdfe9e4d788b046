"""Recurrent layers (PyTorch's torch/nn/modules/rnn.py): RNN (tanh / relu), LSTM (with
proj_size) and GRU over whole sequences, and the single-step RNNCell, LSTMCell and GRUCell.
Parameter names, shapes, init, gate order (LSTM i, f, g, o; GRU r, z, n with b_hn inside
r * (...)) and the returned tuples are PyTorch's, so a torch state_dict loads as is.

Each layer and direction of a sequence layer is one F.linear over all steps (the input
projection) and one recorded op that runs the recurrence on buffers (ops/neural/recurrent.py), so a
sequence costs two graph nodes per layer and direction, not a dozen per step. The cells compose
Tensor ops (ops/neural/recurrent.py's lstm_cell, gru_cell, rnn_cell).

A PackedSequence input (nn.utils.rnn) runs as torch's: each sequence over its own length, h_n
(c_n) its state after its last step, the reverse direction starting at that step; output a
PackedSequence of the same batch sizes and indices. It is gathered once into its padded form
(L, N, H_in), sorted by decreasing length, and the recurrent op runs each step on the rows still
going (the batch sizes); the output is gathered back once. A given hx is in the caller's batch
order: torch permutes it by sorted_indices, and h_n (c_n) back by unsorted_indices."""
from __future__ import annotations

import math
import numbers
import warnings

from ...ops import cat, empty, stack, zeros
from ...ops.neural.recurrent import GATES, gru_cell, lstm_cell, recurrent_sequence, rnn_cell
from ...ops.neural.recurrent_stack import CudnnRnnBackward0, recurrent_stack
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ... import autocast_state
from ...autograd import rename
from ...ops.autocast_policy import run_as_one
from ..utils.packed_sequence import PackedSequence, pack_rows, unpack_rows

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _not_tuple(name, input, expected):
    """A tuple where a Tensor belongs (a hand-made (data, batch_sizes) pair, or a PackedSequence
    given to a cell, which runs one step) is refused by name (torch fails on input.dim())."""
    if isinstance(input, tuple):
        raise TypeError(f"{name}: expected input to be {expected}, got {type(input).__name__}")


# ---------------------------------------------------------------------------------------------
# whole-sequence layers
# ---------------------------------------------------------------------------------------------


def _uniform_init(module):
    """PyTorch's init of every recurrent weight and bias: U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for w in module.parameters():
        init.uniform_(w, -stdv, stdv)

class RNNBase(Module):
    """Base of RNN, LSTM and GRU (mode 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'): the weights of each
    layer and direction (weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, LSTM's
    weight_hr_l{k}), initialized U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)); as torch.nn.RNNBase.
    flatten_parameters() does nothing (there is no cuDNN weight buffer to compact)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability "
                             "of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero "
                          f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        kw = dict(device=device, dtype=dtype)
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else real_hidden * dirs
            for d in range(dirs):
                suffix = "_reverse" if d == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_in)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(*shape, **kw)))
                    names.append(name)
                self._flat_weights_names += names
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_init(self)

    def flatten_parameters(self):
        """PyTorch's cuDNN weight compaction; nothing to do here."""

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward pieces -------------------------------------------------------------------------

    def _check_input(self, input, packed=False):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                             f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        if packed and input.ndim != 2:          # a PackedSequence's data (sum(batch_sizes), H_in)
            raise RuntimeError(f"input must have 2 dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def _expected_hidden(self, batch, cell=False):
        size = self.hidden_size if (cell or self.proj_size == 0) else self.proj_size
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    @staticmethod
    def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    def _run(self, x, hx, cx=None, batch_sizes=None):
        """x (L, N, H_in); hx (D * num_layers, N, H_out), cx (D * num_layers, N, H) for an LSTM;
        batch_sizes: a packed batch's step sizes (x its padded form), or None.
        -> (output (L, N, D * H_out), h_n, c_n or None)."""
        if autocast_state.on:     # the layer stack is one autocast op, as torch's fused RNN kernels
            return run_as_one(self.mode.lower(), self._run_layers, x, hx, cx, self._flat_weights, batch_sizes)
        return self._run_layers(x, hx, cx, self._flat_weights, batch_sizes)

    def _run_layers(self, x, hx, cx, weights, batch_sizes=None):
        stacked = recurrent_stack(self.mode, x, hx, cx, weights, hidden_size=self.hidden_size,
                                  proj_size=self.proj_size, num_layers=self.num_layers,
                                  bidirectional=self.bidirectional, dropout=self.dropout,
                                  training=self.training, batch_sizes=batch_sizes)
        if stacked is not None:         # the backend's one call for the whole stack (cuDNN)
            return stacked
        dirs = 2 if self.bidirectional else 1
        weight = dict(zip(self._flat_weights_names, weights))
        lstm = self.mode == "LSTM"
        states = list(zip(hx.unbind(0), cx.unbind(0))) if lstm else list(hx.unbind(0))
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                names = self._all_weights[layer * dirs + d]
                ws = [weight[n] for n in names]
                w_ih, w_hh = ws[0], ws[1]
                b_ih, b_hh = (ws[2], ws[3]) if self.bias else (None, None)
                w_hr = ws[-1] if self.proj_size > 0 else None
                gi = F.linear(x, w_ih, b_ih)                    # (L, N, G): one GEMM for all steps
                h0, c0 = states[layer * dirs + d] if lstm else (states[layer * dirs + d], None)
                y, *final = recurrent_sequence(self.mode, gi, h0, c0, w_hh, b_hh, w_hr, reverse=d == 1,
                                               batch_sizes=batch_sizes)
                finals.append(final)
                outs.append(y)                                  # (L, N, H_out)
            x = outs[0] if dirs == 1 else cat(outs, -1)     # (L, N, D * H_out)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = stack([f[0] for f in finals], 0)
        return x, h_n, stack([f[1] for f in finals], 0) if lstm else None

    def _forward_packed(self, packed, hx):
        """A PackedSequence through the layers -> (PackedSequence, h_n or (h_n, c_n))."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        self._check_input(data, packed=True)
        sizes = tuple(batch_sizes.tolist())                 # (a CPU tensor: no device read)
        x = unpack_rows(data, sizes)                        # (L, N, H_in), sorted by length
        n, lstm = sizes[0], self.mode == "LSTM"
        if hx is None:
            h0 = zeros(self._expected_hidden(n), dtype=x.dtype, device=x.device)
            c0 = zeros(self._expected_hidden(n, cell=True), dtype=x.dtype, device=x.device) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            if sorted_indices is not None:                  # the caller's order -> the sorted one
                h0 = h0.index_select(1, sorted_indices)
                c0 = c0.index_select(1, sorted_indices) if lstm else None
        if lstm:
            self._check_hidden(h0, self._expected_hidden(n), "Expected hidden[0] size {}, got {}")
            self._check_hidden(c0, self._expected_hidden(n, cell=True), "Expected hidden[1] size {}, got {}")
        else:
            self._check_hidden(h0, self._expected_hidden(n))
        out, h_n, c_n = self._run(x, h0, c0, sizes)
        # torch's packed output is the cat of its steps' outputs (CatBackward0), or cuDNN's own
        # output where the whole stack ran as one call
        name = "CudnnRnnBackward0" if isinstance(out.grad_fn, CudnnRnnBackward0) else "CatBackward0"
        out = PackedSequence(rename(pack_rows(out, sizes), name), batch_sizes, sorted_indices, unsorted_indices)
        hidden = [h_n, c_n] if lstm else [h_n]
        if unsorted_indices is not None:
            hidden = [h.index_select(1, unsorted_indices) for h in hidden]
        return out, (tuple(hidden) if lstm else hidden[0])

    def _prepare(self, name, input, msg_suffix):
        """-> (input (L, N, H_in), batched). Unbatched (L, H_in) gains a batch dim of 1."""
        _not_tuple(name, input, "a Tensor or a PackedSequence (nn.utils.rnn.pack_padded_sequence makes one)")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D{msg_suffix}")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        self._check_input(input)
        if self.batch_first:
            input = input.transpose(0, 1)
        return input, batched

    def _finish(self, out, batched):
        if not batched:
            return out.squeeze(1)
        if not self.batch_first:
            return out
        # torch's RNN and GRU transpose in place (TransposeBackward1), its LSTM not
        return rename(out.transpose(0, 1), "TransposeBackward1" if self.mode != "LSTM" else "TransposeBackward0")


class _SimpleRNNBase(RNNBase):
    """RNN and GRU: one hidden tensor h (D * num_layers, N, H)."""
    _msg_suffix = " instead"

    def forward(self, input, hx=None):
        """input (L, N, H_in) ((N, L, H_in) with batch_first; (L, H_in) unbatched), hx
        (D * num_layers, N, H) or None -> (output (L, N, D * H), h_n (D * num_layers, N, H)).
        A PackedSequence input gives a PackedSequence output."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        x, batched = self._prepare(name, input, self._msg_suffix)
        n = x.shape[1]
        if hx is None:
            hx = zeros(self._expected_hidden(n), dtype=x.dtype, device=x.device)
        elif batched and hx.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.ndim}-D tensor")
        elif not batched:
            if hx.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.ndim}-D tensor")
            hx = hx.unsqueeze(1)
        self._check_hidden(hx, self._expected_hidden(n))
        out, h_n, _ = self._run(x, hx)
        return self._finish(out, batched), (h_n if batched else h_n.squeeze(1))


class RNN(_SimpleRNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""
    _msg_suffix = " tensor instead"

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity


class GRU(_SimpleRNNBase):
    """Gated recurrent unit, PyTorch's gate order r, z, n."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gate order i, f, g, o; with proj_size > 0 the hidden
    state is projected by weight_hr_l{k} (proj_size, hidden_size)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)

    def forward(self, input, hx=None):
        """input as RNN's; hx (h_0, c_0) or None -> (output (L, N, D * H_out), (h_n, c_n)),
        h (D * num_layers, N, H_out), c (D * num_layers, N, hidden_size). A PackedSequence input
        gives a PackedSequence output."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        x, batched = self._prepare("LSTM", input, " instead")
        n = x.shape[1]
        if hx is None:
            h0 = zeros(self._expected_hidden(n), dtype=x.dtype, device=x.device)
            c0 = zeros(self._expected_hidden(n, cell=True), dtype=x.dtype, device=x.device)
        else:
            h0, c0 = hx
            if batched and (h0.ndim != 3 or c0.ndim != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.ndim}-D, {c0.ndim}-D) tensors")
            if not batched:
                if h0.ndim != 2 or c0.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({h0.ndim}-D, {c0.ndim}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        self._check_hidden(h0, self._expected_hidden(n), "Expected hidden[0] size {}, got {}")
        self._check_hidden(c0, self._expected_hidden(n, cell=True), "Expected hidden[1] size {}, got {}")
        out, h_n, c_n = self._run(x, h0, c0)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(out, batched), (h_n, c_n)


# ---------------------------------------------------------------------------------------------
# single-step cells
# ---------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Base of RNNCell, LSTMCell and GRUCell: weight_ih, weight_hh and (bias) bias_ih, bias_hh for
    num_chunks gates, initialized U(-1/sqrt(hidden_size), 1/sqrt(hidden_size));
    as torch.nn.RNNCellBase."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = dict(device=device, dtype=dtype)
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_init(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _check(self, input, hxs):
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                               f"{self.input_size}")
        for i, h in enumerate(hxs):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} batch "
                                   f"size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, expected "
                                   f"{self.hidden_size}")

    def _single(self, name, input, hx):
        """The RNNCell / GRUCell preamble: -> (input (N, H_in), hx (N, H), batched)."""
        input, (hx,), batched = self._cell_inputs(name, input, None if hx is None else (hx,), 1)
        return input, hx, batched

    def _cell_inputs(self, name, input, states, n_states):
        """Every cell's preamble: input 1-D or 2-D, `states` (a tuple of n_states hidden tensors, or
        None for zeros) to match -> (input (N, H_in), states each (N, H), batched)."""
        _not_tuple(name, input, "a Tensor (N, H_in) or (H_in,): a cell runs one step, not a PackedSequence")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for i, state in enumerate(states or ()):
            if state.ndim not in (1, 2):
                what = "hidden" if n_states == 1 else f"hx[{i}]"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {state.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if states is None:
            z = zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            states = (z,) * n_states
        else:
            states = tuple(states) if batched else tuple(state.unsqueeze(0) for state in states)
        self._check(input, states)
        return input, states, batched


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """input (N, H_in) or (H_in,), hx (N, H) / (H,) or None -> h' like hx."""
        x, h, batched = self._single("RNNCell", input, hx)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        args = (x, h, self.weight_ih, self.bias_ih, self.weight_hh, self.bias_hh)
        step = _rnn_step_relu if self.nonlinearity == "relu" else _rnn_step_tanh
        out = (run_as_one(f"rnn_{self.nonlinearity}_cell", step, *args, policy_only=True)
               if autocast_state.on else step(*args))
        return out if batched else out.squeeze(0)


class GRUCell(RNNCellBase):
    """One GRU step, gate order r, z, n."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._single("GRUCell", input, hx)
        args = (x, h, self.weight_ih, self.bias_ih, self.weight_hh, self.bias_hh)
        out = (run_as_one("gru_cell", _gru_step, *args, policy_only=True) if autocast_state.on
               else _gru_step(*args))
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step, gate order i, f, g, o: (h, c) -> (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        """input (N, H_in) or (H_in,), hx (h, c) each (N, H) / (H,) or None -> (h', c')."""
        input, hx, batched = self._cell_inputs("LSTMCell", input, hx, 2)
        args = (input, hx, self.weight_ih, self.bias_ih, self.weight_hh, self.bias_hh)
        h, c = (run_as_one("lstm_cell", _lstm_step, *args, policy_only=True) if autocast_state.on
                else _lstm_step(*args))
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


# one cell step from the input: the input projection, then the cell (under autocast one op
# where the device has torch's fused cell, CUDA; op by op on the CPU)
def _lstm_step(x, hx, w_ih, b_ih, w_hh, b_hh):
    return lstm_cell(F.linear(x, w_ih, b_ih), hx, w_hh, b_hh)


def _gru_step(x, h, w_ih, b_ih, w_hh, b_hh):
    return gru_cell(F.linear(x, w_ih, b_ih), h, w_hh, b_hh)


def _rnn_step_tanh(x, h, w_ih, b_ih, w_hh, b_hh):
    return rnn_cell(F.linear(x, w_ih, b_ih), h, w_hh, b_hh, False)


def _rnn_step_relu(x, h, w_ih, b_ih, w_hh, b_hh):
    return rnn_cell(F.linear(x, w_ih, b_ih), h, w_hh, b_hh, True)

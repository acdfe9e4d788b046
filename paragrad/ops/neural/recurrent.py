"""The recurrent sequence op behind nn.RNN, nn.LSTM and nn.GRU: one layer and one direction over
a whole sequence as ONE recorded node (`recurrent_sequence`). Its forward loops over time on
backend buffers; its backward runs backpropagation through time on buffers, in reverse, and
ends with one GEMM over all steps for each recurrent weight's gradient
(dW_hh = dG^T @ H_prev over (L * N) rows).

Why one node: composed of Tensor ops, every step recorded about twelve graph nodes (linear,
chunk, sigmoid, tanh, mul, add), and that per-op host cost, not the arithmetic, set the step time
of a small LSTM (thousands of ops per training step). The arithmetic here is the same.

The input projection is not part of the node: gi = x W_ih^T + b_ih for all steps is one
F.linear before it, so its gradient flows through LinearBackward. Gate order is torch's: LSTM
i, f, g, o; GRU r, z, n with b_hn inside r * (W_hn h + b_hn); RNN one gate, tanh or relu.
Single-step cells (nn.LSTMCell, ...) use the Tensor-op forms `lstm_cell`, `gru_cell`,
`rnn_cell` below, which double backward (create_graph) also differentiates.

Packed batches (nn.utils.rnn.PackedSequence): with `batch_sizes`, gi is the padded form of a
batch sorted by decreasing length, so step t's valid rows are exactly its first batch_sizes[t]
rows. Each step then runs on those rows alone (views of the first rows of the step buffers,
C-contiguous, so the fast paths below take them unchanged with a smaller N); a row past its
sequence's end keeps its state, its output there is zero, and the reverse direction starts each
row from h0 (c0) at that row's own last step.

Fast paths: fused per-step gate kernels, optional, looked up with backend.fast(name) (so
`fast_paths(False)` turns them off). Every buffer is C-contiguous, of one float dtype, on one
device; N is the batch, H the hidden size. A kernel writes its results into the output buffers
it is given and returns True, or returns False having written nothing, to decline (the op then
composes primitives; a dtype the kernel lacks, say).

  fast_lstm_cell_forward(gi, hh, c_prev, act, c, tanh_c, h) -> bool
      gi (N, 4H): x W_ih^T + b_ih + b_hh of this step; hh (N, 4H): h_prev W_hh^T, scratch (may
      be overwritten); c_prev (N, H). Writes act (N, 4H) = [sigmoid(i), sigmoid(f), tanh(g),
      sigmoid(o)] of the pre-activations gi + hh; c (N, H) = f * c_prev + i * g;
      tanh_c (N, H) = tanh(c); h (N, H) = o * tanh_c (before any projection). c may be the
      same buffer as c_prev (the no-grad forward updates it in place).
  fast_lstm_cell_backward(dh, dc, act, c_prev, tanh_c, dgates, dc_prev) -> bool
      dh (N, H): gradient w.r.t. this step's h = o * tanh_c (after the projection's backward);
      dc (N, H): gradient w.r.t. this step's c from the later steps (c_n's at the last one);
      act, c_prev, tanh_c as the forward wrote them. Writes dgates (N, 4H): gradient w.r.t. the
      pre-activations gi + hh (i, f, g, o); dc_prev (N, H) = dc_t * f, where
      dc_t = dc + dh * o * (1 - tanh_c^2). dc_prev may be the same buffer as dc.
  fast_gru_cell_forward(gi, hh, b_hn, h_prev, act, ghn, h) -> bool
      gi (N, 3H): x W_ih^T + b_ih + (b_hr, b_hz, 0) of this step; hh (N, 3H): h_prev W_hh^T
      without bias, scratch; b_hn (H,) or None; h_prev (N, H). Writes act (N, 3H) = [r, z, n],
      r = sigmoid(gi_r + hh_r), z = sigmoid(gi_z + hh_z), n = tanh(gi_n + r * ghn);
      ghn (N, H) = hh_n + b_hn; h (N, H) = (1 - z) * n + z * h_prev.
  fast_gru_cell_backward(dh, h_prev, act, ghn, dgi, dgh, dh_prev) -> bool
      dh (N, H): gradient w.r.t. this step's h. Writes dgi (N, 3H): gradient w.r.t. gi (the r,
      z, n pre-activations, input side); dgh (N, 3H): gradient w.r.t. hh + b_hh (dgi's for r
      and z, dgi_n * r for n); dh_prev (N, H) = dh * z, the direct path only (the op adds
      dgh @ W_hh).
  fast_rnn_cell_forward(gi, hh, h, nonlinearity) -> bool
      h (N, H) = nonlinearity(gi + hh), nonlinearity 'tanh' or 'relu'; gi includes b_hh; hh
      scratch.
  fast_rnn_cell_backward(dh, h, dpre, nonlinearity) -> bool
      dpre (N, H) = dh * (1 - h^2) for tanh, dh where h > 0 else 0 for relu (h the output).
"""
from __future__ import annotations

from ... import autograd
from ...autograd import Node, needs_grad, node_class, record
from ...tensor import _wrap
from .._common import buffer_view, same_device, snapshot
from .linear import linear
from ..creation import zeros
from ..movement.copies import cat, stack

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---- one step as Tensor ops: the cells, and the composite that double backward differentiates

def rnn_cell(gi, h, w_hh, b_hh, relu):
    """gi (N, H) = x W_ih^T + b_ih; h (N, H) -> h' (N, H)."""
    pre = gi + linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def lstm_cell(gi, state, w_hh, b_hh, w_hr=None):
    """gi (N, 4H); state (h (N, H_out), c (N, H)) -> (h', c')."""
    h, c = state
    i, f, g, o = (gi + linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:            # projection: h (N, proj_size)
        h = linear(h, w_hr)
    return h, c


def gru_cell(gi, h, w_hh, b_hh):
    """gi (N, 3H); h (N, H) -> h' (N, H)."""
    # b_hn stays inside r * (...): n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    gh = linear(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def _compose(mode, gi, h0, c0, w_hh, b_hh, w_hr, reverse, batch_sizes=None):
    """recurrent_sequence's outputs from the Tensor-op cells (recorded, so differentiable)."""
    gis = gi.unbind(0)
    lstm, n_all = mode == "LSTM", h0.shape[0]
    state = (h0, c0) if lstm else (h0,)

    def cell(gi_t, state):
        if lstm:
            return lstm_cell(gi_t, state, w_hh, b_hh, w_hr)
        if mode == "GRU":
            return (gru_cell(gi_t, state[0], w_hh, b_hh),)
        return (rnn_cell(gi_t, state[0], w_hh, b_hh, mode == "RNN_RELU"),)

    ys = [None] * len(gis)
    for t in (range(len(gis) - 1, -1, -1) if reverse else range(len(gis))):
        n = n_all if batch_sizes is None else batch_sizes[t]
        if n == n_all:
            state = cell(gis[t], state)
            ys[t] = state[0]
            continue
        # a packed step: its first n rows run, the others keep their state (finished rows their
        # last one, rows not yet started in reverse their h0) and output zeros
        new = cell(gis[t][:n], tuple(s[:n] for s in state))
        state = tuple(cat([a, s[n:]], 0) for a, s in zip(new, state))
        ys[t] = cat([new[0], zeros((n_all - n, new[0].shape[1]), dtype=gi.dtype, device=gi.device)], 0)
    return (stack(ys, 0), *state)


# ---- buffer views --------------------------------------------------------------------------------

def _row(b, x, i, n=None):
    """x[i] of a stacked buffer (S, N, ...), or its first n rows x[i, :n] (a packed step's),
    a view (the backend's own indexing where it has it: this runs several times per time step)."""
    v = buffer_view(b, x, i if n is None else (i, slice(0, n)))
    if v is not None:
        return v
    s = x.shape
    k = len(s)
    stop = (i + 1,) + s[1:] if n is None else (i + 1, n) + s[2:]
    return b.reshape(b.slice(x, (i,) + (0,) * (k - 1), stop, (1,) * k), stop[1:])


def _rows(b, x, a, e):
    """x[a:e] of an (N, ...) buffer, a view; None stays None. The first rows of a C-contiguous
    buffer are C-contiguous, as the fast paths need."""
    if x is None:
        return None
    v = buffer_view(b, x, slice(a, e))
    if v is not None:
        return v
    k = x.ndim
    return b.slice(x, (a,) + (0,) * (k - 1), (e,) + tuple(x.shape[1:]), (1,) * k)


def _ends(batch_sizes):
    """(t, lo, hi) for each step t at which sequences end: rows lo..hi-1 of a packed batch
    (sorted by decreasing length) are those of length t + 1."""
    after = tuple(batch_sizes[1:]) + (0,)
    return [(t, a, n) for t, (n, a) in enumerate(zip(batch_sizes, after)) if n > a]


def _cols(b, x, k):
    """(N, k*H) -> k views (N, H): the gates of one step."""
    n, w = x.shape
    h = w // k
    return [b.slice(x, (0, j * h), (n, (j + 1) * h), (1, 1)) for j in range(k)]


def _span(b, x, a, e):
    """x[:, a:e] of an (N, W) buffer."""
    return b.slice(x, (0, a), (x.shape[0], e), (1, 1))


# ---- per-step gate math on buffers: the fast-path seam ------------------------------------------

def lstm_gates_forward(b, gi, hh, c_prev, act, c, tanh_c, h):
    """One LSTM step's elementwise part (see fast_lstm_cell_forward in the module docstring)."""
    fast = b.fast("lstm_cell_forward")
    if fast is not None and fast(gi, hh, c_prev, act, c, tanh_c, h):
        return
    hdim = c.shape[1]
    i, f, g, o = _cols(b, act, 4)
    b.binary("add", hh, gi, out=hh)                       # (N, 4H) pre-activations
    # one sigmoid call over all four gates costs less than three calls; g's is then replaced
    b.unary("sigmoid", hh, out=act)
    b.unary("tanh", _span(b, hh, 2 * hdim, 3 * hdim), out=g)
    ig = b.binary("mul", i, g)
    b.binary("mul", f, c_prev, out=c)                     # (c may be c_prev: elementwise)
    b.binary("add", c, ig, out=c)
    b.unary("tanh", c, out=tanh_c)
    b.binary("mul", o, tanh_c, out=h)


def lstm_gates_backward(b, dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
    """One LSTM step's gradient through its gates (see fast_lstm_cell_backward)."""
    fast = b.fast("lstm_cell_backward")
    if fast is not None and fast(dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
        return
    mul, sub = "mul", "sub"
    i, f, g, o = _cols(b, act, 4)
    di, df, dg, do = _cols(b, dgates, 4)
    # dc_t = dc + dh * o * (1 - tanh_c^2): c reaches h through tanh as well as the next step
    t = b.binary(mul, dh, o)
    u = b.binary(mul, tanh_c, tanh_c)
    b.binary(mul, u, t, out=u)
    b.binary(sub, t, u, out=t)
    b.binary("add", dc, t, out=dc_prev)                   # dc_t, kept in dc_prev until the end
    # gradients w.r.t. the activations: i -> dc_t g, f -> dc_t c_prev, g -> dc_t i, o -> dh tanh_c
    b.binary(mul, dc_prev, g, out=di)
    b.binary(mul, dc_prev, c_prev, out=df)
    b.binary(mul, dc_prev, i, out=dg)
    b.binary(mul, dh, tanh_c, out=do)
    # through the nonlinearities: sigmoid' = s - s^2 (i, f, o), tanh' = 1 - g^2 (g)
    h = i.shape[1]
    d = b.binary(mul, act, act)
    b.binary(sub, act, d, out=d)                          # (N, 4H); its g part is unused
    dif = _span(b, dgates, 0, 2 * h)
    b.binary(mul, dif, _span(b, d, 0, 2 * h), out=dif)
    b.binary(mul, do, _span(b, d, 3 * h, 4 * h), out=do)
    v = b.binary(mul, g, g)
    b.binary(mul, v, dg, out=v)
    b.binary(sub, dg, v, out=dg)
    b.binary(mul, dc_prev, f, out=dc_prev)


def gru_gates_forward(b, gi, hh, b_hn, h_prev, act, ghn, h):
    """One GRU step's elementwise part (see fast_gru_cell_forward)."""
    fast = b.fast("gru_cell_forward")
    if fast is not None and fast(gi, hh, b_hn, h_prev, act, ghn, h):
        return
    hdim = h.shape[1]
    r, z, n = _cols(b, act, 3)
    hh_rz, hh_n = _span(b, hh, 0, 2 * hdim), _span(b, hh, 2 * hdim, 3 * hdim)
    b.binary("add", hh_rz, _span(b, gi, 0, 2 * hdim), out=hh_rz)
    b.unary("sigmoid", hh_rz, out=_span(b, act, 0, 2 * hdim))       # r and z in one call
    if b_hn is not None:
        b.binary("add", hh_n, b_hn, out=ghn)
    else:
        b.copy_(ghn, hh_n)
    b.binary("mul", r, ghn, out=hh_n)
    b.binary("add", hh_n, _span(b, gi, 2 * hdim, 3 * hdim), out=n)
    b.unary("tanh", n, out=n)
    b.binary("sub", h_prev, n, out=h)                     # h = n + z * (h_prev - n)
    b.binary("mul", h, z, out=h)
    b.binary("add", h, n, out=h)


def gru_gates_backward(b, dh, h_prev, act, ghn, dgi, dgh, dh_prev):
    """One GRU step's gradient through its gates (see fast_gru_cell_backward)."""
    fast = b.fast("gru_cell_backward")
    if fast is not None and fast(dh, h_prev, act, ghn, dgi, dgh, dh_prev):
        return
    mul, sub = "mul", "sub"
    hdim = dh.shape[1]
    r, z, n = _cols(b, act, 3)
    dr, dz, dn = _cols(b, dgi, 3)
    # z: dh * (h_prev - n) * z (1 - z)
    b.binary(sub, h_prev, n, out=dz)
    b.binary(mul, dz, dh, out=dz)
    s = b.binary(mul, z, z)
    b.binary(sub, z, s, out=s)
    b.binary(mul, dz, s, out=dz)
    # n: dh * (1 - z) * (1 - n^2)
    b.binary(mul, dh, z, out=dh_prev)                     # the direct path h_prev -> h
    b.binary(sub, dh, dh_prev, out=dn)
    s = b.binary(mul, n, n)
    b.binary(mul, s, dn, out=s)
    b.binary(sub, dn, s, out=dn)
    # r: dn_pre * (W_hn h + b_hn) * r (1 - r)
    b.binary(mul, dn, ghn, out=dr)
    s = b.binary(mul, r, r)
    b.binary(sub, r, s, out=s)
    b.binary(mul, dr, s, out=dr)
    # the hidden side: r and z as the input side; n scaled by r (it sits inside r * (...))
    b.binary(mul, dn, r, out=_span(b, dgh, 2 * hdim, 3 * hdim))
    b.copy_(_span(b, dgh, 0, 2 * hdim), _span(b, dgi, 0, 2 * hdim))


def rnn_gates_forward(b, gi, hh, h, nonlinearity):
    """One Elman step's elementwise part (see fast_rnn_cell_forward)."""
    fast = b.fast("rnn_cell_forward")
    if fast is not None and fast(gi, hh, h, nonlinearity):
        return
    b.binary("add", hh, gi, out=hh)
    b.unary(nonlinearity, hh, out=h)


def rnn_gates_backward(b, dh, h, dpre, nonlinearity):
    """One Elman step's gradient through its nonlinearity (see fast_rnn_cell_backward)."""
    fast = b.fast("rnn_cell_backward")
    if fast is not None and fast(dh, h, dpre, nonlinearity):
        return
    if nonlinearity == "relu":       # h >= 0, so sign(h) is relu's derivative (0 at 0, as torch)
        b.binary("mul", dh, b.unary("sign", h), out=dpre)
        return
    s = b.binary("mul", h, h)
    b.binary("mul", s, dh, out=s)
    b.binary("sub", dh, s, out=dpre)


# ---- the node ------------------------------------------------------------------------------------

class RecurrentSequenceBackward(Node):
    """saved: gi, h0, c0, w_hh, b_hh, w_hr (Tensors or None; for version checks and double
    backward). Buffers from the forward: hs (L+1, N, H_out), every h in time order with h0 at
    one end; LSTM act (L, N, 4H), c (L+1, N, H) likewise, tanh_c (L, N, H), m (L, N, H) the h
    before the projection (or None); GRU act (L, N, 3H), ghn (L, N, H). batch_sizes: the
    packed batch's step sizes, or None."""

    def backward(self, g_out, g_hn, g_cn=None):
        if autograd.is_grad_enabled():
            return self._differentiable(g_out, g_hn, g_cn)
        gi, h0, c0, w_hh, b_hh, w_hr = self.saved
        b, dtype, dev = gi._backend, gi.dtype, gi._device
        L, N, G = gi.shape
        P, H, r = h0.shape[-1], self.hidden, int(self.reverse)
        lstm, gru = self.mode == "LSTM", self.mode == "GRU"
        hs, sizes = self.hs, self.batch_sizes

        def empty(*shape):
            return b.empty(shape, dtype, dev.index)

        def zero_filled(*shape):
            return b.full(shape, 0, dtype, dev.index)

        def start(g, shape):         # a writable copy of an incoming gradient, or zeros
            return zero_filled(*shape) if g is None else b.copy_(empty(*shape), g._data)

        # a packed batch leaves rows past their length out of every step: zero there, the
        # weight-gradient GEMMs below may run over all L * N rows
        per_step = empty if sizes is None else zero_filled
        dG = per_step(L, N, G)                     # w.r.t. gi: every step's pre-activations
        dGh = per_step(L, N, G) if gru else dG     # w.r.t. h_prev W_hh^T + b_hh (GRU: n differs)
        # w.r.t. the h the step after this one read; in a packed batch a row's entry holds its
        # g_hn until the row's last step is reached (forward direction), and ends as dh0
        dh_rec = start(g_hn, (N, P))
        dh = empty(N, P)
        dc = start(g_cn, (N, H)) if lstm else None
        dHo = per_step(L, N, P) if w_hr is not None else None  # w.r.t. each projected h
        dm = empty(N, H) if w_hr is not None else None
        dd = empty(N, P) if gru else None
        go, w = (g_out._data if g_out is not None else None), w_hh._data           # w (G, P)
        for t in (range(L) if r else range(L - 1, -1, -1)):
            n = None if sizes is None or sizes[t] == N else sizes[t]  # a packed step: first n rows
            rec, dh_s, dc_t, dm_t, dd_t = (dh_rec, dh, dc, dm, dd) if n is None else (
                _rows(b, x, 0, n) for x in (dh_rec, dh, dc, dm, dd))
            dh_t = _row(b, dHo, t, n) if dHo is not None else (dh_s if go is not None else rec)
            if go is not None:
                b.binary("add", rec, _row(b, go, t, n), out=dh_t)
            elif dh_t is not rec:
                b.copy_(dh_t, rec)
            dg_t = _row(b, dG, t, n)
            if lstm:
                if w_hr is not None:
                    dh_t = b.matmul(dh_t, w_hr._data, out=dm_t)                 # (N, H)
                lstm_gates_backward(b, dh_t, dc_t, _row(b, self.act, t, n), _row(b, self.c, t + r, n),
                                    _row(b, self.tanh_c, t, n), dg_t, dc_t)
                b.matmul(dg_t, w, out=rec)
            elif gru:
                dgh_t = _row(b, dGh, t, n)
                gru_gates_backward(b, dh_t, _row(b, hs, t + r, n), _row(b, self.act, t, n),
                                   _row(b, self.ghn, t, n), dg_t, dgh_t, dd_t)
                b.matmul(dgh_t, w, out=rec)
                b.binary("add", rec, dd_t, out=rec)
            else:
                rnn_gates_backward(b, dh_t, _row(b, hs, t + 1 - r, n), dg_t, self.nonlinearity)
                b.matmul(dg_t, w, out=rec)

        # every weight gradient: one GEMM over all L * N rows
        need = [e is not None for e in self.next_edges]
        flat_t = lambda x, k: b.permute(b.reshape(x, (L * N, k)), (1, 0))       # noqa: E731
        dw = dwr = db = None
        if need[3]:
            h_prev = b.slice(hs, (r, 0, 0), (L + r, N, P), (1, 1, 1))          # (L, N, P)
            dw = b.matmul(flat_t(dGh, G), b.reshape(h_prev, (L * N, P)))      # (G, P)
        if need[4]:
            db = b.reduce("sum", dGh, (0, 1), False)                          # (G,)
        if need[5]:
            dwr = b.matmul(flat_t(dHo, P), b.reshape(self.m, (L * N, H)))     # (P, H)
        grads = (dG, dh_rec, dc, dw, db, dwr)
        return tuple(_wrap(d, dtype, dev) if n and d is not None else None for d, n in zip(grads, need))

    def _differentiable(self, g_out, g_hn, g_cn):
        """create_graph: the gradients of the Tensor-op composite, themselves differentiable."""
        ins = self.saved
        outs = _compose(self.mode, *ins, self.reverse, self.batch_sizes)
        pairs = [(o, g) for o, g in zip(outs, (g_out, g_hn, g_cn)) if g is not None]
        want = [t for t, e in zip(ins, self.next_edges) if e is not None]
        got = iter(autograd.grad([o for o, _ in pairs], want, [g for _, g in pairs],
                                 create_graph=True, allow_unused=True))
        return tuple(next(got) if e is not None else None for e in self.next_edges)


# torch's names for a layer's output: its CPU nn.LSTM runs one oneDNN layer op for float32 and
# bfloat16 without a projection; every other RNN, GRU and LSTM stacks its steps' outputs
_MKLDNN = node_class(RecurrentSequenceBackward, "MkldnnRnnLayerBackward0")
_STACK = node_class(RecurrentSequenceBackward, "StackBackward0")


# ---- the op --------------------------------------------------------------------------------------

def _check(mode, gi, h0, c0, w_hh, b_hh, w_hr):
    same_device("recurrent_sequence", gi, h0, c0, w_hh, b_hh, w_hr)
    for name, t in (("hidden", h0), ("cell", c0), ("weight_hh", w_hh), ("bias_hh", b_hh),
                    ("weight_hr", w_hr)):
        if t is not None and t.dtype is not gi.dtype:
            raise RuntimeError(f"{mode}: input and {name} tensors are not the same dtype, found "
                               f"input tensor with {gi.dtype} and {name} tensor with {t.dtype}")
    G, p = gi.shape[-1], h0.shape[-1]
    if gi.ndim != 3 or tuple(w_hh.shape) != (G, p) or tuple(h0.shape) != (gi.shape[1], p) or (
            mode == "LSTM" and tuple(c0.shape) != (gi.shape[1], G // 4)):
        raise RuntimeError(f"{mode}: shapes don't fit one recurrent layer: gi {tuple(gi.shape)} "
                           f"(L, N, G), h0 {tuple(h0.shape)} (N, H_out), w_hh {tuple(w_hh.shape)} "
                           f"(G, H_out)" + (f", c0 {tuple(c0.shape)} (N, G/4)" if c0 is not None else ""))


def _check_batch_sizes(batch_sizes, L, N):
    """A packed batch's step sizes as a tuple of ints (None stays None)."""
    if batch_sizes is None:
        return None
    sizes = tuple(int(n) for n in batch_sizes)
    if (len(sizes) != L or not sizes or sizes[0] != N or sizes[-1] < 1
            or any(a < b for a, b in zip(sizes, sizes[1:]))):
        raise RuntimeError(f"recurrent_sequence: batch_sizes {list(sizes)} don't describe a packed batch "
                           f"of gi's {L} steps and {N} rows: one size per step, the first {N}, "
                           f"non-increasing, each at least 1")
    return sizes


def recurrent_sequence(mode, gi, h0, c0, w_hh, b_hh=None, w_hr=None, reverse=False, batch_sizes=None):
    """One recurrent layer in one direction over a whole sequence, as one recorded op.

    mode 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU'; gi (L, N, G) = x W_ih^T + b_ih for all steps
    (G = gates * H); h0 (N, H_out); c0 (N, H) for LSTM, else None; w_hh (G, H_out); b_hh (G,)
    or None; w_hr (H_out, H) the LSTM projection or None (then H_out = H); reverse runs from
    the last step to the first. -> (out (L, N, H_out), h_n (N, H_out)) and, for LSTM,
    c_n (N, H).

    batch_sizes (L ints, non-increasing, the first N) makes gi a padded packed batch: step t
    runs on its first batch_sizes[t] rows only; rows past that are ignored in gi and zero in
    out; h_n (c_n) is each row's state after its own last step, and in reverse each row starts
    from h0 (c0) at its own last step."""
    _check(mode, gi, h0, c0, w_hh, b_hh, w_hr)
    b, dtype, dev = gi._backend, gi.dtype, gi._device
    L, N, G = gi.shape
    sizes = _check_batch_sizes(batch_sizes, L, N)
    H, P, r = G // GATES[mode], h0.shape[-1], int(reverse)
    lstm, gru = mode == "LSTM", mode == "GRU"
    save = needs_grad(gi, h0, c0, w_hh, b_hh, w_hr)
    S = L if save else 1            # steps kept: all for the backward, else one reused buffer

    def empty(*shape):
        return b.empty(shape, dtype, dev.index)

    def zero_filled(*shape):
        return b.full(shape, 0, dtype, dev.index)

    # a packed batch leaves rows out of steps: buffers that are output or that the backward's
    # GEMMs read over all L * N rows start at zero there
    whole = empty if sizes is None else zero_filled
    src, b_hn = b.contiguous(gi._data), None
    if b_hh is not None:            # b_hh joins every step's gi at once (GRU: all but b_hn)
        bias = b_hh._data
        if gru:
            b_hn = b.slice(bias, (2 * H,), (3 * H,), (1,))
            bias = b.concat([b.slice(bias, (0,), (2 * H,), (1,)), b.full((H,), 0, dtype, dev.index)], 0)
        src = b.binary("add", src, bias)                               # (L, N, G)
    w_t = b.contiguous(b.permute(w_hh._data, (1, 0)))                  # (H_out, G): GEMMs faster
    hs = whole(L + 1, N, P)         # time order; h0 at slot 0 (forward) or L (reverse)
    b.copy_(_row(b, hs, L * r), h0._data)
    hh = empty(N, G)
    act = empty(S, N, G) if (lstm or gru) else None
    if lstm:
        c = empty(L + 1, N, H) if save else empty(1, N, H)
        b.copy_(_row(b, c, L * r if save else 0), c0._data)
        tanh_c = empty(S, N, H)
        m = (whole if save else empty)(S, N, H) if w_hr is not None else None
        hr_t = b.contiguous(b.permute(w_hr._data, (1, 0))) if w_hr is not None else None   # (H, P)
    elif gru:
        ghn = empty(S, N, H)
    ends = _ends(sizes) if sizes is not None else ()
    for t, lo, hi in ends if reverse else ():
        if t < L - 1:   # a row starts at its own last step t: its h0 (c0) goes where t reads it
            b.copy_(_rows(b, _row(b, hs, t + 1), lo, hi), _rows(b, h0._data, lo, hi))
            if lstm and save:   # (unsaved, c is one buffer where untouched rows keep c0)
                b.copy_(_rows(b, _row(b, c, t + 1), lo, hi), _rows(b, c0._data, lo, hi))
    nonlinearity = "relu" if mode == "RNN_RELU" else "tanh"
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        k = t if save else 0
        n = None if sizes is None or sizes[t] == N else sizes[t]      # a packed step: first n rows
        h_prev, h_new = _row(b, hs, t + r, n), _row(b, hs, t + 1 - r, n)
        hh_t = hh if n is None else _rows(b, hh, 0, n)
        b.matmul(h_prev, w_t, out=hh_t)                                # (N, G)
        gi_t = _row(b, src, t, n)
        if lstm:
            c_prev, c_new = (_row(b, c, t + r, n), _row(b, c, t + 1 - r, n)) if save else (_row(b, c, 0, n),) * 2
            h_cell = _row(b, m, k, n) if w_hr is not None else h_new
            lstm_gates_forward(b, gi_t, hh_t, c_prev, _row(b, act, k, n), c_new, _row(b, tanh_c, k, n), h_cell)
            if w_hr is not None:
                b.matmul(h_cell, hr_t, out=h_new)                      # (N, P)
        elif gru:
            gru_gates_forward(b, gi_t, hh_t, b_hn, h_prev, _row(b, act, k, n), _row(b, ghn, k, n), h_new)
        else:
            rnn_gates_forward(b, gi_t, hh_t, h_new, nonlinearity)

    out = b.slice(hs, (1 - r, 0, 0), (L + 1 - r, N, P), (1, 1, 1))                # (L, N, P)
    # outputs of their own memory, so an in-place write to one can't reach another or the
    # buffers the backward reads (torch's CPU LSTM allows such writes); out may view hs when
    # nothing will read hs again
    if ends and not reverse:        # each row's final state is at its own last step
        finals = [_gather_ends(b, ends, hs, empty(N, P))]
        if lstm:
            finals.append(_gather_ends(b, ends, c, empty(N, H)) if save else b.copy_(empty(N, H), _row(b, c, 0)))
    else:
        finals = [_row(b, hs, L * (1 - r))] + ([_row(b, c, L * (1 - r) if save else 0)] if lstm else [])
        finals = [b.copy_(empty(*x.shape), x) for x in finals]
    if save:
        out = b.copy_(empty(L, N, P), out)
    if ends and reverse:            # the h0 rows placed in hs above are no output
        zero = zero_filled(1, P)
        for t, lo, hi in ends:
            if t < L - 1:
                b.copy_(_rows(b, _row(b, out, t + 1), lo, hi), zero)
    outs = [_wrap(x, dtype, dev) for x in [out] + finals]
    if save:
        node = _MKLDNN() if lstm and w_hr is None and dtype.name in ("float32", "bfloat16") else _STACK()
        node.mode, node.reverse, node.hidden, node.nonlinearity = mode, reverse, H, nonlinearity
        node.batch_sizes = sizes
        node.n_outputs = len(outs)
        node.saved = tuple(snapshot(t) if t is not None else None
                           for t in (gi, h0, c0, w_hh, b_hh, w_hr))
        node.hs = hs
        if lstm:
            node.act, node.c, node.tanh_c, node.m = act, c, tanh_c, m
        elif gru:
            node.act, node.ghn = act, ghn
        record(node, (gi, h0, c0, w_hh, b_hh, w_hr), outs[0])
        for i, o in enumerate(outs[1:], 1):
            o.grad_fn, o._output_nr, o._requires_grad = node, i, True
    return tuple(outs)


def _gather_ends(b, ends, states, dst):
    """dst (N, W) <- each row's state after its own last step t: states (L+1, N, W) in time
    order, step t's at t + 1 (the forward direction)."""
    for t, lo, hi in ends:
        b.copy_(_rows(b, dst, lo, hi), _rows(b, _row(b, states, t + 1), lo, hi))
    return dst

"""One recurrent step's gate arithmetic on NumPy arrays: the CPU backend's lstm_cell and
gru_cell fast paths (RecurrentCells, which CPUBackend takes in; their arguments in
ops/neural/recurrent.py's docstring). The same formulas, in the same order, as the
composition there (recurrent.py's lstm_gates_* and gru_gates_*), written as direct NumPy
calls into the given buffers: a small layer's step is a few dozen of these, and the backend
call around each one (dispatch, error state, views of the gate columns) cost more than its
arithmetic (mnist_rnn's 64 x 64 LSTM: 28 steps a batch each way).
"""
from __future__ import annotations

import numpy as np

from .quiet_numpy import quiet

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _times_sigmoid_slope(d, s):
    """d *= s - s^2: through a sigmoid, from its output s."""
    slope = s * s
    np.subtract(s, slope, out=slope)
    d *= slope


def _times_tanh_slope(d, t):
    """d -= d * t^2 (d * (1 - t^2)): through a tanh, from its output t."""
    v = t * t
    v *= d
    d -= v


def _gates(x, k):
    h = x.shape[1] // k
    return [x[:, j * h:(j + 1) * h] for j in range(k)]


class RecurrentCells:
    """The four cell fast paths, as CPUBackend's methods."""

    @quiet
    def fast_lstm_cell_forward(self, gi, hh, c_prev, act, c, tanh_c, h):
        if gi.dtype not in _DTYPES:
            return False
        hdim = c.shape[1]
        i, f, g, o = _gates(act, 4)
        hh += gi                                            # (N, 4H) pre-activations
        self.unary("sigmoid", hh, out=act)
        np.tanh(hh[:, 2 * hdim:3 * hdim], out=g)
        ig = i * g
        np.multiply(f, c_prev, out=c)                       # (c may be c_prev: elementwise)
        c += ig
        np.tanh(c, out=tanh_c)
        np.multiply(o, tanh_c, out=h)
        return True

    @quiet
    def fast_lstm_cell_backward(self, dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
        if dh.dtype not in _DTYPES:
            return False
        i, f, g, o = _gates(act, 4)
        di, df, dg, do = _gates(dgates, 4)
        t = dh * o                                          # dc_t = dc + dh * o * (1 - tanh_c^2)
        u = tanh_c * tanh_c
        u *= t
        t -= u
        np.add(dc, t, out=dc_prev)
        np.multiply(dc_prev, g, out=di)
        np.multiply(dc_prev, c_prev, out=df)
        np.multiply(dc_prev, i, out=dg)
        np.multiply(dh, tanh_c, out=do)
        hdim = i.shape[1]
        _times_sigmoid_slope(dgates[:, :2 * hdim], act[:, :2 * hdim])     # i and f
        _times_sigmoid_slope(do, o)
        _times_tanh_slope(dg, g)
        dc_prev *= f
        return True

    @quiet
    def fast_gru_cell_forward(self, gi, hh, b_hn, h_prev, act, ghn, h):
        if gi.dtype not in _DTYPES:
            return False
        hdim = h.shape[1]
        r, z, n = _gates(act, 3)
        hh_rz, hh_n = hh[:, :2 * hdim], hh[:, 2 * hdim:]
        hh_rz += gi[:, :2 * hdim]
        self.unary("sigmoid", hh_rz, out=act[:, :2 * hdim])   # r and z
        if b_hn is not None:
            np.add(hh_n, b_hn, out=ghn)
        else:
            np.copyto(ghn, hh_n)
        np.multiply(r, ghn, out=hh_n)
        np.add(hh_n, gi[:, 2 * hdim:], out=n)
        np.tanh(n, out=n)
        np.subtract(h_prev, n, out=h)                       # h = n + z * (h_prev - n)
        h *= z
        h += n
        return True

    @quiet
    def fast_gru_cell_backward(self, dh, h_prev, act, ghn, dgi, dgh, dh_prev):
        if dh.dtype not in _DTYPES:
            return False
        hdim = dh.shape[1]
        r, z, n = _gates(act, 3)
        dr, dz, dn = _gates(dgi, 3)
        np.subtract(h_prev, n, out=dz)                      # z: dh * (h_prev - n) * z (1 - z)
        dz *= dh
        _times_sigmoid_slope(dz, z)
        np.multiply(dh, z, out=dh_prev)                     # the direct path h_prev -> h
        np.subtract(dh, dh_prev, out=dn)                    # n: dh * (1 - z) * (1 - n^2)
        _times_tanh_slope(dn, n)
        np.multiply(dn, ghn, out=dr)                        # r: dn_pre * (W_hn h + b_hn) * r (1 - r)
        _times_sigmoid_slope(dr, r)
        np.multiply(dn, r, out=dgh[:, 2 * hdim:])
        np.copyto(dgh[:, :2 * hdim], dgi[:, :2 * hdim])
        return True

"""The per-step gate kernels of the recurrent sequence op (kernels/recurrent.cu): one launch
for what composes to 10-25 elementwise calls a step. Arguments and results are those of the
fast-path seam in paragrad/ops/neural/recurrent.py; each returns False (nothing written) for a dtype
it lacks."""
from __future__ import annotations

import numpy as np

from ..runtime.compile import compiled

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_BLOCK = 256
_NULL = np.uint64(0)        # a null pointer argument (the GRU without bias)


def _launch(name, like, units, *args):
    """One thread per unit; False (nothing launched) where `like`'s dtype has no kernel."""
    ctype = _CTYPES.get(like.dtype)
    if ctype is None:
        return False
    if units:
        blocks = min((units + _BLOCK - 1) // _BLOCK, 8192)
        compiled("kernels/recurrent.cu", f"{name}<{ctype}>")((blocks,), (_BLOCK,), args)
    return True


def lstm_forward(gi, hh, c_prev, act, c, tanh_c, h):
    n, hdim = c.shape
    return _launch("lstm_forward", gi, n * hdim, gi, hh, c_prev, act, c, tanh_c, h, np.int64(n), np.int64(hdim))


def lstm_backward(dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
    n, hdim = dh.shape
    return _launch("lstm_backward", dh, n * hdim, dh, dc, act, c_prev, tanh_c, dgates, dc_prev,
                   np.int64(n), np.int64(hdim))


def gru_forward(gi, hh, b_hn, h_prev, act, ghn, h):
    n, hdim = h.shape
    return _launch("gru_forward", gi, n * hdim, gi, hh, _NULL if b_hn is None else b_hn, h_prev, act, ghn, h,
                   np.int64(n), np.int64(hdim))


def gru_backward(dh, h_prev, act, ghn, dgi, dgh, dh_prev):
    n, hdim = dh.shape
    return _launch("gru_backward", dh, n * hdim, dh, h_prev, act, ghn, dgi, dgh, dh_prev, np.int64(n), np.int64(hdim))


def rnn_forward(gi, hh, h, nonlinearity):
    return _launch("rnn_forward", gi, h.size, gi, hh, h, np.int64(h.size), np.int32(nonlinearity == "relu"))


def rnn_backward(dh, h, dpre, nonlinearity):
    return _launch("rnn_backward", dh, h.size, dh, h, dpre, np.int64(h.size), np.int32(nonlinearity == "relu"))

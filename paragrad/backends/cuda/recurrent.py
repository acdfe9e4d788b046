"""The per-step gate kernels of the recurrent sequence op (kernels/recurrent.cu): one launch
for what composes to 10-25 elementwise calls a step. Arguments and results are those of the
fast-path seam in paragrad/ops/recurrent.py; each returns False (nothing written) for a dtype
it lacks."""
from __future__ import annotations

import numpy as np

from .kernels import compiled

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_BLOCK = 256
_NULL = np.uint64(0)        # a null pointer argument (the GRU without bias)


def _run(name, ctype, units, *args):
    if units:
        blocks = min((units + _BLOCK - 1) // _BLOCK, 8192)
        compiled("recurrent.cu", f"{name}<{ctype}>")((blocks,), (_BLOCK,), args)


def lstm_forward(gi, hh, c_prev, act, c, tanh_c, h):
    ctype = _CTYPES.get(gi.dtype)
    if ctype is None:
        return False
    n, hdim = c.shape
    _run("lstm_forward", ctype, n * hdim, gi, hh, c_prev, act, c, tanh_c, h, np.int64(n), np.int64(hdim))
    return True


def lstm_backward(dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
    ctype = _CTYPES.get(dh.dtype)
    if ctype is None:
        return False
    n, hdim = dh.shape
    _run("lstm_backward", ctype, n * hdim, dh, dc, act, c_prev, tanh_c, dgates, dc_prev,
         np.int64(n), np.int64(hdim))
    return True


def gru_forward(gi, hh, b_hn, h_prev, act, ghn, h):
    ctype = _CTYPES.get(gi.dtype)
    if ctype is None:
        return False
    n, hdim = h.shape
    _run("gru_forward", ctype, n * hdim, gi, hh, _NULL if b_hn is None else b_hn, h_prev, act, ghn, h,
         np.int64(n), np.int64(hdim))
    return True


def gru_backward(dh, h_prev, act, ghn, dgi, dgh, dh_prev):
    ctype = _CTYPES.get(dh.dtype)
    if ctype is None:
        return False
    n, hdim = dh.shape
    _run("gru_backward", ctype, n * hdim, dh, h_prev, act, ghn, dgi, dgh, dh_prev, np.int64(n), np.int64(hdim))
    return True


def rnn_forward(gi, hh, h, nonlinearity):
    ctype = _CTYPES.get(gi.dtype)
    if ctype is None:
        return False
    _run("rnn_forward", ctype, h.size, gi, hh, h, np.int64(h.size), np.int32(nonlinearity == "relu"))
    return True


def rnn_backward(dh, h, dpre, nonlinearity):
    ctype = _CTYPES.get(dh.dtype)
    if ctype is None:
        return False
    _run("rnn_backward", ctype, h.size, dh, h, dpre, np.int64(h.size), np.int32(nonlinearity == "relu"))
    return True

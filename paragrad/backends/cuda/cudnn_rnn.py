"""nn.LSTM / nn.GRU / nn.RNN on CUDA through cuDNN's recurrent layers (cuDNN 9's "v8" RNN API,
driven through ctypes by cudnn_library.py): one cudnnRNNForward per sequence forward, and one
cudnnRNNBackwardData_v8 plus one cudnnRNNBackwardWeights_v8 backward, every layer, direction and
time step inside cuDNN, as PyTorch's cuDNN path runs them.

The op layer calls rnn_forward / rnn_backward on CuPy arrays:

- x (L, N, H_in) sequence-major; hx (num_layers * D, N, H_out), cx (num_layers * D, N, H) for an
  LSTM, where D = 2 for a bidirectional layer, H_out = proj_size or hidden_size.
- weights in PyTorch's `_flat_weights` order: per layer, per direction, w_ih (G*H, H_in of the
  layer), w_hh (G*H, H_out), [b_ih (G*H,), b_hh (G*H,)], [w_hr (P, H)], G the gates of the cell
  (LSTM 4: i, f, g, o; GRU 3: r, z, n; RNN 1). cuDNN's linear layers 0..G-1 (input) and
  G..2G-1 (recurrent) are those gates in the same order (PyTorch views its gates so), 8 an LSTM's
  projection; the biases are cuDNN's "double bias" (b_ih and b_hh, PyTorch's two).
- seq_lengths: None, or one host int per sequence, in any order: cuDNN's padded sequence-major
  layout runs each sequence its own number of steps (a reverse direction starts at its own last
  step), hy holds each sequence's final states, and y and dx are zero past its end. (A CuPy
  array of lengths is read back to the host first.)

Each call copies the parameters into a new weight space laid out as cudnnGetRNNWeightParams says
(the layout is found once per configuration; then one device-to-device copy per parameter fills
it, where each parameter's gates lie end to end as in PyTorch's layout). A new space per call
because a forward's backward needs the weights that forward ran with: two layers of the same
shape (an encoder and a decoder) run forward before either runs backward. The weight gradients
come back as views of one buffer (copies where a parameter's gates lie apart). Descriptors live
as long as something uses them: the per-configuration cache, or a forward's context awaiting
its backward. After the first call of a shape nothing is uploaded or read back, so a pg.jit
capture records the calls whole.

Numerics follow PyTorch's choices: half types store in their own type and compute in float32 on
tensor cores; float32 stays off TF32 (CUDNN_FMA_MATH) unless pg.backends.cuda.matmul.allow_tf32,
as torch.backends.cudnn.allow_tf32 = False does; float64 is exact float64.

Dropout between layers (training, dropout > 0, more than one layer) draws from cuDNN's own random
state, one per device as PyTorch's cuDNN path keeps, not from paragrad's generator: the stream
restarts when rnn_forward is given a dropout_seed other than the last one (pass one derived from
the generator's seed so that manual_seed restarts it). The mask lives in the reserve space, so a
forward's backward drops what it dropped.

A forward's context serves one backward: cuDNN's backward rewrites the reserve space it reads.
dtypes cuDNN doesn't take (integers), empty input, and configurations cuDNN reports unsupported
return None: the caller composes the layer from primitives instead.
"""
from __future__ import annotations

import collections
import ctypes
import math

import numpy as np

from ... import capture
from . import cudnn_library as cl
from . import matmul as flags

try:
    import cupy
except ImportError:     # (importable without CUDA; every function below needs CuPy)
    cupy = None

_MODES = {"LSTM": (cl.LSTM, 4), "GRU": (cl.GRU, 3), "RNN_TANH": (cl.RNN_TANH, 1), "RNN_RELU": (cl.RNN_RELU, 1)}
_DATA_TYPES = {"float32": cl.DATA_FLOAT, "float64": cl.DATA_DOUBLE, "float16": cl.DATA_HALF,
               "bfloat16": cl.DATA_BFLOAT16}
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}   # (masks clear bits: any float type, NaNs too)
_PROJECTION = 8             # cuDNN's linear-layer id of an LSTM's projection matrix
DEFAULT_DROPOUT_SEED = 0

_handles: dict = {}         # (device, stream) -> cl.Handle
_setups: dict = {}          # configuration -> _Setup
_unsupported: set = set()   # configurations cuDNN refused
_datas: collections.OrderedDict = collections.OrderedDict()    # sequence shapes -> _Data (recent)
_DATAS_KEPT = 256
_state_descs: dict = {}     # (dtype name, dims) -> cl.TensorDescriptor
_dropout_states: dict = {}  # device -> [states buffer, seed]


def _math(dtype_name):
    """(mathPrec, mathType), as PyTorch's RNN descriptor picks them (with its default
    torch.backends.cudnn.allow_tf32 for bfloat16: CUDNN_DEFAULT_MATH, tensor cores allowed)."""
    if dtype_name == "float16":
        return cl.DATA_FLOAT, cl.TENSOR_OP_MATH
    if dtype_name == "bfloat16":
        return cl.DATA_FLOAT, cl.DEFAULT_MATH
    if dtype_name == "float32":
        # CUDNN_DEFAULT_MATH lets float32 run on TF32 tensor cores (Ampere and later)
        return cl.DATA_FLOAT, cl.DEFAULT_MATH if flags.allow_tf32 else cl.FMA_MATH
    return cl.DATA_DOUBLE, cl.DEFAULT_MATH     # (float64's only choice)


def _handle():
    stream = cupy.cuda.get_current_stream().ptr
    key = (cupy.cuda.runtime.getDevice(), stream)
    h = _handles.get(key)
    if h is None:
        h = _handles[key] = cl.Handle(stream)
    return h


def _contiguous(a):
    from .kernels.row_views import c_contiguous
    return c_contiguous(a)


def _state_desc(dtype, dims):
    """The descriptor of hx/hy (num_layers * D, N, H_out) or cx/cy (..., H)."""
    key = (dtype.name, dims)
    d = _state_descs.get(key)
    if d is None:
        d = _state_descs[key] = cl.TensorDescriptor(_DATA_TYPES[dtype.name], dims)
    return d


def _dropout_states_for(handle, device, seed):
    """The device's cuDNN dropout random state, initialized (one kernel over ~MBs of curand
    states) on first use and again when a different seed is given; None keeps the current one."""
    seed = None if seed is None else int(seed) % 2**64    # (an unsigned long long)
    held = _dropout_states.get(device)
    if held is not None and seed in (None, held[1]):
        return held[0]
    seed = DEFAULT_DROPOUT_SEED if seed is None else seed
    if capture.active():    # (captured, the initialization would rerun on every replay)
        raise RuntimeError(f"cuDNN RNN dropout: its random state can't be (re)seeded while pg.jit captures "
                           f"{capture.active()}: run the recurrent layer once before the capture, with the "
                           "same dropout seed")
    if held is None:
        size = ctypes.c_size_t()
        cl.load().call("cudnnDropoutGetStatesSize", handle.ptr, ctypes.byref(size))
        held = _dropout_states[device] = [cupy.empty(size.value, dtype=cupy.uint8), None]
    # (a throwaway descriptor: setting one with a seed initializes the states it points at)
    cl.DropoutDescriptor(handle, 0.5, held[0], seed=seed)
    held[1] = seed
    return held[0]


class _Setup:
    """One RNN configuration: cuDNN's descriptor and where each parameter lies in its weight
    space, as runs (parameter index, first element in the parameter, first element in the
    space, length) sorted by their place in the space."""

    def __init__(self, handle, mode, dtype, input_size, hidden_size, proj_size, num_layers, directions,
                 shapes, bias, dropout, states):
        cell, self.gates = _MODES[mode]
        precision, math_type = _math(dtype.name)
        self.dtype, self.shapes = dtype, shapes
        self.lib = cl.load()
        self.desc = cl.RNNDescriptor(cell, bias, directions == 2, _DATA_TYPES[dtype.name], precision, math_type,
                                     input_size, hidden_size, proj_size or hidden_size, num_layers,
                                     cl.DropoutDescriptor(handle, dropout, states))
        size = ctypes.c_size_t()
        self.lib.call("cudnnGetRNNWeightSpaceSize", handle.ptr, self.desc.ptr, ctypes.byref(size))
        if size.value % dtype.itemsize:
            raise RuntimeError(f"cuDNN RNN: weight space of {size.value} bytes is no whole number of {dtype.name}")
        self.numel = size.value // dtype.itemsize
        self.runs = self._layout(handle, hidden_size, proj_size, num_layers * directions, bias)
        tiles = all(a[2] + a[3] == b[2] for a, b in zip(self.runs, self.runs[1:]))
        # the parameters fill the space end to end: no padding between them to zero
        self.tiled = tiles and self.runs[0][2] == 0 and self.runs[-1][2] + self.runs[-1][3] == self.numel
        # each parameter in one piece: its gradient is a view of the gradient space
        self.whole = len(self.runs) == len(shapes)

    def _where(self, handle, scratch, pseudo_layer, linear_id, matrix, what):
        """(offset, number of elements) in the weight space of one matrix or bias of one gate."""
        desc, addr = cl.TensorDescriptor(), ctypes.c_void_p()
        found = (desc.ptr, ctypes.byref(addr))
        m, b = (found, (None, None)) if matrix else ((None, None), found)
        self.lib.call("cudnnGetRNNWeightParams", handle.ptr, self.desc.ptr, pseudo_layer, scratch.nbytes,
                      scratch.data.ptr, linear_id, *m, *b)
        if not addr.value:
            raise RuntimeError(f"cuDNN RNN: no {what} for layer/direction {pseudo_layer}, linear layer {linear_id}")
        offset = addr.value - scratch.data.ptr
        if offset % self.dtype.itemsize or not 0 <= offset < scratch.nbytes:
            raise RuntimeError(f"cuDNN RNN: {what} of layer/direction {pseudo_layer}, linear layer {linear_id} at "
                               f"byte {offset} of a {scratch.nbytes}-byte weight space")
        return offset // self.dtype.itemsize, math.prod(desc.dims())

    def _layout(self, handle, hidden, proj, pseudo_layers, bias):
        # cuDNN does pointer arithmetic on a weight space: give it a real one
        scratch = cupy.empty(self.numel, dtype=self.dtype)
        per = len(self.shapes) // pseudo_layers
        wanted = []     # (pseudo layer, linear id, matrix?, parameter index, first element, elements)
        for pl in range(pseudo_layers):
            first = pl * per        # w_ih of this layer and direction; w_hh next; then biases
            for lid in range(2 * self.gates):
                param, gate = first + (lid >= self.gates), lid % self.gates
                cols = self.shapes[param][1]
                wanted.append((pl, lid, True, param, gate * hidden * cols, hidden * cols))
                if bias:
                    wanted.append((pl, lid, False, first + 2 + (lid >= self.gates), gate * hidden, hidden))
            if proj:
                wanted.append((pl, _PROJECTION, True, first + per - 1, 0, proj * hidden))
        runs = []
        for pl, lid, matrix, param, start, n in wanted:
            what = "matrix" if matrix else "bias"
            offset, numel = self._where(handle, scratch, pl, lid, matrix, what)
            if numel != n or offset + n > self.numel:
                raise RuntimeError(f"cuDNN RNN: {what} of layer/direction {pl}, linear layer {lid} holds {numel} "
                                   f"elements at {offset} of {self.numel}; parameter {param} "
                                   f"{self.shapes[param]} needs {n} there")
            runs.append([param, start, offset, n])
        runs.sort(key=lambda r: (r[0], r[1]))
        merged = []
        for r in runs:      # gates consecutive in both the parameter and the space: one run
            last = merged[-1] if merged else None
            if last and last[0] == r[0] and last[1] + last[3] == r[1] and last[2] + last[3] == r[2]:
                last[3] += r[3]
            else:
                merged.append(r)
        for i, shape in enumerate(self.shapes):     # each parameter covered once, end to end
            end = 0
            for r in (r for r in merged if r[0] == i):
                if r[1] != end:
                    break
                end += r[3]
            if end != math.prod(shape):
                raise RuntimeError(f"cuDNN RNN: the weight space layout doesn't cover parameter {i} {shape} "
                                   f"exactly once (runs {[r for r in merged if r[0] == i]})")
        merged.sort(key=lambda r: r[2])
        for a, b in zip(merged, merged[1:]):
            if a[2] + a[3] > b[2]:
                raise RuntimeError(f"cuDNN RNN: parameters {a[0]} and {b[0]} overlap in the weight space")
        return [tuple(r) for r in merged]

    def pack(self, weights):
        """A new weight space holding `weights` where cuDNN reads them: one device-to-device copy
        per run (no kernel, nothing uploaded: safe inside a CUDA graph capture)."""
        item = self.dtype.itemsize
        space = (cupy.empty if self.tiled else cupy.zeros)(self.numel, dtype=self.dtype)  # (zeros: the padding)
        weights = [_contiguous(w) for w in weights]
        for p, s, d, n in self.runs:
            _copy(space.data.ptr + d * item, weights[p].data.ptr + s * item, n * item)
        return space

    def unpack(self, space):
        """The parameters' pieces of a (gradient) weight space, shaped as the parameters: views
        where each lies in one piece."""
        if self.whole:
            return [space[d:d + n].reshape(self.shapes[p]) for p, _, d, n in sorted(self.runs)]
        item, out = self.dtype.itemsize, [cupy.empty(shape, dtype=self.dtype) for shape in self.shapes]
        for p, s, d, n in self.runs:
            _copy(out[p].data.ptr + s * item, space.data.ptr + d * item, n * item)
        return out


def _copy(dst, src, nbytes):
    """Device to device, on the current stream."""
    rt = cupy.cuda.runtime
    rt.memcpyAsync(dst, src, nbytes, rt.memcpyDeviceToDevice, cupy.cuda.get_current_stream().ptr)


class _Data:
    """Descriptors of x and y for a batch of sequences: (L, N, vector) padded sequence-major,
    lengths[n] steps of sequence n; the lengths on the device (cuDNN's kernels read them)."""

    def __init__(self, dtype, max_len, lengths, input_size, output_size):
        from .runtime.memory import upload     # (inside a capture: uploaded at once, kept with the graph)
        code = _DATA_TYPES[dtype.name]
        self.x = cl.RNNDataDescriptor(code, max_len, lengths, input_size)
        self.y = cl.RNNDataDescriptor(code, max_len, lengths, output_size)
        self.lengths = upload(np.asarray(lengths, dtype=np.int32))
        self.keep = None
        if min(lengths) < max_len:  # bit masks (L, N, 1): all ones for steps in a sequence, zero past it
            bits = _BITS[dtype.itemsize]
            live = np.arange(max_len)[:, None] < np.asarray(lengths)[None, :]
            self.keep = upload(np.where(live, ~bits(0), bits(0))[:, :, None])
        self.temp = {}      # (configuration, forward mode) -> (workspace bytes, reserve bytes)

    def temp_sizes(self, handle, key, setup, mode):
        sizes = self.temp.get((key, mode))
        if sizes is None:
            work, reserve = ctypes.c_size_t(), ctypes.c_size_t()
            cl.load().call("cudnnGetRNNTempSpaceSizes", handle.ptr, setup.desc.ptr, mode, self.x.ptr,
                           ctypes.byref(work), ctypes.byref(reserve))
            sizes = self.temp[(key, mode)] = (work.value, reserve.value)
        return sizes

    def zero_padding(self, a):
        """Zero a's steps past each sequence's end, in place (bits cleared: garbage NaNs too)."""
        if self.keep is not None:
            bits = _BITS[a.dtype.itemsize]
            cupy.bitwise_and(a.view(bits), self.keep, out=a.view(bits))


def _data(device, dtype, max_len, lengths, input_size, output_size):
    key = (device, dtype.name, max_len, lengths, input_size, output_size)
    d = _datas.get(key)
    if d is None:
        d = _datas[key] = _Data(dtype, max_len, lengths, input_size, output_size)
        while len(_datas) > _DATAS_KEPT:
            _datas.popitem(last=False)  # (a context still holding it keeps it alive)
    else:
        _datas.move_to_end(key)
    return capture.keep(d)


def _lengths(seq_lengths, max_len, batch):
    if seq_lengths is None:
        return (max_len,) * batch
    if isinstance(seq_lengths, cupy.ndarray):
        seq_lengths = seq_lengths.get()
    lengths = tuple(int(v) for v in np.asarray(seq_lengths).reshape(-1))
    if len(lengths) != batch:
        raise ValueError(f"rnn_forward: seq_lengths has {len(lengths)} entries for a batch of {batch} sequences")
    if min(lengths) < 1 or max(lengths) > max_len:
        raise ValueError(f"rnn_forward: every sequence length must lie in [1, {max_len}] (the input's length), "
                         f"got {list(lengths)}")
    return lengths


def _check_weights(weights, mode, gates, input_size, hidden, proj, num_layers, directions, dtype):
    """-> (has biases, the parameters' shapes); raises on a wrong count, shape or dtype."""
    extra = 1 if proj else 0
    with_bias, without = num_layers * directions * (4 + extra), num_layers * directions * (2 + extra)
    if len(weights) not in (with_bias, without):
        raise ValueError(f"rnn_forward: a {num_layers}-layer{' bidirectional' if directions == 2 else ''} {mode}"
                         f"{' with projections' if proj else ''} has {with_bias} parameters ({without} without "
                         f"biases), got {len(weights)}")
    bias = len(weights) == with_bias
    out, shapes = proj or hidden, []
    for layer in range(num_layers):
        layer_input = input_size if layer == 0 else directions * out
        for direction in range(directions):
            sfx = f"_l{layer}" + ("_reverse" if direction else "")
            names = [("weight_ih" + sfx, (gates * hidden, layer_input)), ("weight_hh" + sfx, (gates * hidden, out))]
            if bias:
                names += [("bias_ih" + sfx, (gates * hidden,)), ("bias_hh" + sfx, (gates * hidden,))]
            if proj:
                names.append(("weight_hr" + sfx, (proj, hidden)))
            for name, shape in names:
                w = weights[len(shapes)]
                if tuple(w.shape) != shape:
                    raise ValueError(f"rnn_forward: {name} has shape {tuple(w.shape)}, expected {shape}")
                if w.dtype != dtype:
                    raise RuntimeError(f"rnn_forward: input and parameter tensors are not the same dtype, found "
                                       f"input of {dtype.name} and {name} of {w.dtype.name}")
                shapes.append(shape)
    return bias, tuple(shapes)


def _check_state(a, shape, dtype, name, op="rnn_forward"):
    if tuple(a.shape) != tuple(shape):
        raise RuntimeError(f"{op}: expected {name} size {tuple(shape)}, got {tuple(a.shape)}")
    if a.dtype != dtype:
        raise RuntimeError(f"{op}: expected {name} of dtype {dtype.name}, got {a.dtype.name}")
    return _contiguous(a)


class _Context:
    """What a forward leaves for its backward."""
    __slots__ = ("key", "setup", "data", "h_desc", "c_desc", "x", "hx", "cx", "y", "space", "reserve",
                 "consumed")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
        self.consumed = False


def _ptr(a):
    return None if a is None else a.data.ptr


def rnn_forward(mode, x, hx, cx, weights, *, hidden_size, proj_size, num_layers, bidirectional, dropout,
                training, seq_lengths=None, need_backward, dropout_seed=None):
    """-> (y (L, N, D*H_out), hy, cy or None, ctx or None), or None where cuDNN can't run it (see
    the module docstring). Without need_backward ctx is None and cuDNN runs its inference mode
    (unless dropout applies). hx None (cx None for an LSTM) starts from zeros. dropout_seed: see
    the module docstring; None keeps the device's dropout state as it is."""
    if cupy is None:
        raise RuntimeError("cuDNN recurrent layers need CuPy (the CUDA backend)")
    if mode not in _MODES:
        raise ValueError(f"rnn_forward: unknown mode {mode!r}, expected one of {sorted(_MODES)}")
    dtype = x.dtype
    if dtype.name not in _DATA_TYPES or x.ndim != 3 or x.size == 0:
        return None
    if hidden_size < 1 or num_layers < 1:
        raise ValueError(f"rnn_forward: hidden_size and num_layers must be positive, got {hidden_size}, {num_layers}")
    if proj_size and (mode != "LSTM" or not 0 < proj_size < hidden_size):
        raise ValueError(f"rnn_forward: proj_size {proj_size} needs an LSTM and 0 < proj_size < hidden_size "
                         f"({hidden_size})")
    max_len, batch, input_size = x.shape
    cell, gates = _MODES[mode]
    directions = 2 if bidirectional else 1
    out = proj_size or hidden_size
    lengths = _lengths(seq_lengths, max_len, batch)
    bias, shapes = _check_weights(weights, mode, gates, input_size, hidden_size, proj_size, num_layers,
                                  directions, dtype)
    h_shape, c_shape = (num_layers * directions, batch, out), (num_layers * directions, batch, hidden_size)
    hx = cupy.zeros(h_shape, dtype) if hx is None else _check_state(hx, h_shape, dtype, "hidden")
    if mode == "LSTM":
        cx = cupy.zeros(c_shape, dtype) if cx is None else _check_state(cx, c_shape, dtype, "cell")
    elif cx is not None:
        raise ValueError(f"rnn_forward: a {mode} has no cell state, got cx")
    p = float(dropout) if training and num_layers > 1 and dropout > 0 else 0.0
    fwd_mode = cl.FWD_MODE_TRAINING if need_backward or p > 0 else cl.FWD_MODE_INFERENCE
    device = cupy.cuda.runtime.getDevice()
    handle = _handle()
    states = _dropout_states_for(handle, device, dropout_seed) if p > 0 else None

    key = (device, mode, dtype.name, input_size, hidden_size, proj_size, num_layers, directions, bias, p,
           _math(dtype.name))
    if key in _unsupported:
        return None
    try:
        setup = _setups.get(key)
        if setup is None:
            setup = _setups[key] = _Setup(handle, mode, dtype, input_size, hidden_size, proj_size, num_layers,
                                          directions, shapes, bias, p, states)
        data = _data(device, dtype, max_len, lengths, input_size, directions * out)
        work_bytes, reserve_bytes = data.temp_sizes(handle, key, setup, fwd_mode)
    except cl.CudnnError as e:
        if not e.not_supported:
            raise
        _unsupported.add(key)   # (cuDNN can't: the caller composes the layer instead)
        return None
    capture.keep(setup)

    x = _contiguous(x)
    space = setup.pack(weights)
    y = cupy.empty((max_len, batch, directions * out), dtype)
    hy = cupy.empty(h_shape, dtype)
    cy = cupy.empty(c_shape, dtype) if mode == "LSTM" else None
    h_desc = _state_desc(dtype, h_shape)
    c_desc = _state_desc(dtype, c_shape) if mode == "LSTM" else None
    work = cupy.empty(max(work_bytes, 1), dtype=cupy.uint8)
    reserve = cupy.empty(max(reserve_bytes, 1), dtype=cupy.uint8) if fwd_mode == cl.FWD_MODE_TRAINING else None
    setup.lib.call("cudnnRNNForward", handle.ptr, setup.desc.ptr, fwd_mode, data.lengths.data.ptr,
                   data.x.ptr, x.data.ptr, data.y.ptr, y.data.ptr, h_desc.ptr, hx.data.ptr, hy.data.ptr,
                   c_desc and c_desc.ptr, _ptr(cx), _ptr(cy), space.nbytes, space.data.ptr,
                   work_bytes, work.data.ptr, reserve_bytes if reserve is not None else 0, _ptr(reserve))
    data.zero_padding(y)
    ctx = None
    if need_backward:
        ctx = _Context(key=key, setup=setup, data=data, h_desc=h_desc, c_desc=c_desc, x=x, hx=hx, cx=cx, y=y,
                       space=space, reserve=(reserve, reserve_bytes))
    return y, hy, cy, ctx


def rnn_backward(ctx, dy, dhy, dcy, *, need_dweights=True):
    """-> (dx, dhx, dcx or None, dweights or None): dweights in the order and shapes of the
    forward's weights, views of one gradient buffer. dhy / dcy None count as zeros."""
    if ctx.consumed:
        raise RuntimeError("cuDNN RNN backward ran already for this forward: cuDNN's backward rewrites the "
                           "reserve space it reads, so each forward serves one backward")
    setup, data, x, hx, cx, y = ctx.setup, ctx.data, ctx.x, ctx.hx, ctx.cx, ctx.y
    if tuple(dy.shape) != y.shape or dy.dtype != y.dtype:
        raise RuntimeError(f"rnn_backward: expected a gradient of the output of shape {y.shape} and dtype "
                           f"{y.dtype.name}, got {tuple(dy.shape)} {dy.dtype.name}")
    dy = _contiguous(dy)
    op = "rnn_backward"
    dhy = cupy.zeros_like(hx) if dhy is None else _check_state(dhy, hx.shape, hx.dtype, "gradient of hidden", op)
    if cx is not None:
        dcy = cupy.zeros_like(cx) if dcy is None else _check_state(dcy, cx.shape, cx.dtype, "gradient of cell", op)
    else:
        dcy = None
    handle = _handle()
    work_bytes, _ = data.temp_sizes(handle, ctx.key, setup, cl.FWD_MODE_TRAINING)
    work = cupy.empty(max(work_bytes, 1), dtype=cupy.uint8)
    reserve, reserve_bytes = ctx.reserve
    dx, dhx = cupy.empty_like(x), cupy.empty_like(hx)
    dcx = cupy.empty_like(cx) if cx is not None else None
    c_desc = ctx.c_desc and ctx.c_desc.ptr
    ctx.consumed = True     # (from here on the reserve space is the backward's)
    setup.lib.call("cudnnRNNBackwardData_v8", handle.ptr, setup.desc.ptr, data.lengths.data.ptr,
                   data.y.ptr, y.data.ptr, dy.data.ptr, data.x.ptr, dx.data.ptr, ctx.h_desc.ptr, hx.data.ptr,
                   dhy.data.ptr, dhx.data.ptr, c_desc, _ptr(cx), _ptr(dcy), _ptr(dcx),
                   ctx.space.nbytes, ctx.space.data.ptr, work_bytes, work.data.ptr, reserve_bytes, reserve.data.ptr)
    data.zero_padding(dx)
    dweights = None
    if need_dweights:   # (after the data gradient: it reads what that one left in the reserve)
        dspace = cupy.zeros(setup.numel, dtype=setup.dtype)     # (cuDNN adds into it)
        setup.lib.call("cudnnRNNBackwardWeights_v8", handle.ptr, setup.desc.ptr, cl.WGRAD_MODE_ADD,
                       data.lengths.data.ptr, data.x.ptr, x.data.ptr, ctx.h_desc.ptr, hx.data.ptr, data.y.ptr,
                       y.data.ptr, dspace.nbytes, dspace.data.ptr, work_bytes, work.data.ptr, reserve_bytes,
                       reserve.data.ptr)
        dweights = setup.unpack(dspace)
    ctx.space = ctx.reserve = None      # (free them before the context itself goes)
    return dx, dhx, dcx, dweights

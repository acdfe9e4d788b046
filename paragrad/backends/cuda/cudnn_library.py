"""cuDNN's C library through ctypes, for what the cuDNN frontend doesn't offer: the recurrent
layers (cuDNN 9's "v8" RNN API), with the tensor, dropout and RNN-data descriptors and the
handle they need. cudnn_rnn.py drives it.

Every signature and enum value below is cuDNN 9's, from its headers (cudnn_graph.h, cudnn_ops.h,
cudnn_adv.h); C enums travel as ints. Any status but success raises CudnnError, naming the call,
the status and cuDNN's own last error message.

libcudnn.so.9 exports the whole API (it forwards each call to libcudnn_adv/_ops/_graph.so.9 beside
it). The copy used is, in order: one this process already mapped (the cuDNN frontend's or
PyTorch's: one cuDNN per process), the nvidia-cudnn wheel's, the loader's search path. Nothing
here imports CuPy.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os

# cudnnDataType_t (cudnn_graph.h)
DATA_FLOAT, DATA_DOUBLE, DATA_HALF, DATA_BFLOAT16 = 0, 1, 2, 9
# cudnnMathType_t (cudnn_graph.h)
DEFAULT_MATH, TENSOR_OP_MATH, FMA_MATH = 0, 1, 3
# cudnnRNNAlgo_t, cudnnForwardMode_t (cudnn_adv.h)
RNN_ALGO_STANDARD = 0
FWD_MODE_INFERENCE, FWD_MODE_TRAINING = 0, 1
# cudnnRNNMode_t: cell kinds, and the linear layers (gates) each has per direction and layer
RNN_RELU, RNN_TANH, LSTM, GRU = 0, 1, 2, 3
# cudnnRNNBiasMode_t, cudnnDirectionMode_t, cudnnRNNInputMode_t
RNN_NO_BIAS, RNN_DOUBLE_BIAS = 0, 2
UNIDIRECTIONAL, BIDIRECTIONAL = 0, 1
LINEAR_INPUT = 0
# cudnnRNNDataLayout_t, and auxFlags of cudnnSetRNNDescriptor_v8 (#define CUDNN_RNN_PADDED_IO_*)
RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED = 0
RNN_PADDED_IO_ENABLED = 1
# cudnnWgradMode_t
WGRAD_MODE_ADD = 0
# cudnnStatus_t: success, and the "not supported" category (3000-3999)
STATUS_SUCCESS = 0
STATUS_NOT_SUPPORTED = 3000

_p, _i, _u32, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_size_t
_pp, _pi, _psz = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t)
_STATUS = ctypes.c_int

# name -> (restype, argtypes); pointers to device memory and descriptors are void *
_SIGNATURES = {
    # cudnn_graph.h
    "cudnnGetVersion": (_sz, []),
    "cudnnGetErrorString": (ctypes.c_char_p, [_i]),
    "cudnnCreate": (_STATUS, [_pp]),
    "cudnnDestroy": (_STATUS, [_p]),
    "cudnnSetStream": (_STATUS, [_p, _p]),                      # (handle, cudaStream_t)
    # cudnn_ops.h
    "cudnnCreateTensorDescriptor": (_STATUS, [_pp]),
    "cudnnDestroyTensorDescriptor": (_STATUS, [_p]),
    "cudnnSetTensorNdDescriptor": (_STATUS, [_p, _i, _i, _pi, _pi]),  # (desc, dtype, nbDims, dims, strides)
    "cudnnGetTensorNdDescriptor": (_STATUS, [_p, _i, _pi, _pi, _pi, _pi]),  # (desc, nbDimsRequested,
    #                                                       *dtype, *nbDims, dims, strides)
    "cudnnCreateDropoutDescriptor": (_STATUS, [_pp]),
    "cudnnDestroyDropoutDescriptor": (_STATUS, [_p]),
    "cudnnDropoutGetStatesSize": (_STATUS, [_p, _psz]),
    # (desc, handle, float dropout, void *states, size_t stateSizeInBytes, unsigned long long seed)
    "cudnnSetDropoutDescriptor": (_STATUS, [_p, _p, ctypes.c_float, _p, _sz, ctypes.c_ulonglong]),
    "cudnnRestoreDropoutDescriptor": (_STATUS, [_p, _p, ctypes.c_float, _p, _sz, ctypes.c_ulonglong]),
    # cudnn_adv.h
    "cudnnCreateRNNDescriptor": (_STATUS, [_pp]),
    "cudnnDestroyRNNDescriptor": (_STATUS, [_p]),
    # (desc, algo, cellMode, biasMode, dirMode, inputMode, dataType, mathPrec, mathType,
    #  int32 inputSize, hiddenSize, projSize, numLayers, dropoutDesc, uint32 auxFlags)
    "cudnnSetRNNDescriptor_v8": (_STATUS, [_p] + [_i] * 8 + [ctypes.c_int32] * 4 + [_p, _u32]),
    "cudnnGetRNNWeightSpaceSize": (_STATUS, [_p, _p, _psz]),
    # (handle, rnnDesc, fwdMode, xDesc, *workSpaceSize, *reserveSpaceSize)
    "cudnnGetRNNTempSpaceSizes": (_STATUS, [_p, _p, _i, _p, _psz, _psz]),
    # (handle, rnnDesc, int32 pseudoLayer, weightSpaceSize, weightSpace, int32 linLayerID,
    #  mDesc, void **mAddr, bDesc, void **bAddr)
    "cudnnGetRNNWeightParams": (_STATUS, [_p, _p, ctypes.c_int32, _sz, _p, ctypes.c_int32, _p, _pp, _p, _pp]),
    "cudnnCreateRNNDataDescriptor": (_STATUS, [_pp]),
    "cudnnDestroyRNNDataDescriptor": (_STATUS, [_p]),
    # (desc, dataType, layout, maxSeqLength, batchSize, vectorSize, int seqLengthArray[], void *paddingFill)
    "cudnnSetRNNDataDescriptor": (_STATUS, [_p, _i, _i, _i, _i, _i, _pi, _p]),
    # (handle, rnnDesc, fwdMode, devSeqLengths, xDesc, x, yDesc, y, hDesc, hx, hy, cDesc, cx, cy,
    #  weightSpaceSize, weightSpace, workSpaceSize, workSpace, reserveSpaceSize, reserveSpace)
    "cudnnRNNForward": (_STATUS, [_p, _p, _i] + [_p] * 11 + [_sz, _p] * 3),
    # (handle, rnnDesc, devSeqLengths, yDesc, y, dy, xDesc, dx, hDesc, hx, dhy, dhx, cDesc, cx,
    #  dcy, dcx, weightSpaceSize, weightSpace, workSpaceSize, workSpace, reserveSpaceSize, reserveSpace)
    "cudnnRNNBackwardData_v8": (_STATUS, [_p] * 16 + [_sz, _p] * 3),
    # (handle, rnnDesc, addGrad, devSeqLengths, xDesc, x, hDesc, hx, yDesc, y,
    #  weightSpaceSize, dweightSpace, workSpaceSize, workSpace, reserveSpaceSize, reserveSpace)
    "cudnnRNNBackwardWeights_v8": (_STATUS, [_p, _p, _i] + [_p] * 7 + [_sz, _p] * 3),
}
_ARG_COUNTS = {"cudnnSetRNNDescriptor_v8": 15, "cudnnRNNForward": 20, "cudnnRNNBackwardData_v8": 22,
               "cudnnRNNBackwardWeights_v8": 16}
assert all(len(_SIGNATURES[k][1]) == n for k, n in _ARG_COUNTS.items())


class CudnnError(RuntimeError):
    """A cuDNN call that returned a status other than success."""

    def __init__(self, call, status, message, detail=""):
        self.call, self.status = call, status
        super().__init__(f"{call} failed: {message} (cudnnStatus_t {status})" + (f": {detail}" if detail else ""))

    @property
    def not_supported(self):
        """cuDNN can't run this configuration (CUDNN_STATUS_NOT_SUPPORTED*), as opposed to a bad
        argument or a failure while running."""
        return self.status // 1000 * 1000 == STATUS_NOT_SUPPORTED


class Library:
    """libcudnn with its functions typed. `lib.call(name, *args)` raises CudnnError on failure."""

    def __init__(self, cdll, path):
        self.path, self._fns = path, {}
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                raise RuntimeError(f"cuDNN at {path} has no {name}: the recurrent layers need cuDNN 9") from None
            fn.restype, fn.argtypes = restype, argtypes
            self._fns[name] = fn
        self.version = self._fns["cudnnGetVersion"]()
        if self.version < 90000:    # cuDNN 9 numbers versions major * 10000 + minor * 100 + patch
            raise RuntimeError(f"cuDNN at {path} reports version {self.version}: the recurrent layers need "
                               "cuDNN 9 (pip install nvidia-cudnn-cu13)")
        # void cudnnGetLastErrorString(char *message, size_t max_size) (cudnn_graph.h, cuDNN 9)
        self._last_error = getattr(cdll, "cudnnGetLastErrorString", None)
        if self._last_error is not None:
            self._last_error.restype, self._last_error.argtypes = None, [ctypes.c_char_p, _sz]

    def call(self, name, *args):
        status = self._fns[name](*args)
        if status != STATUS_SUCCESS:
            message = self._fns["cudnnGetErrorString"](status) or b"unknown status"
            raise CudnnError(name, status, message.decode(errors="replace"), self.last_error())

    def last_error(self):
        if self._last_error is None:
            return ""
        buf = ctypes.create_string_buffer(1024)
        self._last_error(buf, len(buf))
        return buf.value.decode(errors="replace").strip()


def _mapped(prefix):
    """Paths of shared libraries this process has mapped whose file name starts with prefix."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if prefix in line}
    except OSError:
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith(prefix) and os.path.isfile(p))


def _wheel_dirs(package):
    """lib/ folders of an NVIDIA wheel (nvidia/<package>/lib, and nvidia/cu13/lib where CUDA 13
    wheels gather their libraries)."""
    dirs = []
    try:
        import nvidia
        for base in getattr(nvidia, "__path__", []):
            dirs += [os.path.join(base, package, "lib"), os.path.join(base, "cu13", "lib")]
    except ImportError:
        pass
    return [d for d in dirs if os.path.isdir(d)]


def _preload_cublas():
    """cuDNN's RNN kernels call cuBLAS, which libcudnn_adv opens by name when first needed. The
    CUDA backend loads cuBLAS for its first GEMM; a recurrent layer can come first, so load the
    wheel's copy now unless one is mapped already (best effort: cuDNN's own error says what's
    missing if this finds nothing)."""
    for name in ("libcublasLt.so.", "libcublas.so."):
        if _mapped(name):
            continue
        for d in _wheel_dirs("cublas"):
            hits = sorted(glob.glob(os.path.join(d, name + "*[0-9]")))
            if hits:
                try:
                    ctypes.CDLL(hits[0])
                except OSError:
                    pass
                break


_library = None


def load() -> Library:
    """The process's cuDNN, loaded once. Raises RuntimeError listing what was tried when no
    cuDNN 9 loads."""
    global _library
    if _library is not None:
        return _library
    candidates = _mapped("libcudnn.so.9")
    candidates += [os.path.join(d, "libcudnn.so.9") for d in _wheel_dirs("cudnn")]
    candidates += ["libcudnn.so.9"]
    found = ctypes.util.find_library("cudnn")
    if found:
        candidates.append(found)
    tried = []
    for path in dict.fromkeys(candidates):      # (in order, once each)
        if os.sep in path and not os.path.isfile(path):
            continue
        try:
            library = Library(ctypes.CDLL(path), path)
        except (OSError, RuntimeError) as e:    # (not there, or not a cuDNN 9)
            tried.append(f"{path}: {e}")
            continue
        _preload_cublas()
        _library = library
        return _library
    raise RuntimeError("cuDNN 9 not found (the recurrent layers' CUDA path needs libcudnn.so.9: "
                       "pip install nvidia-cudnn-cu13). Tried:\n  " + "\n  ".join(tried or candidates))


class _Owned:
    """A cuDNN object (descriptor or handle), destroyed when the last Python reference goes:
    whatever still uses it (a cached plan, a forward's saved context) keeps it alive."""
    _create = _destroy = ""

    def __init__(self):
        self.lib = load()
        ptr = ctypes.c_void_p()
        self.lib.call(self._create, ctypes.byref(ptr))
        self.ptr = ptr.value

    def __del__(self):
        try:
            if self.ptr:
                self.lib.call(self._destroy, self.ptr)
        except Exception:       # noqa: BLE001 - interpreter shutdown, or a context already gone
            pass


class Handle(_Owned):
    _create, _destroy = "cudnnCreate", "cudnnDestroy"

    def __init__(self, stream_ptr):
        super().__init__()
        self.lib.call("cudnnSetStream", self.ptr, stream_ptr)


def _c_ints(values):
    return (ctypes.c_int * len(values))(*values)


class TensorDescriptor(_Owned):
    """A fully packed row-major tensor, or (no dims) an empty descriptor for cuDNN to fill."""
    _create, _destroy = "cudnnCreateTensorDescriptor", "cudnnDestroyTensorDescriptor"

    def __init__(self, data_type=None, dims=()):
        super().__init__()
        if dims:
            strides, acc = [], 1
            for d in reversed(dims):
                strides.insert(0, acc)
                acc *= d
            self.lib.call("cudnnSetTensorNdDescriptor", self.ptr, data_type, len(dims), _c_ints(dims),
                          _c_ints(strides))

    def dims(self):
        """The dimensions cuDNN set (CUDNN_DIM_MAX = 8)."""
        data_type, nb = ctypes.c_int(), ctypes.c_int()
        dims, strides = (ctypes.c_int * 8)(), (ctypes.c_int * 8)()
        self.lib.call("cudnnGetTensorNdDescriptor", self.ptr, 8, ctypes.byref(data_type), ctypes.byref(nb),
                      dims, strides)
        return tuple(dims[:nb.value])


# the padding fill of RNN data: cuDNN reads it as the data's own type; 8 zero bytes are zero in all
_ZERO = ctypes.c_double(0.0)


class RNNDataDescriptor(_Owned):
    """Sequence-major padded data (L, N, vector): lengths[n] steps of sequence n, zeros after."""
    _create, _destroy = "cudnnCreateRNNDataDescriptor", "cudnnDestroyRNNDataDescriptor"

    def __init__(self, data_type, max_len, lengths, vector_size):
        super().__init__()
        self.lib.call("cudnnSetRNNDataDescriptor", self.ptr, data_type, RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                      max_len, len(lengths), vector_size, _c_ints(lengths), ctypes.addressof(_ZERO))


class DropoutDescriptor(_Owned):
    """Dropout between layers. p = 0: none (no random state). Else it draws from `states` (a
    device buffer of cudnnDropoutGetStatesSize bytes): with a seed, the states are initialized
    from it first (a kernel on the handle's stream, as PyTorch's initialize_rng); without, they
    are used as they are (cudnnRestoreDropoutDescriptor, as PyTorch's DropoutDescriptor.set)."""
    _create, _destroy = "cudnnCreateDropoutDescriptor", "cudnnDestroyDropoutDescriptor"

    def __init__(self, handle, p=0.0, states=None, seed=None):
        super().__init__()
        self.states = states        # (kept alive while the descriptor points into it)
        if p == 0:
            self.lib.call("cudnnSetDropoutDescriptor", self.ptr, handle.ptr, 0.0, None, 0, 0)
        elif seed is not None:
            self.lib.call("cudnnSetDropoutDescriptor", self.ptr, handle.ptr, p, states.data.ptr, states.nbytes,
                          seed)
        else:
            self.lib.call("cudnnRestoreDropoutDescriptor", self.ptr, handle.ptr, p, states.data.ptr,
                          states.nbytes, 0)


class RNNDescriptor(_Owned):
    _create, _destroy = "cudnnCreateRNNDescriptor", "cudnnDestroyRNNDescriptor"

    def __init__(self, cell, bias, bidirectional, data_type, math_precision, math_type, input_size,
                 hidden_size, proj_size, num_layers, dropout):
        super().__init__()
        self.dropout = dropout      # (cuDNN keeps a pointer to it)
        self.lib.call("cudnnSetRNNDescriptor_v8", self.ptr, RNN_ALGO_STANDARD, cell,
                      RNN_DOUBLE_BIAS if bias else RNN_NO_BIAS, BIDIRECTIONAL if bidirectional else UNIDIRECTIONAL,
                      LINEAR_INPUT, data_type, math_precision, math_type, input_size, hidden_size,
                      proj_size, num_layers, dropout.ptr, RNN_PADDED_IO_ENABLED)

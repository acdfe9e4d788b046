"""The unpickler behind pg.load(weights_only=True): a pickle interpreter that can only build data.

Python's Unpickler calls whatever a file names (GLOBAL + REDUCE is a function call), so it is never
made safe by filtering names alone: an admitted module is a doorway to every attribute reachable
from it. This interpreter runs the pickle opcodes itself and admits:
- globals from an explicit table of exact (module, name) pairs; a dotted name is refused;
- REDUCE / NEWOBJ only on the callables of that table, each through a check of its arguments
  (types, sizes against the bytes present, dtypes plain numeric: never object arrays);
- BUILD only on a NumPy array just made by `_reconstruct` (its state checked likewise), on a dtype
  when the state changes nothing, and on an OrderedDict for plain attributes;
- no INST/OBJ/NEWOBJ_EX/EXT (they call classes or the copyreg registry), no persistent ids, no
  out-of-band buffers.
The whole file is in memory, so every length is checked against what is left before anything is
read or allocated. Errors: UnpicklingError for anything malformed or refused, EOFError for empty
input (as pickle); torch's `_weights_only_unpickler` takes the same approach.
"""
from __future__ import annotations

import _codecs
import _compat_pickle
import codecs
import collections
import pickle
import struct
from pickle import UnpicklingError

import numpy as np

from .. import dtypes as dt
from ..backends import as_device
from ..nn.parameter import Parameter
from ..tensor import Tensor, _rebuild

try:                                        # NumPy 2 renamed numpy.core to numpy._core
    from numpy._core import multiarray as _multiarray, numeric as _numeric
except ImportError:                         # pragma: no cover - NumPy 1
    from numpy.core import multiarray as _multiarray, numeric as _numeric

_PARAGRAD_DTYPES = {d.name: d for d in vars(dt).values() if isinstance(d, dt.DType)}
# dtypes NumPy arrays and scalars may have: plain numbers, and ml_dtypes' types paragrad uses
_ML_TYPES = {d.np.type for d in _PARAGRAD_DTYPES.values()
             if d.np is not None and d.np.type.__module__ == "ml_dtypes"}
# tuples and frozensets nest at most this deep: hashing a deeper one (a dict key) recurses in C
# without a guard and overflows the stack
MAX_NESTING = 100
_NUMPY_CODES = {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"}


def _globals():
    table = {("collections", "OrderedDict"): collections.OrderedDict,
             ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
             ("builtins", "slice"): slice, ("builtins", "complex"): complex,
             ("builtins", "bytearray"): bytearray, ("_codecs", "encode"): _codecs.encode,
             ("numpy", "dtype"): np.dtype, ("numpy", "ndarray"): np.ndarray,
             ("paragrad.tensor", "Tensor"): Tensor, ("paragrad.tensor", "_rebuild"): _rebuild,
             ("paragrad.nn.parameter", "Parameter"): Parameter,
             ("paragrad.dtypes", "get_dtype"): dt.get_dtype}
    for core in ("numpy.core", "numpy._core"):
        table[(f"{core}.multiarray", "_reconstruct")] = _multiarray._reconstruct
        table[(f"{core}.multiarray", "scalar")] = _multiarray.scalar
        table[(f"{core}.numeric", "_frombuffer")] = _numeric._frombuffer
    for t in _ML_TYPES:
        table[("ml_dtypes", t.__name__)] = t
    return table


GLOBALS = _globals()


def _refuse(what):
    raise UnpicklingError(f"load: weights_only=True refuses {what} (only tensors, containers and "
                          f"plain values are loaded); pass weights_only=False if you trust this file")


def _expect(ok, what):
    if not ok:
        raise UnpicklingError(f"load: malformed pickle: {what}")


def _plain_dtype(d):
    return isinstance(d, np.dtype) and d.fields is None and d.subdtype is None and not d.hasobject and d.metadata is None \
        and (d.str[1:] in _NUMPY_CODES or d.type in _ML_TYPES)


def _shape(s):
    _expect(type(s) is tuple and all(type(n) is int and n >= 0 for n in s) and len(s) <= 64,
            f"an array shape must be a tuple of non-negative ints, got {s!r:.80}")
    size = 1
    for n in s:
        size *= n
    return size


def _buffer_matches(raw, dtype, shape, what):
    _expect(type(raw) in (bytes, bytearray), f"{what}: the data must be bytes")
    _expect(_plain_dtype(dtype), f"{what}: dtype {dtype!r:.60} is not a plain numeric dtype")
    _expect(_shape(shape) * dtype.itemsize == len(raw),
            f"{what}: shape {shape} of {dtype} needs {_shape(shape) * dtype.itemsize} bytes, "
            f"{len(raw)} given")


class SafeUnpickler:
    """`SafeUnpickler(data, rebuild).load()`: the object pickled at the start of `data` (bytes);
    `rebuild` builds each tensor (paragrad.tensor._rebuild's signature); `.pos` is the end."""

    def __init__(self, data, rebuild=_rebuild):
        self.data, self.pos, self.rebuild = bytes(data), 0, rebuild
        self.stack, self.marks, self.memo, self.proto = [], [], {}, 0
        self.fresh_arrays = {}              # id -> array made by _reconstruct, awaiting its BUILD
        self.depths = {}                    # id -> (depth, tuple or frozenset), see MAX_NESTING
        self.calls = {collections.OrderedDict: self._ordered_dict, set: self._set,
                      frozenset: self._frozenset, slice: self._slice, complex: self._complex,
                      bytearray: self._bytearray, _codecs.encode: self._encode, np.dtype: self._dtype,
                      _multiarray._reconstruct: self._reconstruct, _multiarray.scalar: self._scalar,
                      _numeric._frombuffer: self._frombuffer, _rebuild: self._tensor,
                      Parameter: self._parameter, dt.get_dtype: self._get_dtype}

    # ---- reading -----------------------------------------------------------------------------
    def read(self, n):
        _expect(n >= 0, f"a negative length at offset {self.pos}")
        if n > len(self.data) - self.pos:
            raise UnpicklingError(f"load: pickle data was truncated (needs {n} bytes at offset "
                                  f"{self.pos}, {len(self.data) - self.pos} left)")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def readline(self):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise UnpicklingError(f"load: pickle data was truncated (a text argument at offset "
                                  f"{self.pos} has no end of line)")
        return self.read(end + 1 - self.pos)[:-1]

    def unpack(self, fmt):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def hashable_container(self, kind, items):
        depth = 1 + max((self.depths[id(i)][0] for i in items if id(i) in self.depths), default=0)
        _expect(depth <= MAX_NESTING, f"{kind.__name__}s nested more than {MAX_NESTING} deep")
        obj = kind(items)
        self.depths[id(obj)] = (depth, obj)
        return obj

    def pop_mark(self):
        _expect(self.marks, "MARK expected")
        items, self.stack = self.stack, self.marks.pop()
        return items

    def load(self):
        if not self.data:
            raise EOFError("Ran out of input")
        try:
            while True:
                op = self.read(1)[0]
                handler = _OPS.get(op)
                if handler is None:
                    raise UnpicklingError(f"load: unsupported pickle opcode {bytes([op])!r} at "
                                          f"offset {self.pos - 1}" + _REFUSED.get(op, ""))
                if handler(self) is _STOP:
                    _expect(len(self.stack) == 1 and not self.marks, "STOP with a malformed stack")
                    return self.stack[0]
        except (UnpicklingError, _MapLocationError):
            raise
        except Exception as e:           # a check's TypeError/ValueError/IndexError...: bad data
            raise UnpicklingError(f"load: malformed pickle at offset {self.pos}: "
                                  f"{type(e).__name__}: {e}") from e

    # ---- globals and calls -------------------------------------------------------------------
    def find_class(self, module, name):
        if self.proto < 3:
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if "." in name:
            _refuse(f"the dotted name {module}.{name} (attribute lookups are never followed)")
        if (module, name) not in GLOBALS:
            _refuse(f"{module}.{name}")
        return GLOBALS[(module, name)]

    def call(self, func, args):
        check = self.calls.get(func) if _hashable(func) else None
        if check is None:
            _refuse(f"calling {_name(func)}")
        _expect(type(args) is tuple, f"the arguments to {_name(func)} must be a tuple")
        return check(*args)

    def _ordered_dict(self, items=()):
        _expect(type(items) in (list, tuple) and all(type(p) in (list, tuple) and len(p) == 2
                                                     for p in items), "OrderedDict(items) items")
        return collections.OrderedDict(items)

    def _set(self, items=()):
        _expect(type(items) in (list, tuple), "set(items) takes a list")
        return set(items)

    def _frozenset(self, items=()):
        _expect(type(items) in (list, tuple), "frozenset(items) takes a list")
        return self.hashable_container(frozenset, items)

    def _slice(self, *args):
        _expect(1 <= len(args) <= 3 and all(a is None or type(a) is int for a in args), "slice args")
        return slice(*args)

    def _complex(self, real=0.0, imag=0.0):
        _expect(type(real) in (int, float) and type(imag) in (int, float), "complex args")
        return complex(real, imag)

    def _bytearray(self, data=b"", encoding=None):
        # never bytearray(n): that allocates n bytes the file doesn't hold
        if encoding is None:
            _expect(type(data) is bytes, "bytearray(bytes)")
            return bytearray(data)
        return bytearray(self._encode(data, encoding))

    def _encode(self, text, encoding):
        _expect(type(text) is str and encoding in ("latin1", "latin-1"), "_codecs.encode(str, 'latin1')")
        return codecs.encode(text, "latin1")

    def _dtype(self, code, align=False, copy=True):
        _expect(type(align) is bool and type(copy) is bool, "numpy.dtype args")
        if not ((type(code) is str and code in _NUMPY_CODES) or code in _ML_TYPES):
            _refuse(f"the numpy dtype {code!r:.60}")
        return np.dtype(code)

    def _reconstruct(self, cls, shape, typecode):
        # what ndarray.__reduce__ writes; the contents come with the BUILD that follows
        _expect(cls is np.ndarray and shape == (0,) and typecode == b"b",
                "numpy _reconstruct(ndarray, (0,), b'b')")
        arr = _multiarray._reconstruct(np.ndarray, (0,), b"b")
        self.fresh_arrays[id(arr)] = arr
        return arr

    def _scalar(self, dtype, raw):
        _buffer_matches(raw, dtype, (), "numpy scalar")
        return _multiarray.scalar(dtype, bytes(raw))

    def _frombuffer(self, buf, dtype, shape, order):
        _buffer_matches(buf, dtype, shape, "numpy array")
        _expect(order in ("C", "F"), "numpy array order")
        return _numeric._frombuffer(bytes(buf), dtype, shape, order)

    def _array(self, arr, what):
        _expect(type(arr) is np.ndarray and id(arr) not in self.fresh_arrays
                and _plain_dtype(arr.dtype), f"{what} needs a built numeric NumPy array")

    def _tensor(self, cls, arr, dtype_name, device, requires_grad, attrs):
        _expect(cls in (Tensor, Parameter), "a tensor's class")
        self._array(arr, "a tensor")
        _expect(type(dtype_name) is str and dtype_name in _PARAGRAD_DTYPES, "a tensor's dtype")
        dtype = _PARAGRAD_DTYPES[dtype_name]
        _expect(arr.dtype == dtype.to_numpy(), f"a {dtype_name} tensor's data is {arr.dtype}")
        _expect(type(device) is str and type(requires_grad) is bool, "a tensor's device/requires_grad")
        as_device(device)
        _expect(dtype.is_floating_point or not requires_grad, "requires_grad on an integer tensor")
        # extra Python attributes may not shadow anything a Tensor has (methods, fields)
        _expect(attrs is None or (type(attrs) is dict and all(
            type(k) is str and not hasattr(cls, k) for k in attrs)), "a tensor's attributes")
        try:
            return self.rebuild(cls, arr, dtype_name, device, requires_grad, attrs)
        except Exception as e:            # map_location's own errors (no CUDA, user callable)
            raise _MapLocationError(e) from e

    def _parameter(self, data, requires_grad=True):
        _expect(type(data) is Tensor and type(requires_grad) is bool, "Parameter(Tensor, bool)")
        _expect(data.dtype.is_floating_point or not requires_grad, "requires_grad on integer data")
        return Parameter(data, requires_grad)

    def _get_dtype(self, name):
        _expect(type(name) is str and name in _PARAGRAD_DTYPES, f"paragrad dtype {name!r:.40}")
        return _PARAGRAD_DTYPES[name]

    def build(self, inst, state):
        if type(inst) is np.ndarray and id(inst) in self.fresh_arrays:
            _expect(type(state) is tuple and len(state) == 5 and state[0] == 1
                    and type(state[3]) is bool, "a NumPy array's state")
            _, shape, dtype, _, raw = state
            _buffer_matches(raw, dtype, shape, "numpy array")
            inst.__setstate__(state)
            del self.fresh_arrays[id(inst)]
        elif isinstance(inst, np.dtype):
            # np.dtype('f4') is NumPy's shared instance: accept only the state it already has
            _expect(state == inst.__reduce__()[2], f"dtype state {state!r:.80}")
        elif type(inst) is collections.OrderedDict:
            _expect(type(state) is dict and all(type(k) is str and not hasattr(inst, k)
                                                for k in state), "an OrderedDict's attributes")
            inst.__dict__.update(state)
        else:
            _refuse(f"setting the state of a {type(inst).__name__}")


class _MapLocationError(Exception):
    """Carries an error of map_location out of the loop that turns others into UnpicklingError."""


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False


def _name(x):
    return getattr(x, "__qualname__", type(x).__name__)


_STOP = object()
_REFUSED = {op[0]: f" ({why})" for op, why in [
    (pickle.INST, "INST calls a class"), (pickle.OBJ, "OBJ calls a class"),
    (pickle.NEWOBJ_EX, "NEWOBJ_EX calls a class"), (pickle.EXT1, "extension registry"),
    (pickle.EXT2, "extension registry"), (pickle.EXT4, "extension registry"),
    (pickle.PERSID, "a persistent id: not a file written by pg.save"),
    (pickle.BINPERSID, "a persistent id: not a file written by pg.save"),
    (pickle.NEXT_BUFFER, "out-of-band buffers")]}


def _op(code):
    def register(fn):
        _OPS[code[0]] = fn
        return fn
    return register


_OPS = {}


# ---- the opcodes, as pickle.py defines them -------------------------------------------------
def _push(value):
    return lambda u: u.stack.append(value)


for _code, _value in [(pickle.NONE, None), (pickle.NEWTRUE, True), (pickle.NEWFALSE, False),
                      (pickle.EMPTY_TUPLE, ())]:
    _op(_code)(_push(_value))
_op(pickle.EMPTY_LIST)(lambda u: u.stack.append([]))
_op(pickle.EMPTY_DICT)(lambda u: u.stack.append({}))
_op(pickle.EMPTY_SET)(lambda u: u.stack.append(set()))
_op(pickle.STOP)(lambda u: _STOP)
_op(pickle.FRAME)(lambda u: u.unpack("<Q"))         # the whole file is in memory already
_op(pickle.BININT)(lambda u: u.stack.append(u.unpack("<i")))
_op(pickle.BININT1)(lambda u: u.stack.append(u.read(1)[0]))
_op(pickle.BININT2)(lambda u: u.stack.append(u.unpack("<H")))
_op(pickle.LONG1)(lambda u: u.stack.append(int.from_bytes(u.read(u.read(1)[0]), "little", signed=True)))
_op(pickle.BINFLOAT)(lambda u: u.stack.append(u.unpack(">d")))
_op(pickle.FLOAT)(lambda u: u.stack.append(float(u.readline())))
_op(pickle.BINUNICODE)(lambda u: u.stack.append(str(u.read(u.unpack("<I")), "utf-8", "surrogatepass")))
_op(pickle.SHORT_BINUNICODE)(lambda u: u.stack.append(str(u.read(u.read(1)[0]), "utf-8", "surrogatepass")))
_op(pickle.BINUNICODE8)(lambda u: u.stack.append(str(u.read(u.unpack("<Q")), "utf-8", "surrogatepass")))
_op(pickle.UNICODE)(lambda u: u.stack.append(str(u.readline(), "raw-unicode-escape")))
_op(pickle.BINBYTES)(lambda u: u.stack.append(bytes(u.read(u.unpack("<I")))))
_op(pickle.SHORT_BINBYTES)(lambda u: u.stack.append(bytes(u.read(u.read(1)[0]))))
_op(pickle.BINBYTES8)(lambda u: u.stack.append(bytes(u.read(u.unpack("<Q")))))
_op(pickle.BYTEARRAY8)(lambda u: u.stack.append(bytearray(u.read(u.unpack("<Q")))))
# Python 2 strings decode as ASCII, pickle's default
_op(pickle.BINSTRING)(lambda u: u.stack.append(str(u.read(u.unpack("<i")), "ascii")))
_op(pickle.SHORT_BINSTRING)(lambda u: u.stack.append(str(u.read(u.read(1)[0]), "ascii")))
_op(pickle.MARK)(lambda u: (u.marks.append(u.stack), setattr(u, "stack", [])))
_op(pickle.POP_MARK)(lambda u: u.pop_mark())
_op(pickle.DUP)(lambda u: u.stack.append(u.stack[-1]))


@_op(pickle.TUPLE)
def _tuple(u):
    items = u.pop_mark()            # before touching u.stack: this replaces it
    u.stack.append(u.hashable_container(tuple, items))


@_op(pickle.LIST)
def _list(u):
    items = u.pop_mark()
    u.stack.append(items)


_op(pickle.MEMOIZE)(lambda u: u.memo.__setitem__(len(u.memo), u.stack[-1]))
_op(pickle.BINPUT)(lambda u: u.memo.__setitem__(u.read(1)[0], u.stack[-1]))
_op(pickle.LONG_BINPUT)(lambda u: u.memo.__setitem__(u.unpack("<I"), u.stack[-1]))
_op(pickle.PUT)(lambda u: u.memo.__setitem__(int(u.readline()), u.stack[-1]))
_op(pickle.BINGET)(lambda u: u.stack.append(u.memo[u.read(1)[0]]))
_op(pickle.LONG_BINGET)(lambda u: u.stack.append(u.memo[u.unpack("<I")]))
_op(pickle.GET)(lambda u: u.stack.append(u.memo[int(u.readline())]))


@_op(pickle.PROTO)
def _proto(u):
    u.proto = u.read(1)[0]
    _expect(u.proto <= pickle.HIGHEST_PROTOCOL, f"unsupported pickle protocol {u.proto}")


@_op(pickle.LONG4)
def _long4(u):
    n = u.unpack("<i")
    _expect(n >= 0, "LONG4 with a negative length")
    u.stack.append(int.from_bytes(u.read(n), "little", signed=True))


@_op(pickle.INT)
def _int(u):
    text = u.readline()
    u.stack.append({b"00": False, b"01": True}[text] if text in (b"00", b"01") else int(text))


@_op(pickle.LONG)
def _long(u):
    text = u.readline()
    u.stack.append(int(text[:-1] if text.endswith(b"L") else text))


@_op(pickle.STRING)
def _string(u):
    text = u.readline()
    _expect(len(text) >= 2 and text[0] == text[-1] and text[:1] in (b"'", b'"'), "STRING quotes")
    u.stack.append(str(codecs.escape_decode(text[1:-1])[0], "ascii"))


@_op(pickle.POP)
def _pop(u):
    if u.stack:
        u.stack.pop()
    else:
        u.pop_mark()


def _tuple_of(n):
    def load_tuple(u):
        _expect(len(u.stack) >= n, f"TUPLE{n} with too few items")
        u.stack[-n:] = [u.hashable_container(tuple, u.stack[-n:])]
    return load_tuple


for _n, _code in enumerate((pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3), 1):
    _op(_code)(_tuple_of(_n))


def _target(u, kind, types):
    _expect(u.stack, f"{kind} without a target")
    target = u.stack[-1]
    _expect(type(target) in types, f"{kind} into a {type(target).__name__}")
    return target


@_op(pickle.APPEND)
def _append(u):
    value = u.stack.pop()
    _target(u, "APPEND", (list,)).append(value)


@_op(pickle.APPENDS)
def _appends(u):
    items = u.pop_mark()
    _target(u, "APPENDS", (list,)).extend(items)


@_op(pickle.DICT)
def _dict(u):
    items = u.pop_mark()
    _expect(len(items) % 2 == 0, "DICT with an odd number of items")
    u.stack.append(dict(zip(items[::2], items[1::2])))


@_op(pickle.SETITEM)
def _setitem(u):
    value, key = u.stack.pop(), u.stack.pop()
    _target(u, "SETITEM", (dict, collections.OrderedDict))[key] = value


@_op(pickle.SETITEMS)
def _setitems(u):
    items = u.pop_mark()
    _expect(len(items) % 2 == 0, "SETITEMS with an odd number of items")
    target = _target(u, "SETITEMS", (dict, collections.OrderedDict))
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


@_op(pickle.ADDITEMS)
def _additems(u):
    items = u.pop_mark()
    _target(u, "ADDITEMS", (set,)).update(items)


@_op(pickle.FROZENSET)
def _frozenset(u):
    items = u.pop_mark()
    u.stack.append(u.hashable_container(frozenset, items))


@_op(pickle.READONLY_BUFFER)
def _readonly(u):
    _target(u, "READONLY_BUFFER", (bytes, bytearray))
    u.stack[-1] = bytes(u.stack[-1])


@_op(pickle.GLOBAL)
def _global(u):
    module, name = u.readline(), u.readline()
    u.stack.append(u.find_class(module.decode("utf-8"), name.decode("utf-8")))


@_op(pickle.STACK_GLOBAL)
def _stack_global(u):
    name, module = u.stack.pop(), u.stack.pop()
    _expect(type(module) is str and type(name) is str, "STACK_GLOBAL takes two strings")
    u.stack.append(u.find_class(module, name))


@_op(pickle.REDUCE)
def _reduce(u):
    args = u.stack.pop()
    u.stack[-1] = u.call(u.stack[-1], args)


@_op(pickle.NEWOBJ)
def _newobj(u):
    # complex pickles as copyreg.__newobj__(complex, re, im): cls.__new__(cls, *args)
    args, cls = u.stack.pop(), u.stack.pop()
    if cls is not complex:
        _refuse(f"creating a {_name(cls)} (NEWOBJ)")
    u.stack.append(u.call(cls, args))


@_op(pickle.BUILD)
def _build(u):
    state = u.stack.pop()
    _expect(u.stack, "BUILD without an object")
    u.build(u.stack[-1], state)

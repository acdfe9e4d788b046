"""pg.load(weights_only=True) runs no code a file names: a corpus of malicious pickles (os.system,
subprocess, eval/exec/getattr/__import__, dotted walks from every admitted module, INST/OBJ/NEWOBJ/
EXT/persistent ids, object arrays, crafted tensor and array states), each nested in containers
and written at every protocol, is refused with UnpicklingError and leaves no marker file; what
pg.save writes still loads."""
import collections
import copyreg
import importlib
import io
import os
import pickle
import struct
import subprocess
import types

import numpy as np
import pytest

import paragrad as pg
from paragrad.io.safe_unpickler import GLOBALS


class _Reduce:
    """Pickles as func(*args): what an attacker's __reduce__ writes."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


# ---- a small pickle assembler -------------------------------------------------------------
def _s(text):                           # SHORT_BINUNICODE / BINUNICODE
    b = text.encode()
    return (b"\x8c" + bytes([len(b)]) if len(b) < 256 else b"X" + struct.pack("<I", len(b))) + b


def _i(n):
    return b"J" + struct.pack("<i", n) if -2**31 <= n < 2**31 else pickle.dumps(n, 2)[2:-1]


def _glob(module, name, stack=False):
    if stack:
        return _s(module) + _s(name) + b"\x93"
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _tup(*items):
    return b"(" + b"".join(items) + b"t"


def _call(fn, *args):
    return fn + _tup(*args) + b"R"


def _p(body, proto=4):
    return b"\x80" + bytes([proto]) + body + b"."


def _touch(marker):
    return f"touch {marker}"


def _tensor_body():
    buf = io.BytesIO()
    pg.save(pg.ones(2), buf)
    return buf.getvalue()[2:-1]         # without PROTO and STOP


def _dumps_all_protocols(name, make):
    return {f"{name}-p{proto}": (lambda m, proto=proto: pickle.dumps(make(m), protocol=proto))
            for proto in range(6)}


def _path_to_os(module, depth=4):
    """An attribute path from `module` to the os module, through submodules (what a dotted
    global name would walk), or None."""
    seen, frontier = set(), [(module, "")]
    for _ in range(depth):
        nxt = []
        for mod, path in frontier:
            for attr, value in sorted(vars(mod).items()):
                if isinstance(value, types.ModuleType) and id(value) not in seen:
                    seen.add(id(value))
                    p = f"{path}{attr}"
                    if value is os:
                        return p
                    nxt.append((value, p + "."))
        frontier = nxt
    return None


def _corpus():
    c = {}
    c.update(_dumps_all_protocols("os.system", lambda m: _Reduce(os.system, _touch(m))))
    c.update(_dumps_all_protocols("subprocess.Popen", lambda m: _Reduce(subprocess.Popen, ["touch", m])))
    c.update(_dumps_all_protocols("eval", lambda m: _Reduce(eval, f"open({str(m)!r}, 'w')")))
    c.update(_dumps_all_protocols("exec", lambda m: _Reduce(exec, f"open({str(m)!r}, 'w')")))
    nests = {"dict": lambda e: {"a": e}, "list": lambda e: [1, e], "tuple": lambda e: (e,),
             "OrderedDict": lambda e: collections.OrderedDict(w=e), "set": lambda e: {e},
             "deep": lambda e: {"a": [{"b": (collections.OrderedDict(c=[e]),)}]},
             "state_dict": lambda e: {"weight": pg.ones(2), "bias": pg.zeros(1), "x": e}}
    for nest, wrap in nests.items():
        c.update(_dumps_all_protocols(f"in-{nest}", lambda m, w=wrap: w(_Reduce(os.system, _touch(m)))))

    def getattr_chain(m, stack):
        imp = _call(_glob("builtins", "__import__", stack), _s("os"))
        return _p(_call(_call(_glob("builtins", "getattr", stack), imp, _s("system")), _s(_touch(m))))
    c["getattr(__import__('os'))"] = lambda m: getattr_chain(m, False)
    c["getattr-stack-global"] = lambda m: getattr_chain(m, True)
    c["__import__"] = lambda m: _p(_call(_glob("builtins", "__import__"), _s("os")))
    c["__reduce__-chain"] = lambda m: _p(_call(_call(
        _glob("builtins", "getattr"), _call(_glob("importlib", "import_module"), _s("os")), _s("system")),
        _s(_touch(m))), 2)

    # dotted names from every admitted module: through submodules to os.system where there is a
    # way, and to attributes of each admitted object anyway
    for module in sorted({mod for mod, _ in GLOBALS}):
        path = _path_to_os(importlib.import_module(module))
        names = [f"{path}.system"] if path else []
        names += [f"{n}.__reduce_ex__" for mod, n in sorted(GLOBALS) if mod == module][:2]
        for name in names:
            for stack in (False, True):
                c[f"dotted-{module}:{name}-{'stack' if stack else 'global'}"] = (
                    lambda m, mod=module, n=name, st=stack: _p(_call(_glob(mod, n, st), _s(_touch(m)))))

    # opcodes that call classes or registries
    c["INST"] = lambda m: b"(S'" + _touch(m).encode() + b"'\nios\nsystem\n."
    c["OBJ"] = lambda m: _p(b"(" + _glob("os", "system") + _s(_touch(m)) + b"o")
    c["NEWOBJ-Popen"] = lambda m: _p(_glob("subprocess", "Popen")
                                     + _tup(b"]" + _s("touch") + b"a" + _s(str(m)) + b"a") + b"\x81")
    c["NEWOBJ-Tensor"] = lambda m: _p(_glob("paragrad.tensor", "Tensor") + b")\x81")
    c["NEWOBJ_EX"] = lambda m: _p(_glob("subprocess", "Popen") + _tup(_s(_touch(m))) + b"}\x92")
    c["PERSID"] = lambda m: b"Pos.system\n."
    c["BINPERSID"] = lambda m: _p(_s(_touch(m)) + b"Q")
    for op, code in ((b"\x82", b"\xf1"), (b"\x83", struct.pack("<H", 0x1f1)),
                     (b"\x84", struct.pack("<i", 0x1f1f1))):
        c[f"EXT{op[0] - 0x81}"] = lambda m, op=op, code=code: _p(op + code + _tup(_s(_touch(m))) + b"R")

    # NumPy: object arrays and dtypes, unchecked encodings and sizes
    c.update(_dumps_all_protocols("object-array", lambda m: np.array([1, "a"], dtype=object)))
    c.update(_dumps_all_protocols("object-dtype", lambda m: np.dtype(object)))
    c["structured-dtype"] = lambda m: pickle.dumps(np.dtype([("a", "f4"), ("b", "O")]), 2)
    c["object-scalar"] = lambda m: _p(_call(_glob("numpy._core.multiarray", "scalar"),
                                            _call(_glob("numpy", "dtype"), _s("O8"), b"\x89\x88"), _s("x")))
    reconstruct = _call(_glob("numpy._core.multiarray", "_reconstruct"), _glob("numpy", "ndarray"),
                        _tup(_i(0)), b"C\x01b")
    f4 = _call(_glob("numpy", "dtype"), _s("f4"), b"\x89\x88")
    c["array-state-object-list"] = lambda m: _p(
        reconstruct + _tup(_i(1), _tup(_i(1)), _call(_glob("numpy", "dtype"), _s("O8"), b"\x89\x88"),
                           b"\x89", b"]" + _s("x") + b"a") + b"b")
    c["array-state-huge-shape"] = lambda m: _p(
        reconstruct + _tup(_i(1), _tup(_i(2**40), _i(2**40)), f4, b"\x89", b"C\x04abcd") + b"b")
    c["array-built-twice"] = lambda m: _p(
        reconstruct + b"\x94" + _tup(_i(1), _tup(_i(1)), f4, b"\x89", b"C\x04abcd") + b"b0"
        + b"h\x00" + _tup(_i(1), _tup(_i(2)), f4, b"\x89", b"C\x08abcdefgh") + b"b")
    c["dtype-state-change"] = lambda m: _p(f4 + _tup(_i(3), _s(">"), b"NNN", _i(-1), _i(-1), _i(0)) + b"b")
    c["codecs-rot13"] = lambda m: _p(_call(_glob("_codecs", "encode"), _s("x"), _s("rot13")))
    c["bytearray(2**40)"] = lambda m: _p(_call(_glob("builtins", "bytearray"), _i(2**40)))

    # tensors: their states and constructors only build tensors
    body = _tensor_body()
    c["tensor-BUILD"] = lambda m: _p(body + b"}" + _s("_data") + _s("x") + b"sb", 2)
    c["tensor-BUILD-slots"] = lambda m: _p(body + b"N}" + _s("dtype") + _s("x") + b"s\x86b", 2)
    c["tensor-SETITEM"] = lambda m: _p(body + _i(0) + _i(1) + b"s", 2)
    c["_rebuild-attrs-shadow"] = lambda m: _p(
        body.replace(b"\x89N", b"\x89}" + _s("numpy") + _s("x") + b"s"), 2)
    c["_rebuild-cls-OrderedDict"] = lambda m: _p(
        body.replace(b"cparagrad.tensor\nTensor\n", b"ccollections\nOrderedDict\n"), 2)
    c["_rebuild-int-requires-grad"] = lambda m: pickle.dumps(
        _Reduce(_rebuild(), pg.Tensor,
                np.ones(2, np.int64), "int64", "cpu", True, None), 2)
    c["Parameter(not a tensor)"] = lambda m: _p(_call(_glob("paragrad.nn.parameter", "Parameter"), _s("x")))
    c["OrderedDict-BUILD-shadow"] = lambda m: _p(
        _call(_glob("collections", "OrderedDict")) + b"}" + _s("keys") + _s("x") + b"sb")
    c["APPEND-into-array"] = lambda m: _p(reconstruct + _i(1) + b"a")
    c["memo-get-unset"] = lambda m: _p(b"h\x05")
    return c


def _rebuild():
    from paragrad.tensor import _rebuild as rebuild
    return rebuild


CORPUS = _corpus()


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_malicious_pickle_is_refused_without_side_effects(name, tmp_path):
    marker = tmp_path / "pwned"
    payload = CORPUS[name](marker)
    with pytest.raises(pickle.UnpicklingError):
        pg.load(io.BytesIO(payload))
    assert not marker.exists()


def test_corpus_payloads_are_live(tmp_path):
    # the refusals above mean something only if Python's own unpickler runs the payloads
    dotted = [n for n in CORPUS if n.startswith("dotted-ml_dtypes:") and n.endswith("system-stack")]
    live = ["os.system-p0", "os.system-p2", "os.system-p5", "in-deep-p4", "in-state_dict-p2",
            "getattr(__import__('os'))", "__reduce__-chain", "INST", *dotted]
    for i, name in enumerate(live):
        marker = tmp_path / f"marker{i}"
        pickle.loads(CORPUS[name](marker))
        assert marker.exists(), name


def test_extension_registry_is_never_consulted(tmp_path):
    # with os.system registered as an extension code, EXT must still be refused
    marker = tmp_path / "pwned"
    copyreg.add_extension("os", "system", 0xf1)
    try:
        assert pickle.loads(CORPUS["EXT1"](marker)) == 0 and marker.exists()
        marker.unlink()
        with pytest.raises(pickle.UnpicklingError, match="extension registry"):
            pg.load(io.BytesIO(CORPUS["EXT1"](marker)))
        assert not marker.exists()
    finally:
        copyreg.remove_extension("os", "system", 0xf1)


def test_issue_reproduction_ml_dtypes_dotted_walk(tmp_path):
    marker = tmp_path / "PWNED"
    n, c = b"_np.testing._private.utils.os.system", f"touch {marker}".encode()
    payload = b"\x80\x04\x8c\x09ml_dtypes\x8c" + bytes([len(n)]) + n + b"\x93\x8c" + bytes([len(c)]) + c + b"\x85R."
    with pytest.raises(pickle.UnpicklingError, match="dotted name ml_dtypes._np"):
        pg.load(io.BytesIO(payload))
    assert not marker.exists()


def test_refusals_name_what_was_refused():
    with pytest.raises(pickle.UnpicklingError, match="refuses posix.system"):
        pg.load(io.BytesIO(pickle.dumps(_Reduce(os.system, "true"), 2)))
    with pytest.raises(pickle.UnpicklingError, match="numpy dtype 'O8'"):
        pg.load(io.BytesIO(pickle.dumps(np.array([None]), 2)))
    with pytest.raises(pickle.UnpicklingError, match="persistent id"):
        pg.load(io.BytesIO(CORPUS["BINPERSID"]("x")))


@pytest.mark.parametrize("proto", range(6))
def test_what_save_writes_still_loads_at_every_protocol(proto):
    obj = {"w": pg.ones(2, 3, dtype=pg.bfloat16), "p": pg.nn.Parameter(pg.randn(2)),
           "sd": pg.nn.Linear(2, 2).state_dict(), "np": np.arange(4, dtype=np.uint16).reshape(2, 2)[:, ::-1],
           "scalars": [np.float32(1.5), np.int64(-3), np.complex64(1j)], "big": 2**100,
           "values": (None, True, 1.25, "é", b"\x00\xff", bytearray(b"ab"), {1, 2}, frozenset({3}),
                      slice(1, None, 2), 1 + 2j), "dtype": pg.float16}
    buf = io.BytesIO()
    pg.save(obj, buf, pickle_protocol=proto)
    buf.seek(0)
    out = pg.load(buf)
    assert out["w"].dtype is pg.bfloat16 and out["w"].tolist() == [[1.0] * 3] * 2
    assert type(out["p"]) is pg.nn.Parameter and out["p"].requires_grad
    assert list(out["sd"]) == ["weight", "bias"] and type(out["sd"]) is collections.OrderedDict
    assert np.array_equal(out["np"], obj["np"]) and out["scalars"] == obj["scalars"]
    assert out["big"] == 2**100 and out["values"] == obj["values"] and out["dtype"] is pg.float16


def test_objects_saved_one_after_another_in_one_stream_load_in_turn():
    buf = io.BytesIO()
    pg.save(pg.ones(1), buf)
    pg.save({"b": 2}, buf)
    buf.seek(0)
    assert pg.load(buf).tolist() == [1.0] and pg.load(buf) == {"b": 2}
    buf.seek(0)
    assert pg.load(buf, weights_only=False).tolist() == [1.0] and pg.load(buf, weights_only=False) == {"b": 2}


def test_map_location_errors_are_not_disguised():
    buf = io.BytesIO()
    pg.save(pg.ones(1), buf)
    buf.seek(0)
    with pytest.raises(ZeroDivisionError):
        pg.load(buf, map_location=lambda t, where: 1 / 0)


@pytest.mark.parametrize("container", ["tuple", "frozenset"])
def test_deeply_nested_keys_are_refused_not_a_stack_overflow(container):
    # hashing a tuple nested 200,000 deep (a dict key) overflows the C stack: a segfault
    depth = 200_000
    nested = b")" + b"\x85" * depth if container == "tuple" else b"(" * depth + b"\x91" * depth
    with pytest.raises(pickle.UnpicklingError, match="nested more than 100 deep"):
        pg.load(io.BytesIO(_p(b"}" + nested + _i(1) + b"s")))

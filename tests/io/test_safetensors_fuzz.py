"""paragrad.io.safetensors.load_file on malformed files: each defect (header length beyond the file,
non-JSON, offsets out of range / overlapping / not matching the shape, unknown dtypes, huge or
negative or non-list shapes, duplicate names, holes) is a SafetensorsError naming the file and the
tensor, raised before any allocation the file doesn't back; fuzzed damage to a real file gives
that error or a load identical to the `safetensors` package's."""
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from paragrad import dtypes as dt
from paragrad.io.safetensors import SafetensorsError, load_file, save_file

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _raw(header, body=b""):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def _t(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


CASES = {   # name: (file bytes, message pattern)
    "header beyond file": (struct.pack("<Q", 10**6) + b"{}", "header of 1000000 bytes"),
    "huge header length": (struct.pack("<Q", 2**64 - 1) + b"{}", "header of 18446744073709551615"),
    "non-JSON header": (_raw(b"{not json"), "corrupt header"),
    "non-UTF-8 header": (_raw(b'{"\xff": 1}'), "corrupt header"),
    "header not an object": (_raw([1, 2]), "not a JSON object"),
    "deeply nested JSON": (_raw(b"[" * 100000 + b"]" * 100000), "corrupt header"),
    "entry not an object": (_raw({"w": [1, 2]}), "tensor 'w': expected"),
    "missing data_offsets": (_raw({"w": {"dtype": "F32", "shape": [2]}}, bytes(8)), "tensor 'w': expected"),
    "unknown dtype": (_raw({"w": _t("XYZ")}, bytes(8)), "tensor 'w': unknown or unsupported dtype 'XYZ'"),
    "unsupported float8": (_raw({"w": _t("F8_E4M3", offsets=(0, 2))}, bytes(2)), "tensor 'w'.*'F8_E4M3'"),
    "dtype not a string": (_raw({"w": _t(["F32"])}, bytes(8)), "tensor 'w': unknown"),
    "offsets beyond file": (_raw({"w": _t(offsets=(0, 8))}, bytes(4)), "tensor 'w': truncated"),
    "offsets reversed": (_raw({"w": _t(offsets=(8, 0))}, bytes(8)), "tensor 'w': data_offsets"),
    "negative offset": (_raw({"w": _t(offsets=(-8, 0))}, bytes(8)), "tensor 'w': data_offsets"),
    "float offset": (_raw({"w": _t(offsets=(0.0, 8.0))}, bytes(8)), "tensor 'w': data_offsets"),
    "three offsets": (_raw({"w": _t(offsets=(0, 4, 8))}, bytes(8)), "tensor 'w': data_offsets"),
    "size not shape*itemsize": (_raw({"w": _t(shape=(3,))}, bytes(8)), "tensor 'w': shape \\[3\\] of F32 needs 12"),
    "huge shape": (_raw({"w": _t(shape=(2**40, 2**40))}, bytes(8)), "tensor 'w': shape .* needs 4835703278458516698824704"),
    # 2**32 * 2**32 elements wrap to 0 in int64 arithmetic: they must not pass as 0 bytes
    "shape wrapping int64": (_raw({"w": _t(shape=(2**32, 2**32), offsets=(0, 0))}), "tensor 'w': shape"),
    "negative shape": (_raw({"w": _t(shape=(-2, -1))}, bytes(8)), "tensor 'w': shape must be"),
    "string shape": (_raw({"w": {"dtype": "U8", "shape": "ab", "data_offsets": [0, 2]}}, bytes(2)),
                     "tensor 'w': shape must be"),
    "bool shape": (_raw({"w": _t("U8", shape=(True, True), offsets=(0, 1))}, bytes(1)), "tensor 'w': shape must be"),
    "overlapping tensors": (_raw({"a": _t(offsets=(0, 8)), "b": _t(offsets=(4, 12))}, bytes(12)),
                            "tensor 'b' \\(bytes 4:12\\) overlaps tensor 'a'"),
    "same bytes twice": (_raw({"a": _t(), "b": _t()}, bytes(8)), "overlaps"),
    "hole between tensors": (_raw({"a": _t(offsets=(0, 8)), "b": _t(offsets=(12, 20))}, bytes(20)),
                             "bytes 8:12 before tensor 'b' belong to no tensor"),
    "trailing bytes": (_raw({"a": _t()}, bytes(12)), "end at byte 8 of a data section of 12"),
    "duplicate name": (_raw(b'{"w": %s, "w": %s}' % (json.dumps(_t()).encode(), json.dumps(_t()).encode()),
                            bytes(8)), "tensor 'w' appears twice"),
    "metadata not a dict": (_raw({"__metadata__": [1], "w": _t()}, bytes(8)), "__metadata__"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_file_is_a_clear_error(name, tmp_path):
    data, pattern = CASES[name]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(SafetensorsError, match=pattern) as info:
        load_file(path)
    assert str(path) in str(info.value)


def test_well_formed_edge_cases_load(tmp_path):
    # empty tensors, scalars and tensors given out of offset order are all valid safetensors
    path = tmp_path / "ok.safetensors"
    path.write_bytes(_raw({"b": _t(offsets=(8, 16)), "a": _t(), "s": _t(shape=(), offsets=(16, 20)),
                           "e": _t(shape=(0, 3), offsets=(20, 20))}, bytes(20)))
    arrays, meta = load_file(path)
    assert list(arrays) == ["b", "a", "s", "e"] and meta == {}
    assert arrays["s"][0].shape == () and arrays["e"][0].shape == (0, 3)


def _valid_file(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"w": (rng.standard_normal((3, 4)).astype(np.float32), dt.float32),
              "b": (np.arange(4, dtype=np.int64), dt.int64),
              "h": (rng.standard_normal(5).astype(dt.bfloat16.to_numpy()), dt.bfloat16),
              "m": (np.array([True, False]), dt.bool_)}
    path = tmp_path / "valid.safetensors"
    save_file(arrays, path, {"step": 3})
    return path.read_bytes()


def _check_like_reference(data, tmp_path):
    path = tmp_path / "fuzzed.safetensors"
    path.write_bytes(data)
    try:
        ours, _ = load_file(path)
    except SafetensorsError as e:
        assert str(path) in str(e)
        return
    from safetensors import deserialize     # the reference reader (Rust), raw bytes per tensor
    theirs = {name: t for name, t in deserialize(data)}
    assert set(ours) == set(theirs)
    for k, (arr, dtype) in ours.items():
        assert arr.tobytes() == bytes(theirs[k]["data"]) and list(arr.shape) == theirs[k]["shape"]
        assert arr.nbytes <= len(data)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)), min_size=1, max_size=6))
def test_fuzz_bit_flips(tmp_path_factory, flips):
    data = bytearray(_work(tmp_path_factory)[0])
    for pos, bit in flips:
        data[pos % len(data)] ^= 1 << bit
    _check_like_reference(bytes(data), _work(tmp_path_factory)[1])


@FUZZ
@given(st.integers(0, 10**6), st.integers(0, 16), st.integers(0, 10**6), st.integers(0, 32))
def test_fuzz_truncation_and_splices(tmp_path_factory, at, cut, src, length):
    data, folder = _work(tmp_path_factory)
    at, src = at % len(data), src % len(data)
    _check_like_reference(data[:at] + data[src:src + length] + data[at + cut:], folder)


@FUZZ
@given(st.dictionaries(st.text(max_size=3), st.fixed_dictionaries({
    "dtype": st.sampled_from(["F32", "BF16", "U8", "I64", "F8_E5M2", "", 3]),
    "shape": st.one_of(st.lists(st.integers(-2, 2**40), max_size=3), st.integers(), st.text(max_size=2)),
    "data_offsets": st.lists(st.integers(-4, 40), max_size=3)}), max_size=3), st.integers(0, 40))
def test_fuzz_headers(tmp_path_factory, header, body_size):
    _check_like_reference(_raw(header, bytes(body_size)), _work(tmp_path_factory)[1])


_CACHE = {}


def _work(factory):
    """(a valid file's bytes, a folder for fuzzed files), made once per session."""
    if not _CACHE:
        folder = factory.mktemp("safetensors_fuzz")
        _CACHE["work"] = (_valid_file(folder), folder)
    return _CACHE["work"]

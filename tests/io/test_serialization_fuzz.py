"""pg.load(weights_only=True) on random bytes and on damaged real files (bit flips, truncation,
splices of a saved model + optimizer state): it returns something or raises
pickle.UnpicklingError (EOFError for empty input), never anything else: no other exception,
no crash, no huge allocation, no hang. Bounded and derandomized for CI."""
import io
import pickle

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import paragrad as pg

from tests.helpers import check_raises

CONTRACT = (pickle.UnpicklingError, EOFError)
FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _saved(proto):
    pg.manual_seed(0)
    model = pg.nn.Sequential(pg.nn.Linear(3, 4), pg.nn.LayerNorm(4))
    opt = pg.optim.Adam(model.parameters())
    model(pg.randn(2, 3)).sum().backward()
    opt.step()
    obj = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 1,
           "half": pg.ones(2, dtype=pg.bfloat16), "misc": [1.5, "x", None, (2, 3), {4}]}
    buf = io.BytesIO()
    pg.save(obj, buf, pickle_protocol=proto)
    return buf.getvalue()


VALID = {proto: _saved(proto) for proto in (2, 4, 5)}


def _load_within_contract(data):
    try:
        pg.load(io.BytesIO(data))
    except CONTRACT:
        pass


@pytest.mark.parametrize("proto", sorted(VALID))
def test_the_unmutated_files_load(proto):
    out = pg.load(io.BytesIO(VALID[proto]))
    assert out["step"] == 1 and list(out["model"]) == ["0.weight", "0.bias", "1.weight", "1.bias"]


@FUZZ
@given(st.one_of(st.binary(max_size=512),
                 st.builds(lambda p, b: b"\x80" + bytes([p]) + b, st.integers(0, 6), st.binary(max_size=512))))
def test_random_bytes(data):
    _load_within_contract(data)


@FUZZ
@given(st.sampled_from(sorted(VALID)), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)),
                                                min_size=1, max_size=8))
def test_bit_flips(proto, flips):
    data = bytearray(VALID[proto])
    for pos, bit in flips:
        data[pos % len(data)] ^= 1 << bit
    _load_within_contract(bytes(data))


@FUZZ
@given(st.sampled_from(sorted(VALID)), st.integers(0, 10**6))
def test_truncation(proto, n):
    data = VALID[proto]
    _load_within_contract(data[:n % len(data)])


@FUZZ
@given(st.sampled_from(sorted(VALID)), st.integers(0, 10**6), st.integers(0, 10**6),
       st.integers(0, 10**6), st.integers(0, 64))
def test_splices(proto, at, cut, src, length):
    # a piece of the file pasted over or into another place of it: real opcodes out of order
    data = VALID[proto]
    at, cut, src = at % len(data), cut % 16, src % len(data)
    _load_within_contract(data[:at] + data[src:src + length] + data[at + cut:])


def test_contract_is_not_vacuous():
    # damage at a known place gives the documented exceptions
    check_raises(lambda L: L.load(io.BytesIO(b"")), error=EOFError)
    with pytest.raises(pickle.UnpicklingError, match="truncated"):
        pg.load(io.BytesIO(VALID[2][:100]))

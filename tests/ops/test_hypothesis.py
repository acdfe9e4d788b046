"""Property tests (hypothesis): random shapes, permutations, factorizations, slices and index
arrays, each checked against PyTorch forward and backward with the shared check_op helper."""
import math

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import paragrad as pg
from tests.helpers import check_op

# the autouse seeding fixture is function scoped; it only reseeds, so sharing it is harmless
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: (torch if isinstance(a, torch.Tensor) else pg).maximum(a, b),
    "where": lambda a, b: (torch if isinstance(a, torch.Tensor) else pg).where(a > b, a, b * 2),
}


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3),
       op=st.sampled_from(sorted(BINARY)), dtype=st.sampled_from(["float32", "float64"]))
def test_binary_broadcasting(device, shapes, op, dtype):
    a_shape, b_shape = shapes.input_shapes
    # div: inputs bounded away from zero so the gradient stays well conditioned
    out = check_op(BINARY[op], [a_shape, b_shape], dtype=dtype, device=device,
                   low=0.5 if op == "div" else -2.0)
    assert tuple(out.shape) == np.broadcast_shapes(a_shape, b_shape) == shapes.result_shape


@st.composite
def permuted(draw):
    shape = draw(shapes)
    perm = draw(st.permutations(range(len(shape))))
    if draw(st.booleans()) and perm:     # negative dims name the same axes
        perm = [p - len(shape) if draw(st.booleans()) else p for p in perm]
    return shape, tuple(perm)


@SETTINGS
@given(case=permuted())
def test_permute(device, case):
    shape, perm = case
    check_op(lambda x: x.permute(perm), [shape], device=device)


@st.composite
def factorization(draw):
    """A shape and another shape with the same number of elements (one entry maybe -1)."""
    shape = draw(nonempty_shapes)
    n, factors = math.prod(shape), []
    while n > 1:
        f = draw(st.sampled_from([d for d in range(2, n + 1) if n % d == 0]))
        factors.append(f)
        n //= f
    factors += [1] * draw(st.integers(0, 2))
    factors = draw(st.permutations(factors))
    if factors and draw(st.booleans()):
        factors[draw(st.integers(0, len(factors) - 1))] = -1
    return shape, tuple(factors)


@SETTINGS
@given(case=factorization(), transpose=st.booleans())
def test_reshape(device, case, transpose):
    shape, target = case
    # reshape of a non-contiguous (transposed) input copies; of a contiguous one it is a view
    fn = (lambda x: x.mT.reshape(target)) if transpose and len(shape) >= 2 else (lambda x: x.reshape(target))
    check_op(fn, [shape], device=device)


@st.composite
def sliced(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6))
    key = []
    for size in shape:
        bound = st.none() | st.integers(-size - 2, size + 2)
        key.append(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 4))))
    key = key[:draw(st.integers(1, len(key)))]
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return shape, tuple(key)


@SETTINGS
@given(case=sliced())
def test_slicing(device, case):
    shape, key = case
    check_op(lambda x: x[key], [shape], device=device)


@st.composite
def int_index(draw):
    """A shape, an axis and an int64 index array (any rank up to 2, negatives included)."""
    shape = draw(nonempty_shapes)
    axis = draw(st.integers(0, len(shape) - 1))
    size = shape[axis]
    idx = draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4),
                          elements=st.integers(-size, size - 1)))
    return shape, axis, idx


@SETTINGS
@given(case=int_index(), as_list=st.booleans())
def test_int_array_index(device, case, as_list):
    shape, axis, idx = case
    lead = (slice(None),) * axis

    def fn(x):
        index = idx.tolist() if as_list and idx.ndim == 1 and idx.size else \
            (torch if isinstance(x, torch.Tensor) else pg).tensor(idx, device=x.device)
        return x[lead + (index,)]
    check_op(fn, [shape], device=device)


@SETTINGS
@given(case=int_index(), other=st.integers(0, 3), with_slice=st.booleans())
def test_two_index_arrays(device, case, other, with_slice):
    """Two index arrays broadcast together; where they sit decides the result's layout."""
    shape, axis, idx = case
    if len(shape) < 2:
        return
    axis2 = (axis + 1 + other % (len(shape) - 1)) % len(shape)
    idx2 = np.arange(idx.size, dtype=np.int64).reshape(idx.shape) % shape[axis2]
    key = [slice(1, None, 2) if with_slice else slice(None)] * len(shape)
    key[axis], key[axis2] = idx, idx2

    def fn(x):
        lib = torch if isinstance(x, torch.Tensor) else pg
        return x[tuple(lib.tensor(k, device=x.device) if isinstance(k, np.ndarray) else k for k in key)]
    check_op(fn, [shape], device=device)


@SETTINGS
@given(case=int_index(), dim_neg=st.booleans())
def test_index_select_and_gather(device, case, dim_neg):
    shape, axis, idx = case
    dim = axis - len(shape) if dim_neg else axis
    flat = np.mod(idx.reshape(-1), shape[axis])      # index_select and gather take 0 <= i < size
    check_op(lambda x: x.index_select(dim, (torch if isinstance(x, torch.Tensor) else pg).tensor(flat, device=x.device)),
             [shape], device=device)
    gshape = list(shape)
    gshape[axis] = flat.size
    gidx = np.resize(flat, gshape) if flat.size else np.zeros(gshape, np.int64)
    check_op(lambda x: x.gather(dim, (torch if isinstance(x, torch.Tensor) else pg).tensor(gidx, device=x.device)),
             [shape], device=device)


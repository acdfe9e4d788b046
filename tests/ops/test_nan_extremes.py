"""NaN through the extreme-value ops as torch: median() is NaN where a NaN is present (with
dim, the first NaN's index), max()/min() over a whole tensor give a NaN result and share the
gradient among the NaNs (not NaN gradients everywhere), maximum/minimum send the gradient to
both sides where a NaN makes them incomparable, fmax/fmin give a tie's gradient to input."""
import numpy as np
import pytest

import paragrad as pg
from tests.helpers import check_op, lib

NAN = np.nan
INPUTS = {
    "two nans": np.array([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 2.0, 0.5]]),
    "nan first": np.array([[NAN, 2.0, 1.0, 5.0], [1.0, 1.0, NAN, 1.0]]),
    "no nan": np.array([[1.0, 2.0, 2.0, 0.5], [3.0, 3.0, 3.0, -1.0]]),
    "all nan": np.full((2, 3), NAN),
}
OPS = {
    "median()": lambda x: x.median(), "median(1)": lambda x: x.median(1),
    "median(0, keepdim)": lambda x: x.median(0, keepdim=True), "nanmedian()": lambda x: x.nanmedian(),
    "nanmedian(1)": lambda x: x.nanmedian(1), "median fn": lambda x: lib(x).median(x, 1),
    "max()": lambda x: x.max(), "min()": lambda x: x.min(), "max(1)": lambda x: x.max(1),
    "min(0)": lambda x: x.min(0), "amax(1)": lambda x: x.amax(1),
}


@pytest.mark.parametrize("what", INPUTS)
@pytest.mark.parametrize("op", OPS)
def test_extremes_with_nan_match_torch(op, what, device):
    if what == "all nan" and op.startswith("nanmedian("):
        pytest.skip("a row of only NaNs: torch's nanmedian index is arbitrary there")
    check_op(OPS[op], [], dtype="float64", device=device, inputs=[INPUTS[what]])


PAIRS = [(NAN, 1.0), (1.0, NAN), (NAN, NAN), (2.0, 2.0), (1.0, 3.0), (3.0, 1.0)]


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin", "max", "min"])
def test_binary_extremes_gradients_with_nan_and_ties_match_torch(name, device):
    a = np.array([p[0] for p in PAIRS])
    b = np.array([p[1] for p in PAIRS])
    check_op(lambda x, y: getattr(lib(x), name)(x, y), [], dtype="float64", device=device, inputs=[a, b])


def test_max_of_a_tensor_with_nan_sends_no_nan_gradient(device):
    x = pg.tensor([1.0, NAN, 3.0], device=device, requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]

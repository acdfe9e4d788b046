"""Bad data and bad argument lists raise torch's exception types (compared with torch 2.13
through check_raises), with messages naming the problem."""
import re

import numpy as np
import pytest

import paragrad as pg

from .helpers import check_raises

# (data, what paragrad's message must say): each refused by torch.tensor
BAD_DATA = [
    ([1, None], "Could not infer dtype of NoneType"),
    ([None], "NoneType"),
    (None, "NoneType"),
    ([1.5, True, None], "NoneType"),
    ([[1, 2], [3, None]], "NoneType"),
    (object(), "Could not infer dtype of object"),
    ([1, object()], "object"),
    ({"a": 1}, "dict"),
    ({1, 2}, "set"),
    (["a"], "too many dimensions 'str'"),
    (["a", 1], "too many dimensions 'str'"),
    ([["a", "b"], [1, 2]], "too many dimensions 'str'"),
    ("a", "invalid data type 'str'"),
    ([1, "a"], "invalid data type 'str'"),
    ([[1, 2], [3, "a"]], "invalid data type 'str'"),
    ([""], "invalid data type 'str'"),
    ([b"a"], "invalid data type 'bytes'"),
    ([[1], [2, 3]], r"expected sequence of length 1 at dim 1 \(got 2\)"),
    ([[1, 2], [3]], r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1, 2], [3, 4, 5]], r"expected sequence of length 2 at dim 1 \(got 3\)"),
    ([[1], 2], "not a sequence"),
    ([[[1]], [2]], "not a sequence"),
    ([1, [2]], "list"),
    ([[1, 2], [3, [4]]], "list"),
]


# ids without object addresses: parallel workers must collect the same names
@pytest.mark.parametrize("data,match", BAD_DATA,
                         ids=[re.sub(r" at 0x[0-9a-f]+", "", repr(d)) for d, _ in BAD_DATA])
@pytest.mark.parametrize("factory", ["tensor", "as_tensor"])
def test_tensor_of_bad_data_raises_as_torch(data, match, factory):
    check_raises(lambda lib: getattr(lib, factory)(data), match=match)


def test_tensor_with_tensors_in_a_bad_list(device):
    check_raises(lambda lib: lib.tensor([lib.tensor(1.0), None]), match="NoneType")
    t = pg.tensor([1.0], device=device)
    with pytest.raises(ValueError, match=r"expected sequence of length 1 at dim 1 \(got 2\)"):
        pg.tensor([t, [1.0, 2.0]])


def test_ragged_but_empty_data_gives_torchs_empty_tensor():
    # torch sizes nested data by its first elements and stores nothing when that size is empty
    import torch
    for data in ([[], [1]], [[], [1, 2], []]):
        t, p = torch.tensor(data), pg.tensor(data)
        assert tuple(p.shape) == tuple(t.shape) and p.dtype.name == str(t.dtype).split(".")[1]


def test_good_data_still_converts():
    assert pg.tensor([[1, 2], (3, 4)]).tolist() == [[1, 2], [3, 4]]
    assert pg.tensor([range(2), [1, 2]]).tolist() == [[0, 1], [1, 2]]
    assert pg.tensor([np.float32(1.5), 2]).dtype is pg.float32
    assert pg.tensor([]).shape == (0,)


@pytest.mark.parametrize("op", ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
                                "column_stack", "row_stack"])
@pytest.mark.parametrize("empty", [[], ()])
def test_joining_no_tensors_raises_as_torch(op, empty):
    check_raises(lambda lib: getattr(lib, op)(empty), match="non-empty")


LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]


def _size_warnings(fn):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if "target size" in str(w.message)]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("shapes", [((3, 1), (3,)), ((2, 3), (3,)), ((3,), (1,))])
def test_loss_with_broadcast_target_warns_as_torch(loss, shapes, device):
    import torch
    (si, st) = shapes
    t_warn = _size_warnings(lambda: getattr(torch.nn.functional, loss)(torch.zeros(si), torch.zeros(st)))
    assert len(t_warn) == 1 and t_warn[0].category is UserWarning
    x, y = pg.zeros(si, device=device), pg.zeros(st, device=device)
    p_warn = _size_warnings(lambda: getattr(pg.nn.functional, loss)(x, y))
    assert len(p_warn) == 1 and p_warn[0].category is UserWarning
    assert str(p_warn[0].message) == str(t_warn[0].message).replace("torch.Size", "paragrad.Size")
    assert p_warn[0].filename == __file__, "the warning points at the caller of the loss"
    module = {"mse_loss": "MSELoss", "l1_loss": "L1Loss", "smooth_l1_loss": "SmoothL1Loss",
              "huber_loss": "HuberLoss"}[loss]
    assert len(_size_warnings(lambda: getattr(pg.nn, module)()(x, y))) == 1


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_with_same_shapes_does_not_warn(loss, device):
    x = pg.zeros(3, 1, device=device)
    assert _size_warnings(lambda: getattr(pg.nn.functional, loss)(x, x + 1)) == []

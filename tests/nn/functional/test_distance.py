"""F.pdist against PyTorch: values and gradients, edge cases and errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, lib


def F_of(x):
    return lib(x).nn.functional


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
def test_pdist(device, p):
    check_op(lambda x: F_of(x).pdist(x, p), [(5, 3)], device=device)


def test_pdist_edge_cases_and_errors():
    x = pg.randn(4, 3)
    np.testing.assert_allclose(pg.nn.functional.pdist(x, 0).numpy(),
                               torch.nn.functional.pdist(torch.tensor(x.numpy()), 0).numpy())
    assert tuple(pg.nn.functional.pdist(pg.randn(1, 3)).shape) == (0,)
    with pytest.raises(RuntimeError, match="2D"):
        pg.nn.functional.pdist(pg.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="non-negative"):
        pg.nn.functional.pdist(x, -1)

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


@pytest.mark.parametrize("eps", [1e-8, 1e-3])
def test_cosine_similarity_clamps_each_norm(eps, device):
    """Each input is divided by max(its norm, eps) before the sum, as torch's: a vector whose
    norm is under eps gives torch's value (x1 = x2 = [1e-5, 0], eps 1e-3: 1e-4), gradients too."""
    a = np.array([[1e-5, 0.0], [3.0, 4.0], [1.0, -2.0]], np.float32)
    b = np.array([[1e-5, 0.0], [1.0, 1.0], [2.0, 0.5]], np.float32)
    check_op(lambda x, y: lib(x).nn.functional.cosine_similarity(x, y, eps=eps), None, inputs=[a, b], device=device)

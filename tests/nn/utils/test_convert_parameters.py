"""nn.utils.parameters_to_vector / vector_to_parameters against torch's."""
import numpy as np
import pytest
import torch

import paragrad as pg


def test_parameters_to_vector_and_back_match_torch():
    p, t = pg.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    torch.nn.utils.vector_to_parameters(torch.arange(8.0), t.parameters())
    pg.nn.utils.vector_to_parameters(pg.arange(8.0), p.parameters())
    for a, b in zip(p.parameters(), t.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    v = pg.nn.utils.parameters_to_vector(p.parameters())
    assert v.tolist() == torch.nn.utils.parameters_to_vector(t.parameters()).tolist()
    v.sum().backward()                                # differentiable, as torch's
    assert all(a.grad is not None for a in p.parameters())
    with pytest.raises(RuntimeError):
        pg.nn.utils.vector_to_parameters(pg.arange(2.0), p.parameters())
    with pytest.raises(TypeError):
        pg.nn.utils.vector_to_parameters([1.0] * 8, p.parameters())

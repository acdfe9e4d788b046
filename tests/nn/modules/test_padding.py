"""The padding modules against PyTorch's: reprs, values and gradients on inputs of the rank
each expects."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op

CASES = [("ZeroPad1d", (1,), (2, 3, 6)), ("ZeroPad2d", ((1, 2, 0, 3),), (2, 3, 5, 6)),
         ("ZeroPad3d", (1,), (1, 2, 3, 4, 5)), ("ConstantPad1d", (2, 3.5), (3, 6)),
         ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 5, 6)), ("ConstantPad3d", (1, 2.0), (2, 3, 4, 5)),
         ("ReflectionPad1d", ((2, 1),), (2, 3, 6)), ("ReflectionPad2d", (1,), (2, 3, 5, 6)),
         ("ReflectionPad3d", (1,), (1, 2, 3, 4, 5)), ("ReplicationPad1d", ((1, 2),), (2, 3, 6)),
         ("ReplicationPad2d", (2,), (2, 3, 5, 6)), ("ReplicationPad3d", (1,), (1, 2, 3, 4, 5)),
         ("CircularPad1d", (2,), (2, 3, 6)), ("CircularPad2d", ((1, 2, 2, 1),), (2, 3, 5, 6)),
         ("CircularPad3d", (1,), (1, 2, 3, 4, 5))]


@pytest.mark.parametrize("name,args,shape", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_padding_module_matches_torch(name, args, shape, device):
    p, t = getattr(pg.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(p) == repr(t)
    check_op(lambda x: (t if isinstance(x, torch.Tensor) else p)(x), [shape], device=device)

"""Identity, Flatten and Unflatten against torch.nn (check_module)."""
from __future__ import annotations

import pytest

from tests.nn.modules.test_linear import check_module


SHAPE_CASES = [
    (lambda lib: lib.Identity(), (3, 4)),
    (lambda lib: lib.Identity(54, unused="argument"), (2,)),
    (lambda lib: lib.Flatten(), (2, 3, 4, 5)),
    (lambda lib: lib.Flatten(0), (2, 3, 4)),
    (lambda lib: lib.Flatten(1, 2), (2, 3, 4, 5)),
    (lambda lib: lib.Flatten(-3, -2), (2, 3, 4, 5)),
    (lambda lib: lib.Unflatten(1, (2, 3)), (4, 6)),
    (lambda lib: lib.Unflatten(-1, (2, -1)), (4, 3, 6)),
    (lambda lib: lib.Unflatten(0, [2, 2]), (4, 5)),
    (lambda lib: lib.Sequential(lib.Flatten(), lib.Linear(12, 3), lib.Unflatten(1, (3, 1))), (2, 3, 4)),
]


@pytest.mark.parametrize("build,shape", SHAPE_CASES, ids=[f"{i}-{s}" for i, (_, s) in enumerate(SHAPE_CASES)])
def test_shape_layers(build, shape, device):
    check_module(build, shape, device)
